/* pario-server's privileges and its defences before authentication (issue 31): setuid/setgid
 * bits never created or kept, no writing through a hard link, no truncation through a read-only
 * open, escaped log lines, --user and --allow-root, floods of silent connections (from one
 * address, from many) while a legitimate client is served, and 32 clients of one address at
 * once all served. Loopback only (127.0.0.0/8).
 * usage: test_rio_priv PARIO_SERVER              every check
 *        test_rio_priv PARIO_SERVER --flood ARGS  the flood checks only, ARGS for the server (TLS) */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../unit/check.h"
#include "rioclient.h"

static rc_server S;
static uint8_t secret[RIO_MAX_SECRET];
static size_t slen;

static void root_path(char *p, size_t n, const char *name) { snprintf(p, n, "%s/%s", S.root, name); }

/* One legitimate session: authenticate, create, write, read back. 1 if all went well. */
static int served(const char *name) {
  rc_conn c;
  uint64_t h = 0, off = 0, len = 5, done = 0;
  char back[6] = {0};
  int ok = rc_connect(&c, &S, secret, slen) == 0;
  ok = ok && rc_open(&c, name, RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == 0;
  ok = ok && rc_write(&c, h, 1, &off, &len, "hello", &done) == 0 && done == 5;
  ok = ok && rc_read(&c, h, 1, &off, &len, back, &done) == 0 && !memcmp(back, "hello", 5);
  ok = ok && rc_handle_op(&c, RIO_T_CLOSE, h) == 0;
  if (c.fd >= 0) rc_close_conn(&c);
  return ok;
}

static mode_t mode_of(const char *name) {
  char p[700];
  struct stat st;
  root_path(p, sizeof p, name);
  return stat(p, &st) ? (mode_t)-1 : st.st_mode & 07777;
}

/* OPEN never creates setuid, setgid or sticky files; writing clears those bits of a file. */
static void test_modes(void) {
  rc_conn c;
  uint64_t h;
  CHECK(rc_connect(&c, &S, secret, slen) == 0, "modes: connect");
  static const uint32_t perms[] = {04755, 07777, 02770, 01777};
  for (int i = 0; i < 4; i++) {
    char name[32];
    snprintf(name, sizeof name, "mode%o", perms[i]);
    CHECK(rc_open(&c, name, RIO_O_RDWR | RIO_O_CREAT, perms[i], &h, NULL) == 0, "open+creat %o", perms[i]);
    rc_handle_op(&c, RIO_T_CLOSE, h);
    mode_t m = mode_of(name);
    CHECK(m != (mode_t)-1 && (m & 07000) == 0 && (m & 0700) == 0700, "perm %o created as %o", perms[i], m);
  }
  char p[700];
  root_path(p, sizeof p, "suid");
  int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0755);
  CHECK(fd >= 0 && write(fd, "x", 1) == 1 && fchmod(fd, 06755) == 0, "a setuid/setgid file made by the test");
  if (fd >= 0) close(fd);
  CHECK(rc_open(&c, "suid", RIO_O_RDONLY, 0, &h, NULL) == 0, "setuid file opened read-only");
  rc_handle_op(&c, RIO_T_CLOSE, h);
  CHECK(mode_of("suid") == 06755, "a read-only open leaves the bits: %o", mode_of("suid"));
  CHECK(rc_open(&c, "suid", RIO_O_RDWR, 0, &h, NULL) == 0, "setuid file opened read-write");
  rc_handle_op(&c, RIO_T_CLOSE, h);
  CHECK(mode_of("suid") == 0755, "opened for writing: setuid/setgid cleared (%o)", mode_of("suid"));
  rc_close_conn(&c);
}

static long file_size(const char *p) {
  struct stat st;
  return stat(p, &st) ? -1 : (long)st.st_size;
}

/* A hard link in the root to a file outside it: no writing, no truncation; reading is fine.
 * And no truncation through a read-only open. */
