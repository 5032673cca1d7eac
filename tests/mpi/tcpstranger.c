/* A stranger on the network attacking addproc's TCP counter listener (src/sharedfp/tcpctr.c)
 * while an MPI program uses it (tcpattack.sh runs both). It waits for the port file that rank
 * 0 writes under PARIO_TEST_TCPCTR_PORTFILE ("PORT COOKIE"), attacks 127.0.0.1:PORT in MODE,
 * checks what the server did, and writes DONE when it ends (pass or fail) so the MPI program
 * stops. Exit 0 when the server behaved, 1 with a line saying what it did wrong, 2 on usage.
 * Every stranger must get no byte back and be dropped: at once when it sends a wrong hello, by
 * the 5 s hello limit (+ slack) when it stalls. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { NCONN = 4, FLOOD = 200, MAX_STRANGERS = 16, HELLO_MS = 5000, SLACK_MS = 1500 };

static const char *mode;
static int port, fails;
static uint64_t cookie;

#define FAIL(...)                                             \
  do {                                                        \
    fails++;                                                  \
    fprintf(stderr, "tcpstranger %s: FAIL: ", mode);          \
    fprintf(stderr, __VA_ARGS__);                             \
    fprintf(stderr, "\n");                                    \
  } while (0)

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) && errno == EINTR) {
  }
}

/* A connection to the listener, or -1 (refused: errno ECONNREFUSED). Non-blocking connect,
 * then blocking. */
static int dial(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = htons((uint16_t)port)};
  int err = 0;
  socklen_t len = sizeof err;
  if (fd < 0) return -1;
  int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
  if (rc && errno == EINPROGRESS) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    rc = poll(&p, 1, 2000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && !err ? 0 : -1;
    if (rc) errno = err ? err : ETIMEDOUT;
  }
  if (rc) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  fcntl(fd, F_SETFL, 0);
  return fd;
}

static void say(int fd, const void *buf, size_t n) {
  if (send(fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n) { /* a server that dropped us already: fine */
  }
}

/* Waits up to ms for fd to be closed by the server. The time it took, or -1 if still open;
 * *bytes: what the server sent (a stranger must get nothing). */
static long long closed_within(int fd, long long ms, long *bytes) {
  long long t0 = now_ms();
  char b[64];
  for (;;) {
    long long left = t0 + ms - now_ms();
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, left > 0 ? (int)left : 0) == 0) return -1; /* left <= 0: closed already? */
    ssize_t k = recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (k > 0) *bytes += k;
    else if (k == 0 || (errno != EINTR && errno != EAGAIN)) return now_ms() - t0;
  }
}

/* Each of n connections (opened at t0) is closed by the server within limit ms of t0, and got
 * no byte. */
static void expect_dropped(int *fd, int n, long long t0, long long limit, const char *what) {
  for (int i = 0; i < n; i++) {
    long bytes = 0;
    long long at = fd[i] < 0 ? 0 : closed_within(fd[i], t0 + limit - now_ms(), &bytes);
    if (at < 0) FAIL("%s: connection %d still open %lld ms after it connected (the limit: %lld ms)", what, i, now_ms() - t0, limit);
    if (bytes) FAIL("%s: connection %d got %ld bytes from the server", what, i, bytes);
    if (fd[i] >= 0) close(fd[i]);
  }
}

static int dial_all(int *fd, int n) {
  int ok = 0;
  for (int i = 0; i < n; i++) ok += (fd[i] = dial()) >= 0;
  if (ok < n) FAIL("only %d of %d connections made while the listener was open (%s)", ok, n, strerror(errno));
  return ok;
}

/* An impostor on the address rank 0 names first (PARIO_TEST_TCPCTR_DECOY=127.0.0.2, as if
 * that address were also another host's): it learns the cookie from each rank's hello and
 * echoes the hello back, as rank 0 once did. A rank must not take the echo for rank 0's answer:
 * it must close the connection and send nothing more. */