static void test_links_and_trunc(void) {
  rc_conn c;
  uint64_t h, size = 0;
  CHECK(rc_connect(&c, &S, secret, slen) == 0, "links: connect");
  char out[700], in[700];
  snprintf(out, sizeof out, "%s/../outside.dat", S.root);
  root_path(in, sizeof in, "linked");
  int fd = open(out, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(fd >= 0 && write(fd, "precious", 8) == 8, "the file outside the root");
  if (fd >= 0) close(fd);
  unlink(in);
  CHECK(link(out, in) == 0, "hard link into the root");
  int st = rc_open(&c, "linked", RIO_O_RDWR | RIO_O_CREAT | RIO_O_TRUNC, 0644, &h, NULL);
  CHECK(st == RIO_EACCES && c.last_type == RIO_T_ERROR && strstr(c.last_msg, "open refused: has 2 hard links"),
        "RDWR|CREAT|TRUNC through a hard link refused: %d, saying why ('%s')", st, c.last_msg);
  CHECK(file_size(out) == 8, "the file outside is unchanged (%ld bytes)", file_size(out));
  CHECK(rc_open(&c, "linked", RIO_O_WRONLY, 0, &h, NULL) == RIO_EACCES, "WRONLY through a hard link refused");
  CHECK(rc_log_has(&S, "\"linked\" refused: has 2 hard links") >= 2, "hard link refusal logged with the count");
  CHECK(rc_open(&c, "linked", RIO_O_RDONLY, 0, &h, &size) == 0 && size == 8, "read-only through the link works");
  rc_handle_op(&c, RIO_T_CLOSE, h);
  unlink(in);

  root_path(in, sizeof in, "keep.dat");
  fd = open(in, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(fd >= 0 && write(fd, "keep me", 7) == 7, "a file to keep");
  if (fd >= 0) close(fd);
  st = rc_open(&c, "keep.dat", RIO_O_RDONLY | RIO_O_TRUNC, 0, &h, NULL);
  CHECK(st == RIO_EINVAL && c.last_type == RIO_T_ERROR &&
            !strcmp(c.last_msg, "open refused: truncation through a read-only open"),
        "read-only + truncate refused: %d, saying why ('%s')", st, c.last_msg);
  CHECK(file_size(in) == 7, "the file is untouched (%ld bytes)", file_size(in));
  CHECK(rc_log_has(&S, "truncation through a read-only open") == 1, "read-only truncation logged");
  /* Truncation where it is allowed still works (done after the checks now). */
  CHECK(rc_open(&c, "keep.dat", RIO_O_RDWR | RIO_O_TRUNC, 0, &h, &size) == 0 && size == 0, "RDWR|TRUNC truncates");
  rc_handle_op(&c, RIO_T_CLOSE, h);
  CHECK(file_size(in) == 0, "truncated");
  rc_close_conn(&c);
}

/* A file name that carries a forged log line is logged escaped, on one line (the refusal of a
 * path that leaves the root logs the name at warn). */
static void test_log_escape(void) {
  static const char forged[] = "2026-01-01T00:00:00.000Z pario-server info: forged";
  char name[128];
  snprintf(name, sizeof name, "../a\n%s\t\\\x7f\xc3\xa9", forged);
  rc_conn c;
  uint64_t h;
  CHECK(rc_connect(&c, &S, secret, slen) == 0, "log: connect");
  CHECK(rc_open(&c, name, RIO_O_RDONLY, 0, &h, NULL) == RIO_EACCES, "the refusal that logs the name");
  rc_close_conn(&c);
  FILE *f = fopen(S.log, "r");
  char line[2048];
  int starts = 0, escaped = 0;
  while (f && fgets(line, sizeof line, f)) {
    starts += !strncmp(line, forged, strlen(forged));
    escaped += strstr(line, "\"../a\\n2026-01-01T00:00:00.000Z pario-server info: forged\\t\\\\\\x7f\\xc3\\xa9\"") != NULL;
  }
  if (f) fclose(f);
  CHECK(starts == 0, "no log line starts with the forged text (%d)", starts);
  CHECK(escaped == 1, "the name is logged escaped (\\n \\t \\\\ \\xNN) on one line (%d)", escaped);
}

/* ---- floods of connections that never authenticate --------------------------------------- */
/* A TCP connection from src (127.x.y.z) to the server, non-blocking; -1 if it cannot be made. */
static int silent_conn(const char *src) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET}, b = {.sin_family = AF_INET, .sin_port = htons((uint16_t)S.port)};
  inet_pton(AF_INET, src, &a.sin_addr);
  inet_pton(AF_INET, S.host, &b.sin_addr);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
      (connect(fd, (struct sockaddr *)&b, sizeof b) && errno != EINPROGRESS)) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