static void impostor(const char *opened) {
  int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, hellos = 0, learned = 0;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 16)) {
    FAIL("cannot listen on 127.0.0.2:%d: %s", port, strerror(errno));
    return;
  }
  for (long long t0 = now_ms(); access(opened, F_OK) && now_ms() - t0 < 30000;) {
    struct pollfd p = {.fd = l, .events = POLLIN};
    int fd = poll(&p, 1, 20) == 1 ? accept(l, NULL, NULL) : -1;
    uint64_t h[2];
    struct timeval tv = {2, 0};
    if (fd < 0) continue;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (recv(fd, h, sizeof h, MSG_WAITALL) == (ssize_t)sizeof h) {
      hellos++;
      learned += h[0] == cookie;
      say(fd, h, sizeof h);
      long bytes = 0;
      long long at = closed_within(fd, SLACK_MS, &bytes);
      if (bytes) FAIL("rank %llu sent %ld bytes after the impostor's echo: it took the impostor for rank 0", (unsigned long long)h[1], bytes);
      else if (at < 0) FAIL("rank %llu kept its connection to the impostor", (unsigned long long)h[1]);
    }
    close(fd);
  }
  close(l);
  printf("tcpstranger impostor: %d hellos, %d with the cookie, none trusted the echo\n", hellos, learned);
  if (!hellos) FAIL("no rank came to the impostor's address first");
}

static void attack(const char *opened) {
  int fd[FLOOD];
  long long t0 = now_ms();
  if (!strcmp(mode, "silent")) { /* connect and say nothing */
    dial_all(fd, NCONN);
    expect_dropped(fd, NCONN, t0, HELLO_MS + SLACK_MS, "silent");
  } else if (!strcmp(mode, "half")) { /* half a hello, then stall */
    dial_all(fd, NCONN);
    uint64_t h[2] = {cookie ^ 0x5a5a, 1};
    for (int i = 0; i < NCONN; i++) say(fd[i], h, 8);
    expect_dropped(fd, NCONN, t0, HELLO_MS + SLACK_MS, "half hello");
  } else if (!strcmp(mode, "slowloris")) { /* one byte a second on each connection */
    dial_all(fd, NCONN);
    uint64_t h[2] = {cookie, 1};
    for (int b = 0; b < 16 && now_ms() - t0 < HELLO_MS + SLACK_MS / 2; b++) {
      for (int i = 0; i < NCONN; i++) say(fd[i], (char *)h + b, 1);
      sleep_ms(1000);
    }
    expect_dropped(fd, NCONN, t0, HELLO_MS + SLACK_MS, "slowloris");
  } else if (!strcmp(mode, "badcookie")) { /* the cookie off by one bit, a valid rank */
    dial_all(fd, NCONN);
    for (int i = 0; i < NCONN; i++) {
      uint64_t h[2] = {cookie ^ (1ULL << (i * 17)), 1};
      say(fd[i], h, sizeof h);
    }
    expect_dropped(fd, NCONN, now_ms(), SLACK_MS, "wrong cookie");
  } else if (!strcmp(mode, "guess")) { /* a guessed cookie, then huge and negative amounts */
    dial_all(fd, NCONN);
    for (int i = 0; i < NCONN; i++) {
      uint64_t m[8] = {0x0123456789abcdefULL * (uint64_t)(i + 1), 1, (uint64_t)INT64_MAX, 1, (uint64_t)INT64_MIN, 2,
                       (uint64_t)-1000000, 3};
      say(fd[i], m, sizeof m);
    }
    expect_dropped(fd, NCONN, now_ms(), SLACK_MS, "guessed cookie");
  } else if (!strcmp(mode, "nohello")) { /* requests without a hello */
    dial_all(fd, NCONN);
    for (int i = 0; i < NCONN; i++) {
      uint64_t m[6] = {1ULL << 40, 1, (uint64_t)-1, 2, 16, 3};
      say(fd[i], m, sizeof m);
    }
    expect_dropped(fd, NCONN, now_ms(), SLACK_MS, "requests without hello");
  } else if (!strcmp(mode, "flood")) { /* many silent connections: the server holds a bounded number */
    int made = 0, open = 0;
    for (int i = 0; i < FLOOD; i++) made += (fd[i] = dial()) >= 0;
    sleep_ms(500);
    for (int i = 0; i < FLOOD; i++) {
      long bytes = 0;
      if (fd[i] >= 0 && closed_within(fd[i], 0, &bytes) < 0) open++;
      if (bytes) FAIL("flood: connection %d got %ld bytes", i, bytes);
    }
    printf("tcpstranger flood: %d connections made, %d still held by the server after 0.5 s\n", made, open);
    if (made < MAX_STRANGERS * 2) FAIL("only %d connections made: not a flood", made);
    if (open > MAX_STRANGERS) FAIL("the server holds %d strangers, more than %d", open, MAX_STRANGERS);
    expect_dropped(fd, FLOOD, t0, HELLO_MS + SLACK_MS + 2000, "flood");
  } else if (!strcmp(mode, "storm")) { /* connections without pause until the open is over */
    int made = 0, next = 0;
    for (int i = 0; i < 64; i++) fd[i] = -1;
    while (access(opened, F_OK) && now_ms() - t0 < 30000) {
      if (fd[next] >= 0) close(fd[next]); /* keeps 64 at most on this side */
      made += (fd[next] = dial()) >= 0;
      next = (next + 1) % 64;
    }
    printf("tcpstranger storm: %d connections in %lld ms\n", made, now_ms() - t0);
    expect_dropped(fd, 64, now_ms(), SLACK_MS, "storm");
  } else if (!strcmp(mode, "impostor")) { /* listens where the ranks look for rank 0 first */
    impostor(opened);
  } else if (!strcmp(mode, "insider")) { /* has the cookie (seen in a hello): rank 1's hello first */
    uint64_t h[2] = {cookie, 1}, ack[2] = {0, 0}, m[2] = {1ULL << 50, 1};
    fd[0] = dial();
    say(fd[0], h, sizeof h);
    if (fd[0] < 0 || recv(fd[0], ack, sizeof ack, MSG_WAITALL) != (ssize_t)sizeof ack || ack[1] != 1)
      FAIL("a hello with the cookie was not answered");
    else if (ack[0] == cookie)
      FAIL("rank 0 answered the hello with the cookie: an impostor could too");
    say(fd[0], m, sizeof m); /* served (it has the cookie); undone when the open falls back */
    fd[1] = dial();          /* a second hello for rank 1: refused */
    if (fd[1] >= 0) {
      say(fd[1], h, sizeof h);
      expect_dropped(fd + 1, 1, now_ms(), SLACK_MS, "duplicate hello for rank 1");
    }
    for (long long t = now_ms(); access(opened, F_OK) && now_ms() - t < 30000;) sleep_ms(10);
    close(fd[0]); /* rank 1's place held until the open is over */
  } else {
    FAIL("unknown mode");
  }
}

/* After the open: every connection is refused (the listener is closed once every rank said
 * its hello); one that is not must still be dropped with no byte back. */
static void late(const char *opened) {
  long long t0 = now_ms();
  int tries = 0, refused = 0;
  while (access(opened, F_OK) && now_ms() - t0 < 30000) sleep_ms(10);
  if (access(opened, F_OK)) {
    FAIL("the MPI program never opened the file (no %s)", opened);
    return;
  }
  for (t0 = now_ms(); now_ms() - t0 < 2000; sleep_ms(50), tries++) {
    int fd = dial();
    if (fd < 0) {
      refused += errno == ECONNREFUSED;
      continue;
    }
    uint64_t junk[4] = {0xdeadbeefULL, 7, (uint64_t)INT64_MAX, 8};
    say(fd, junk, sizeof junk);
    FAIL("a connection after the open was accepted");
    expect_dropped(&fd, 1, now_ms(), SLACK_MS, "after open");
  }
  printf("tcpstranger late: %d of %d connections after the open refused\n", refused, tries);
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--version")) {
    printf("tcpstranger (pario tests) 1\n");
    return 0;
  }
  if (argc != 5 || !strcmp(argv[1], "--help")) {
    fprintf(argc == 2 ? stdout : stderr,
            "usage: tcpstranger MODE PORTFILE OPENED DONE\n"
            "  MODE: silent half slowloris badcookie guess nohello flood storm impostor insider late\n"
            "  waits for PORTFILE (\"PORT COOKIE\", PARIO_TEST_TCPCTR_PORTFILE), attacks 127.0.0.1:PORT\n"
            "  (late: once OPENED exists), checks the server's answers, then creates DONE.\n");
    return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
  }
  mode = argv[1];
  const char *portfile = argv[2], *opened = argv[3], *done = argv[4];
  long long t0 = now_ms();
  FILE *f = NULL;
  while (!(f = fopen(portfile, "r")) && now_ms() - t0 < 30000) sleep_ms(5);
  unsigned long long ck = 0;
  if (!f || fscanf(f, "%d %llx", &port, &ck) != 2 || port <= 0 || port > 65535)
    FAIL("no port in %s after %lld ms", portfile, now_ms() - t0);
  else if (cookie = ck, !strcmp(mode, "late"))
    late(opened);
  else
    attack(opened);
  if (f) fclose(f);
  FILE *d = fopen(done, "w");
  if (d) fclose(d);
  if (!fails) printf("tcpstranger %s: the server behaved\n", mode);
  return fails != 0;
}