typedef struct flood {
  int n, first, last; /* n connections from 127.0.0.first..last, round robin */
  double until;
  long opened, closed;
} flood;

/* Keep n silent connections open until the deadline: each one the server closes (it reads end
 * of stream, a reset or the busy frame) is reopened on the next round, every 10 ms. */
static void *flood_main(void *arg) {
  flood *fl = arg;
  enum { MAXN = 256 };
  int fds[MAXN];
  char src[32];
  for (int i = 0; i < fl->n; i++) {
    snprintf(src, sizeof src, "127.0.0.%d", fl->first + i % (fl->last - fl->first + 1));
    fds[i] = silent_conn(src), fl->opened++;
  }
  while (rc_now_s() < fl->until) {
    struct pollfd p[MAXN];
    for (int i = 0; i < fl->n; i++) p[i] = (struct pollfd){fds[i], POLLIN, 0};
    poll(p, (nfds_t)fl->n, 10);
    for (int i = 0; i < fl->n; i++) {
      char junk[256];
      if (fds[i] >= 0 && !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (fds[i] >= 0 && recv(fds[i], junk, sizeof junk, MSG_DONTWAIT) > 0) continue; /* not closed yet */
      if (fds[i] >= 0) close(fds[i]), fl->closed++;
      snprintf(src, sizeof src, "127.0.0.%d", fl->first + i % (fl->last - fl->first + 1));
      fds[i] = silent_conn(src), fl->opened++;
    }
    usleep(10000);
  }
  for (int i = 0; i < fl->n; i++)
    if (fds[i] >= 0) close(fds[i]);
  return NULL;
}

/* While the flood runs, a legitimate client (from 127.0.0.1) connects `tries` times. */
static void flood_test(const char *what, int n, int first, int last, double secs, int tries) {
  flood fl = {n, first, last, rc_now_s() + secs, 0, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, flood_main, &fl) == 0, "%s: flood thread", what);
  usleep(300000); /* the flood is in place first */
  int ok = 0;
  double gap = (secs - 0.6) / tries;
  for (int i = 0; i < tries; i++) {
    double t0 = rc_now_s();
    ok += served("flood.dat");
    double left = gap - (rc_now_s() - t0);
    if (left > 0) usleep((useconds_t)(left * 1e6));
  }
  pthread_join(t, NULL);
  printf("%s: %d of %d sessions served; flood opened %ld connections, the server closed %ld\n", what, ok, tries,
         fl.opened, fl.closed);
  CHECK(ok == tries, "%s: the legitimate client was served %d of %d times", what, ok, tries);
  CHECK(fl.closed > 0, "%s: the server closed flood connections", what);
}

/* The refusal for load is one ERROR frame in clear (RIO_EBUSY, id 0) before the close: here
 * for one more connection from an address that has per_peer connections silent for 0.5 s. */
static void test_busy_frame(int per_peer) {
  int held[64], n = 0;
  for (; n < per_peer && n < 64; n++) held[n] = silent_conn("127.0.0.3");
  usleep(700000);
  int fd = silent_conn("127.0.0.3");
  struct pollfd p = {fd, POLLIN, 0};
  uint8_t buf[256];
  ssize_t got = fd >= 0 && poll(&p, 1, 5000) == 1 ? recv(fd, buf, sizeof buf, 0) : -1;
  rio_hdr h;
  int ok = got >= RIO_HDR_SIZE && rio_hdr_decode(buf, &h) == 0 && h.type == (RIO_T_ERROR | RIO_REPLY) && h.id == 0 &&
           (size_t)got == RIO_HDR_SIZE + h.len;
  if (ok) {
    rio_rd r = rio_rd_init(buf + RIO_HDR_SIZE, h.len);
    int st = rio_get_status(&r);
    uint32_t ml = rio_get_u32(&r);
    static const char want[] = "server busy: too many connections from this address";
    ok = st == RIO_EBUSY && ml == strlen(want) && !memcmp(buf + RIO_HDR_SIZE + h.len - ml, want, ml);
  }
  CHECK(ok, "the connection over the per-address limit gets the busy ERROR frame in clear (%zd bytes)", got);
  if (fd >= 0) close(fd);
  for (int i = 0; i < n; i++)
    if (held[i] >= 0) close(held[i]);
  CHECK(rc_log_has(&S, "too many connections from this address") >= 1, "per-address refusal logged");
}

/* The ranks of a job on one node connect at once, from one address: the per-address limit on
 * silent connections must not refuse them. */
enum { BURST = 32 };
static pthread_barrier_t burst_bar;
static void *burst_one(void *arg) {
  rc_conn c;
  pthread_barrier_wait(&burst_bar);
  *(int *)arg = rc_connect(&c, &S, secret, slen) == 0 && rc_ping(&c) == 0;
  if (c.fd >= 0) rc_close_conn(&c);
  return NULL;
}

static void test_burst(void) {
  for (int round = 0; round < 3; round++) {
    pthread_t t[BURST];
    int ok[BURST] = {0}, good = 0;
    pthread_barrier_init(&burst_bar, NULL, BURST);
    for (int i = 0; i < BURST; i++) pthread_create(&t[i], NULL, burst_one, &ok[i]);
    for (int i = 0; i < BURST; i++) pthread_join(t[i], NULL), good += ok[i];
    pthread_barrier_destroy(&burst_bar);
    CHECK(good == BURST, "%d clients from one address at once: %d authenticated", BURST, good);
  }
}

static void test_floods(int tls) {
  /* (a) 64 silent connections from one address (the old server let them take every place). */
  flood_test(tls ? "one address, TLS" : "one address", 64, 2, 2, 6.0, 12);
  test_busy_frame(8);
  if (tls) return;
  /* (c) from many addresses: every place for an unauthenticated connection taken, again and
   * again; the oldest gives way, and a client that authenticates in milliseconds gets through. */
  flood_test("many addresses", 191, 10, 200, 4.0, 6);
}

/* ---- privileges -------------------------------------------------------------------------- */
/* The four ids of a status line ("Uid:" or "Gid:") all equal to want, in /proc/PID/task/TID/status
 * of every thread (the workers started before the switch too); groups: the Groups line. The
 * number of threads checked, or 0 if one differs. */
static int ids_are(pid_t pid, const char *key, unsigned want, char *groups, size_t gn) {
  char p[300], line[512];
  snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
  DIR *d = opendir(p);
  int n = 0, bad = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "/proc/%d/task/%.32s/status", (int)pid, e->d_name);
    FILE *f = fopen(p, "r");
    while (f && fgets(line, sizeof line, f)) {
      unsigned a, b, c, x;
      if (!strncmp(line, key, strlen(key)) && sscanf(line + strlen(key), "%u %u %u %u", &a, &b, &c, &x) == 4)
        n++, bad += !(a == want && b == want && c == want && x == want);
      if (!strncmp(line, "Groups:", 7)) snprintf(groups, gn, "%s", line + 7);
    }
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return bad ? 0 : n;
}

static void test_user(const char *bin) {
  struct passwd *pw = getpwnam("nobody");
  if (geteuid() != 0 || !pw) {
    printf("privileges: skipped (not root or no user nobody)\n");
    return;
  }
  uid_t uid = pw->pw_uid;
  gid_t gid = pw->pw_gid;
  char dir[600];
  snprintf(dir, sizeof dir, "%s", S.root);
  *strrchr(dir, '/') = '\0';
  CHECK(chmod(dir, 0711) == 0 && chown(S.root, uid, gid) == 0, "the root given to nobody");
  const char *args[] = {"--user", "nobody", "--auth-timeout", "1", NULL};
  if (rc_server_start(&S, bin, args) != 0) {
    CHECK(0, "start with --user nobody");
    return;
  }
  char groups[512] = "?";
  int nt = ids_are(S.pid, "Uid:", uid, groups, sizeof groups);
  CHECK(nt > 4, "uid %u in all four fields of every thread (%d threads)", (unsigned)uid, nt);
  CHECK(ids_are(S.pid, "Gid:", gid, groups, sizeof groups) > 4, "gid %u in all four fields of every thread",
        (unsigned)gid);
  /* initgroups: nobody's own groups, never root's (0) */
  char *e;
  int only_own = 1;
  for (char *g = groups; *g && *g != '\n'; g = e) {
    long v = strtol(g, &e, 10);
    if (e == g) break;
    if (v == 0) only_own = 0;
  }
  CHECK(only_own, "supplementary groups without root's: %s", groups);
  CHECK(rc_log_has(&S, "running as nobody (uid") == 1, "the switch logged");
  CHECK(served("nobody.dat"), "served as nobody");
  char p[700];
  struct stat st;
  root_path(p, sizeof p, "nobody.dat");
  CHECK(stat(p, &st) == 0 && st.st_uid == uid && st.st_gid == gid, "a created file belongs to nobody");
  /* --auth-timeout: a silent connection is closed within it (1 s here). */
  int fd = silent_conn("127.0.0.4");
  struct pollfd pf = {fd, POLLIN, 0};
  double t0 = rc_now_s();
  char b[8];
  int closed = fd >= 0 && poll(&pf, 1, 4000) == 1 && recv(fd, b, sizeof b, 0) <= 0;
  CHECK(closed && rc_now_s() - t0 < 2.5, "a silent connection closed after --auth-timeout 1 (%.1f s)", rc_now_s() - t0);
  if (fd >= 0) close(fd);
  CHECK(rc_server_stop(&S) == 0, "clean stop");
  CHECK(chown(S.root, 0, 0) == 0, "the root given back");
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s PARIO_SERVER [--flood ARGS...]\n", argv[0]), 2;
  int flood_only = argc > 2 && !strcmp(argv[2], "--flood");
  signal(SIGPIPE, SIG_IGN); /* a TLS write to a connection the server refused */
  const char *none[] = {NULL};
  if (rc_workdir(&S, "priv") || rc_server_start(&S, argv[1], flood_only ? (const char *const *)argv + 3 : none))
    return fprintf(stderr, "cannot start\n"), 1;
  rc_read_secret(&S, secret, &slen);
  CHECK(served("start.dat"), "served at start");
  if (flood_only) {
    test_floods(1);
  } else {
    if (geteuid() == 0)
      CHECK(rc_log_has(&S, "running as root (--allow-root)") == 1, "--allow-root: a warning in the log");
    test_modes();
    test_links_and_trunc();
    test_log_escape();
    test_burst();
    test_floods(0);
  }
  CHECK(rc_server_stop(&S) == 0, "clean stop");
  if (!flood_only) test_user(argv[1]);
  printf("%d checks, %d failures (log: %s)\n", checks, failures, failures ? S.log : "removed");
  if (!failures) { /* the work directory goes; on a failure it stays for its log */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "%s", S.root);
    *strrchr(cmd, '/') = '\0';
    if (strstr(cmd, "/pario-rio-priv-")) {
      char rm[800];
      snprintf(rm, sizeof rm, "rm -rf '%s'", cmd);
      CHECK(system(rm) == 0, "work directory removed");
    }
  }
  return failures != 0;
}
