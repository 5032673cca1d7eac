/* pario-server: serves the files beneath --root to pario's x-rio driver over TCP (protocol:
 * src/rio/PROTOCOL.md). The main thread parses the options, listens, prints HOST:PORT on
 * stdout once it accepts, and runs the accept loop; each connection has a reader thread and
 * the requests run on a worker pool. Started as root it sets up (listen, secret, certificate,
 * root, trace) and then becomes --user for good, or stays root only with --allow-root. The
 * accept loop bounds the connections still authenticating, per peer address and in all, the
 * oldest giving way to a new one. SIGINT/SIGTERM end it cleanly. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

#ifndef PARIO_VERSION
#define PARIO_VERSION "unknown"
#endif

static srv_state state;
srv_state *srv = &state;

static void usage(FILE *f) {
  fprintf(f,
          "usage: pario-server --root DIR --listen HOST:PORT --secret-file F [options]\n"
          "       pario-server --forward-to HOST:PORT --listen HOST:PORT --secret-file F [options]\n"
          "Serves the files beneath DIR to pario's remote I/O driver (x-rio://HOST:PORT/path).\n"
          "  --root DIR            directory served; no path resolves outside it\n"
          "  --listen HOST:PORT    address to listen on (port 0: a free port); HOST:PORT is printed\n"
          "                        as the first line on stdout once connections are accepted\n"
          "  --secret-file F       shared secret (>= %d bytes) for HMAC-SHA-256 authentication: the\n"
          "                        credential \"default\", read-write on the whole root\n"
          "  --credentials FILE    named credentials, one a line: NAME rw|ro SECRETFILE [SUBDIR]\n"
          "                        (with or instead of --secret-file; FILE and each SECRETFILE mode 600)\n"
          "  --threads N           worker threads (default 4, 1..256)\n"
          "  --max-request BYTES   largest request body (default 64M, 1M..1G; K/M/G suffixes)\n"
          "  --idle-timeout S      close a connection idle for S seconds with no open file (default 300;\n"
          "                        0: never)\n"
          "  --frame-timeout S     a request that has begun must arrive whole, WRITE data included,\n"
          "                        within S seconds (default 30)\n"
          "  --send-timeout S      drop a client that leaves its replies unread for S seconds (default 60)\n"
          "  --max-handles N       open handles per connection (default 256)\n"
          "  --max-inflight N      requests in flight per connection (default 64)\n"
          "  --max-conns N         simultaneous connections (default 256)\n"
          "  --auth-timeout S      TLS handshake, HELLO and AUTH must end within S seconds of the\n"
          "                        connection (default 5, 1..60)\n"
          "  --max-unauth-per-peer N  connections from one address silent for 0.5 s or more while\n"
          "                        they should authenticate (default 8)\n"
          "  --user NAME           started as root: set up, then run as NAME (its uid, gid, groups)\n"
          "  --allow-root          started as root: stay root (not advised; logged as a warning)\n"
          "  --forward-to H:P      run as a forwarder to the server at H:P, merging the READ/WRITE\n"
          "                        requests of one collective operation (no --root); it logs in there\n"
          "                        with protocol version 2 (MAC records) as credential default and\n"
          "                        --secret-file's secret, unless told otherwise:\n"
          "  --forward-user NAME   forwarder: log in upstream as credential NAME (its --credentials)\n"
          "  --forward-secret-file F  forwarder: that credential's secret (default: --secret-file's)\n"
          "  --forward-tls-ca F    forwarder: TLS upstream (a server with --tls-cert), trusting the\n"
          "                        certificates in F (PEM); without it: MAC records on plain TCP\n"
          "  --merge-wait MS       forwarder: how long the parts of a collective operation wait for\n"
          "                        the others before they go on one by one (default 50, 0..60000)\n"
          "  --tls-cert F, --tls-key F  TLS (1.2+) with this certificate chain and key (PEM)\n"
          "  --insecure            serve plain TCP without integrity (version 1 clients) to peers\n"
          "                        beyond loopback too (default: loopback only)\n"
          "  --emulate SPEC        emulated link and storage: net_latency=100ms,net_bw=20MB/s,\n"
          "                        disk_bw=50MB/s,cache=none|os (docs/remote.md)\n"
          "  --trace DIR           write DIR/server-<port>-<pid>.jsonl (pario trace format): network and\n"
          "                        storage spans, cpu_pct and dirty_kb counters\n"
          "  --log-level L         error, warn, info (default) or debug; the log goes to stderr\n"
          "  --help, --version\n",
          RIO_MIN_SECRET);
}

static void die_arg(const char *opt, const char *msg, const char *val) {
  fprintf(stderr, "pario-server: %s: %s%s%s%s\n", opt, msg, val ? " (got '" : "", val ? val : "", val ? "')" : "");
  exit(2);
}

static long long parse_int(const char *opt, const char *v, long long lo, long long hi) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi) {
    char msg[96];
    snprintf(msg, sizeof msg, "expected an integer in %lld..%lld", lo, hi);
    die_arg(opt, msg, v);
  }
  return x;
}

static uint64_t parse_size(const char *opt, const char *v) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  uint64_t mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1024, end++;
  else if (*end == 'M' || *end == 'm') mult = 1024 * 1024, end++;
  else if (*end == 'G' || *end == 'g') mult = 1024ull * 1024 * 1024, end++;
  if (errno || end == v || *end || v[0] == '-' || x > (1ull << 30) / mult || x * mult < RIO_MIN_MAX_REQUEST)
    die_arg(opt, "expected a size in 1M..1G (bytes, or with a K/M/G suffix)", v);
  return x * mult;
}

static uid_t run_uid;
static gid_t run_gid;

/* Root needs --user or --allow-root; --user NAME must exist, and only root can become another
 * user. Exits with a one-line error. */
static void check_user(const srv_config *cfg) {
  uid_t me = geteuid();
  if (me == 0 && !cfg->user && !cfg->allow_root) {
    fprintf(stderr, "pario-server: refusing to run as root: give --user NAME (the server drops to that user once "
                    "set up) or --allow-root\n");
    exit(2);
  }
  if (!cfg->user) return;
  struct passwd *pw = getpwnam(cfg->user);
  if (!pw) die_arg("--user", "no such user", cfg->user);
  if (pw->pw_uid == 0 && me == 0) die_arg("--user", "names root; give --allow-root to run as root", cfg->user);
  if (me != 0 && pw->pw_uid != me) {
    fprintf(stderr, "pario-server: --user %s: only root can switch users (running as uid %u)\n", cfg->user,
            (unsigned)me);
    exit(2);
  }
  run_uid = pw->pw_uid, run_gid = pw->pw_gid;
}

/* Once everything that needs root is open: become --user with no way back, or warn. */
static void drop_privileges(const srv_config *cfg) {
  if (geteuid() != 0) {
    if (cfg->user) srv_log(LOG_INFO, "running as %s (uid %u, gid %u)", cfg->user, (unsigned)run_uid, (unsigned)run_gid);
    return;
  }
  if (!cfg->user) {
    srv_log(LOG_WARN, "running as root (--allow-root): a flaw in the server would hand the host to a client; "
            "prefer --user NAME");
    return;
  }
  if (initgroups(cfg->user, run_gid) || setgid(run_gid) || setuid(run_uid)) {
    fprintf(stderr, "pario-server: --user %s: cannot switch to uid %u, gid %u: %s\n", cfg->user, (unsigned)run_uid,
            (unsigned)run_gid, strerror(errno));
    exit(1);
  }
  if (setuid(0) == 0 || setgid(0) == 0 || geteuid() != run_uid || getegid() != run_gid) {
    fprintf(stderr, "pario-server: --user %s: root privileges could be regained after the switch; stopping\n",
            cfg->user);
    exit(1);
  }
  srv_log(LOG_INFO, "running as %s (uid %u, gid %u)", cfg->user, (unsigned)run_uid, (unsigned)run_gid);
}

static void parse_args(int argc, char **argv, srv_config *cfg) {
  enum { O_ROOT = 256, O_LISTEN, O_SECRET, O_THREADS, O_MAXREQ, O_IDLE, O_LOG, O_CONNS, O_EMU, O_FWD, O_CERT, O_KEY,
         O_TRACE, O_MERGE, O_AUTHTO, O_PEER, O_USER, O_ROOTOK, O_FRAME, O_SEND, O_HANDLES, O_INFLIGHT, O_INSECURE,
         O_CREDS, O_FWDUSER, O_FWDSECRET, O_FWDCA, O_HELP, O_VERSION };
  static const struct option opts[] = {
      {"root", 1, 0, O_ROOT},          {"listen", 1, 0, O_LISTEN},   {"secret-file", 1, 0, O_SECRET},
      {"threads", 1, 0, O_THREADS},    {"max-request", 1, 0, O_MAXREQ}, {"idle-timeout", 1, 0, O_IDLE},
      {"log-level", 1, 0, O_LOG},      {"max-conns", 1, 0, O_CONNS}, {"emulate", 1, 0, O_EMU},
      {"forward-to", 1, 0, O_FWD},     {"tls-cert", 1, 0, O_CERT},   {"tls-key", 1, 0, O_KEY},
      {"trace", 1, 0, O_TRACE},        {"merge-wait", 1, 0, O_MERGE},  {"auth-timeout", 1, 0, O_AUTHTO},
      {"max-unauth-per-peer", 1, 0, O_PEER}, {"user", 1, 0, O_USER},   {"allow-root", 0, 0, O_ROOTOK},
      {"frame-timeout", 1, 0, O_FRAME}, {"send-timeout", 1, 0, O_SEND}, {"max-handles", 1, 0, O_HANDLES},
      {"max-inflight", 1, 0, O_INFLIGHT},
      {"insecure", 0, 0, O_INSECURE},  {"credentials", 1, 0, O_CREDS},
      {"forward-user", 1, 0, O_FWDUSER}, {"forward-secret-file", 1, 0, O_FWDSECRET}, {"forward-tls-ca", 1, 0, O_FWDCA},
          {"help", 0, 0, O_HELP},          {"version", 0, 0, O_VERSION}, {0, 0, 0, 0}};
  cfg->threads = 4;
  cfg->max_request = RIO_DEFAULT_MAX_REQUEST;
  cfg->max_conns = 256;
  cfg->merge_wait_ms = 50;
  cfg->auth_timeout = 5;
  cfg->max_unauth_peer = 8;
  cfg->idle_timeout = 300;
  cfg->frame_timeout = 30;
  cfg->send_timeout = 60;
  cfg->max_handles = 256;
  cfg->max_inflight = 64;
  opterr = 0;
  for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
    char why[160];
    switch (o) {
    case O_ROOT: cfg->root = optarg; break;
    case O_LISTEN: cfg->listen = optarg; break;
    case O_FWD: cfg->forward_to = optarg; break;
    case O_CERT: cfg->tls_cert = optarg; break;
    case O_KEY: cfg->tls_key = optarg; break;
    case O_TRACE: cfg->trace_dir = optarg; break;
    case O_INSECURE: cfg->insecure = 1; break;
    case O_SECRET: cfg->secret_file = optarg; break;
    case O_CREDS: cfg->credentials = optarg; break;
    case O_FWDUSER: cfg->forward_user = optarg; break;
    case O_FWDSECRET: cfg->forward_secret_file = optarg; break;
    case O_FWDCA: cfg->forward_tls_ca = optarg; break;
    case O_THREADS: cfg->threads = (int)parse_int("--threads", optarg, 1, 256); break;
    case O_MAXREQ: cfg->max_request = parse_size("--max-request", optarg); break;
    case O_IDLE: cfg->idle_timeout = (int)parse_int("--idle-timeout", optarg, 0, 86400 * 365); break;
    case O_FRAME: cfg->frame_timeout = (int)parse_int("--frame-timeout", optarg, 1, 86400); break;
    case O_SEND: cfg->send_timeout = (int)parse_int("--send-timeout", optarg, 1, 86400); break;
    case O_HANDLES: cfg->max_handles = (int)parse_int("--max-handles", optarg, 1, 65536); break;
    case O_INFLIGHT: cfg->max_inflight = (int)parse_int("--max-inflight", optarg, 1, 4096); break;
    case O_MERGE: cfg->merge_wait_ms = (int)parse_int("--merge-wait", optarg, 0, 60000); break;
    case O_CONNS: cfg->max_conns = (int)parse_int("--max-conns", optarg, 1, 65536); break;
    case O_AUTHTO: cfg->auth_timeout = (int)parse_int("--auth-timeout", optarg, 1, 60); break;
    case O_PEER: cfg->max_unauth_peer = (int)parse_int("--max-unauth-per-peer", optarg, 1, 65536); break;
    case O_USER: cfg->user = optarg; break;
    case O_ROOTOK: cfg->allow_root = 1; break;
    case O_LOG:
      if ((srv_log_level = srv_log_parse(optarg)) < 0) die_arg("--log-level", "expected error, warn, info or debug", optarg);
      break;
    case O_EMU:
      if (srv_emulate_parse(optarg, &cfg->emu, why, sizeof why)) {
        fprintf(stderr, "pario-server: %s\n", why);
        exit(2);
      }
      break;
    case O_HELP: usage(stdout); exit(0);
    case O_VERSION: printf("pario-server %s (remote I/O protocol %d)\n", PARIO_VERSION, RIO_VERSION); exit(0);
    default:
      fprintf(stderr, "pario-server: %s '%s' (see --help)\n", o == ':' ? "missing value for" : "unknown option",
              argv[optind - 1]);
      exit(2);
    }
  }
  if (optind < argc) die_arg(argv[optind], "unexpected argument", NULL);
  if (!cfg->root && !cfg->forward_to) die_arg("--root", "required (or --forward-to)", NULL);
  if (cfg->root && cfg->forward_to) die_arg("--root", "a forwarder (--forward-to) serves no files of its own", NULL);
  if (!cfg->listen) die_arg("--listen", "required", NULL);
  if (!cfg->secret_file && (cfg->forward_to || !cfg->credentials))
    die_arg("--secret-file", cfg->forward_to ? "required" : "required (or --credentials)", NULL);
  if (cfg->credentials && cfg->forward_to) die_arg("--credentials", "a forwarder uses --secret-file only", NULL);
  if ((cfg->forward_user || cfg->forward_secret_file || cfg->forward_tls_ca) && !cfg->forward_to)
    die_arg(cfg->forward_user ? "--forward-user" : cfg->forward_secret_file ? "--forward-secret-file" : "--forward-tls-ca",
            "only with --forward-to", NULL);
  if (cfg->forward_user && (!*cfg->forward_user || strlen(cfg->forward_user) > RIO_MAX_CRED_NAME))
    die_arg("--forward-user", "expected a credential name of 1 to 64 characters", cfg->forward_user);
  if (!cfg->tls_cert != !cfg->tls_key) die_arg(cfg->tls_cert ? "--tls-key" : "--tls-cert", "required with the other", NULL);
  if (cfg->tls_cert && (cfg->emu.net_bw || cfg->emu.net_latency_ns))
    die_arg("--emulate", "the emulated link (net_latency, net_bw) does not run under TLS", NULL);
  uint64_t ms = cfg->max_request / RIO_SEG;
  cfg->max_segments = ms < RIO_DEFAULT_MAX_SEGMENTS ? (uint32_t)ms : RIO_DEFAULT_MAX_SEGMENTS;
  /* 64 reader threads at most wait for an authentication; the oldest gives way to a new
   * connection, so a legitimate client, done in milliseconds, gets through a flood. */
  cfg->max_unauth = cfg->max_conns < 64 ? cfg->max_conns : 64;
  check_user(cfg);
}

/* Split HOST:PORT ([v6]:PORT allowed) and listen. The socket, or exit with a one-line error. */
static int listen_on(const char *spec, char *shown, size_t shownlen) {
  char host[256], port[16];
  const char *colon = strrchr(spec, ':');
  size_t hl = colon ? (size_t)(colon - spec) : 0;
  if (!colon || hl == 0 || hl >= sizeof host || strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof port)
    die_arg("--listen", "expected HOST:PORT", spec);
  memcpy(host, spec, hl);
  host[hl] = '\0';
  if (host[0] == '[' && host[hl - 1] == ']') memmove(host, host + 1, hl - 2), host[hl - 2] = '\0';
  strcpy(port, colon + 1);
  parse_int("--listen port", port, 0, 65535);
  struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM}, *ai;
  int e = getaddrinfo(host, port, &hints, &ai);
  if (e) die_arg("--listen", gai_strerror(e), spec);
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) || bind(fd, ai->ai_addr, ai->ai_addrlen) ||
      listen(fd, 128)) {
    fprintf(stderr, "pario-server: --listen %s: %s\n", spec, strerror(errno));
    exit(1);
  }
  freeaddrinfo(ai);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char h[NI_MAXHOST], p[NI_MAXSERV];
  getsockname(fd, (struct sockaddr *)&ss, &sl);
  getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, p, sizeof p, NI_NUMERICHOST | NI_NUMERICSERV);
  snprintf(shown, shownlen, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", h, p);
  return fd;
}

/* "HOST:PORT" for the log, and HOST alone for the per-address limit. */
static void peer_name(const struct sockaddr_storage *ss, socklen_t sl, char *out, size_t n, char *addr, size_t an) {
  char h[48], p[8];
  if (getnameinfo((const struct sockaddr *)ss, sl, h, sizeof h, p, sizeof p, NI_NUMERICHOST | NI_NUMERICSERV))
    snprintf(out, n, "?"), snprintf(addr, an, "?");
  else
    snprintf(out, n, "%s:%s", h, p), snprintf(addr, an, "%s", h);
}

static void *conn_main(void *arg) {
  srv_conn *c = arg;
  if (!srv->tls_ctx || srv_tls_accept(c) == 0) {
    srv_conn_serve(c);
  } else {
    srv_unauth_done(c);
  }
  /* Off the list first: shut_down() calls c->io->shutdown on listed connections only. */
  pthread_mutex_lock(&srv->mu);
  if (c->prev) c->prev->next = c->next;
  else srv->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  pthread_mutex_unlock(&srv->mu);
  srv_emulate_unwrap(c);
  srv_tls_free(c);
  pthread_mutex_lock(&srv->mu);
  srv->nconns--;
  pthread_cond_broadcast(&srv->cv);
  pthread_mutex_unlock(&srv->mu);
  close(c->fd);
  srv_conn_free(c);
  return NULL;
}

/* A refused connection hears why, best effort: one ERROR frame in clear (even on a TLS
 * listener: no handshake is spent on it), written without waiting; then it is closed. */
static void refuse(int fd, const char *msg) {
  uint8_t f[RIO_HDR_SIZE + RIO_STATUS + 4 + 64];
  size_t ml = strlen(msg) < 64 ? strlen(msg) : 64;
  rio_hdr h = {RIO_VERSION, RIO_T_ERROR | RIO_REPLY, 0, (uint32_t)(RIO_STATUS + 4 + ml), 0};
  rio_hdr_encode(f, &h);
  rio_wr w = rio_wr_init(f + RIO_HDR_SIZE, sizeof f - RIO_HDR_SIZE);
  rio_put_status(&w, RIO_EBUSY);
  rio_put_u32(&w, (uint32_t)ml);
  rio_put_bytes(&w, msg, ml);
  (void)!send(fd, f, RIO_HDR_SIZE + w.n, MSG_DONTWAIT | MSG_NOSIGNAL);
  char junk[512]; /* unread input would turn the close into a reset that may beat the frame */
  (void)!recv(fd, junk, sizeof junk, MSG_DONTWAIT);
  close(fd);
}

/* A flood must not flood the log too: one line per second, with the count left out. */
static void log_refused(const char *peer, const char *why, int nconns, int nunauth) {
  static uint64_t last_log, quiet;
  uint64_t now = srv_now_ns();
  if (now - last_log >= 1000000000ull) {
    srv_log(LOG_WARN, "connection from %s refused: %s (%d, %d authenticating; %llu more refused since the last "
            "line)", peer, why, nconns, nunauth, (unsigned long long)quiet);
    last_log = now, quiet = 0;
  } else {
    quiet++;
  }
}

/* Under srv->mu: whether c has spoken (its HELLO or TLS hello may wait unread in the socket). */
static int has_spoken(srv_conn *c) {
  char b;
  if (__atomic_load_n(&c->spoke, __ATOMIC_ACQUIRE)) return 1;
  if (recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 1) return 0;
  __atomic_store_n(&c->spoke, 1, __ATOMIC_RELEASE);
  return 1;
}

/* Under srv->mu: shut down the oldest connection still authenticating that has not spoken yet,
 * else the oldest one; its reader sees the end at once and leaves. */
static void evict_one(void) {
  srv_conn *victim = NULL;
  for (;;) {
    srv_conn *oldest = NULL, *silent = NULL;
    for (srv_conn *c = srv->conns; c; c = c->next) { /* newest first */
      if (c->unauth_done) continue;
      oldest = c;
      if (!__atomic_load_n(&c->spoke, __ATOMIC_ACQUIRE)) silent = c;
    }
    victim = silent && !has_spoken(silent) ? silent : silent ? NULL : oldest;
    if (victim || !oldest) break; /* else silent had spoken after all: look again */
  }
  if (!victim) return;
  srv_log(LOG_DEBUG, "conn %llu (%s): still authenticating; closed to make room", (unsigned long long)victim->serial,
          victim->peer);
  __atomic_store_n(&victim->unauth_done, 1, __ATOMIC_RELEASE);
  victim->evicted = 1, srv->nunauth--;
  victim->io->shutdown(victim);
}

/* A connection silent this long counts against --max-unauth-per-peer: the ranks of a large job
 * on one node connect at once and may each take a few milliseconds to send their HELLO. */
#define SILENT_NS 500000000ull

/* Under srv->mu: admit a connection from addr? NULL, or why not. From one address, at most
 * max_unauth_peer connections may be silent (not a byte sent for SILENT_NS): a flood of
 * silent or half-open connections is cut there, while the ranks of a large job on one node,
 * which send their HELLO at once, are not. Where all the places for connections still authenticating are
 * taken, one of them gives way (evict_one): a flood from many addresses then only cycles its
 * own connections, and a client that sends its HELLO at once keeps its place while it
 * authenticates. Connections so closed but not yet gone do not count against --max-conns, up
 * to max_unauth of them. */
static const char *admit(const char *addr, uint64_t now) {
  int going = 0, same = 0;
  uint64_t since = (uint64_t)srv->cfg.auth_timeout * 1000000000ull - SILENT_NS; /* auth_deadline - accept - SILENT_NS */
  for (srv_conn *c = srv->conns; c; c = c->next) {
    going += c->evicted;
    same += !c->unauth_done && c->auth_deadline - since <= now && !strcmp(c->addr, addr) && !has_spoken(c);
  }
  if (srv->nconns - going >= srv->cfg.max_conns || srv->nconns >= srv->cfg.max_conns + srv->cfg.max_unauth)
    return "too many connections";
  if (same >= srv->cfg.max_unauth_peer) return "too many connections from this address";
  if (srv->nunauth >= srv->cfg.max_unauth) evict_one();
  return NULL;
}

static void accept_one(int lfd) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EMFILE || errno == ENFILE) srv_log_fd_exhausted("accept", errno);
    else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) srv_log(LOG_WARN, "accept: %s", strerror(errno));
    if (errno == EMFILE || errno == ENFILE) usleep(10000);
    return;
  }
  uint64_t t_accept = srv_now_ns();
  char peer[64], addr[48];
  peer_name(&ss, sl, peer, sizeof peer, addr, sizeof addr);
  pthread_mutex_lock(&srv->mu);
  const char *why = admit(addr, t_accept);
  int nconns = srv->nconns, nunauth = srv->nunauth;
  pthread_mutex_unlock(&srv->mu);
  if (why) {
    log_refused(peer, why, nconns, nunauth);
    char msg[64];
    snprintf(msg, sizeof msg, "server busy: %s", why);
    refuse(fd, msg);
    return;
  }
  int one = 1;
  struct timeval tv = {60, 0}; /* a client that stops reading its replies is dropped */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  srv_conn *c = srv_conn_new(fd, &srv_socket_io, peer);
  if (c) {
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    c->auth_deadline = t_accept + (uint64_t)srv->cfg.auth_timeout * 1000000000ull;
  }
  if (c && srv_emulate_wrap(c)) {
    srv_conn_free(c);
    c = NULL;
  }
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&at, 256 * 1024);
  pthread_t t;
  pthread_mutex_lock(&srv->mu);
  if (c) {
    c->serial = ++srv->next_serial;
    c->next = srv->conns;
    if (srv->conns) srv->conns->prev = c;
    srv->conns = c;
    srv->nconns++, srv->nunauth++;
  }
  if (!c || pthread_create(&t, &at, conn_main, c) != 0) {
    srv_log(LOG_ERROR, "connection from %s dropped: no memory or thread", peer);
    if (c) {
      srv->conns = c->next;
      if (c->next) c->next->prev = NULL;
      srv->nconns--, srv->nunauth--;
      srv_conn_free(c);
    }
    close(fd);
  }
  pthread_mutex_unlock(&srv->mu);
  pthread_attr_destroy(&at);
}

static void setup(srv_config *cfg) {
  srv->rootfd = cfg->root ? open(cfg->root, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
  if (cfg->root && srv->rootfd < 0) {
    fprintf(stderr, "pario-server: --root %s: %s\n", cfg->root, strerror(errno));
    exit(1);
  }
  char why[700];
  int e = cfg->secret_file ? rio_read_secret(cfg->secret_file, srv->secret, &srv->secret_len, why, sizeof why) : 0;
  if (e) {
    fprintf(stderr, "pario-server: --secret-file %s: %s (%s)\n", cfg->secret_file, why, strerror(e));
    exit(1);
  }
  if ((cfg->secret_file && srv_cred_add("default", 0, cfg->secret_file, NULL, 0, why, sizeof why)) ||
      (cfg->credentials && srv_cred_load(cfg->credentials, why, sizeof why))) {
    fprintf(stderr, "pario-server: --credentials: %s\n", why);
    exit(1);
  }
  if (cfg->tls_cert && srv_tls_init(cfg->tls_cert, cfg->tls_key, why, sizeof why)) {
    fprintf(stderr, "pario-server: %s\n", why);
    exit(1);
  }
  uint8_t id[8];
  rio_random(id, sizeof id);
  srv->server_id = rio_load_u64(id);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  pthread_mutex_init(&srv->mu, NULL);
  pthread_cond_init(&srv->cv, NULL);
  /* Tests exercise the fallback confinement on kernels that have openat2. */
  const char *no2 = getenv("PARIO_SERVER_NO_OPENAT2");
  if (no2 && *no2 == '1') srv_have_openat2 = 0;
}

/* Stop accepting, end every connection (their readers see the shutdown), wait up to 10 s. */
static void shut_down(int lfd) {
  __atomic_store_n(&srv->stopping, 1, __ATOMIC_RELEASE);
  close(lfd);
  pthread_mutex_lock(&srv->mu);
  for (srv_conn *c = srv->conns; c; c = c->next) c->io->shutdown(c);
  uint64_t end = srv_now_ns() + 10000000000ull;
  while (srv->nconns > 0 && srv_now_ns() < end) {
    pthread_mutex_unlock(&srv->mu);
    usleep(10000);
    pthread_mutex_lock(&srv->mu);
  }
  int left = srv->nconns;
  pthread_mutex_unlock(&srv->mu);
  if (left == 0) {
    srv_lock_stop();
    srv_pool_stop();
  }
  if (srv->cfg.forward_to && left == 0) srv_forward_stop();
  uint64_t all = 0;
  for (int t = 0; t <= RIO_T_MAX; t++) all += srv_served[t];
  srv_log(LOG_INFO, "served %llu requests (READ %llu, WRITE %llu, other %llu), %llu bytes read, %llu written",
          (unsigned long long)all, (unsigned long long)srv_served[RIO_T_READ], (unsigned long long)srv_served[RIO_T_WRITE],
          (unsigned long long)(all - srv_served[RIO_T_READ] - srv_served[RIO_T_WRITE]),
          (unsigned long long)srv_bytes_read, (unsigned long long)srv_bytes_written);
  srv_trace_close();
  srv_log(LOG_INFO, "stopped%s", left ? " (some connections did not end in 10 s)" : "");
}

int main(int argc, char **argv) {
  parse_args(argc, argv, &srv->cfg);
  setup(&srv->cfg);
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* every thread inherits the mask; only signalfd sees them */
  signal(SIGPIPE, SIG_IGN);
  int sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
  char shown[300];
  int lfd = listen_on(srv->cfg.listen, shown, sizeof shown);
  char why[300];
  if (srv->cfg.trace_dir && srv_trace_open(srv->cfg.trace_dir, shown, why, sizeof why)) {
    fprintf(stderr, "pario-server: %s\n", why);
    return 1;
  }
  if (sfd < 0 || srv_pool_start(srv->cfg.threads) || srv_lock_start()) {
    fprintf(stderr, "pario-server: cannot start threads: %s\n", strerror(errno));
    return 1;
  }
  if (srv->cfg.forward_to) {
    if (srv_forward_start()) return 1;
    srv_log(LOG_INFO, "forwarding %s to %s", shown, srv->cfg.forward_to);
  } else {
    srv_log(LOG_INFO, "serving %s on %s (%d threads, max request %llu bytes, %s confinement%s)", srv->cfg.root, shown,
            srv->cfg.threads, (unsigned long long)srv->cfg.max_request, srv_have_openat2 ? "openat2" : "O_NOFOLLOW walk",
            srv->tls_ctx ? ", TLS" : "");
  }
  /* All that needs root is open (socket, secret, certificate, root, trace): drop it before the
   * first connection. setuid and setgid act on every thread of the process (glibc). */
  drop_privileges(&srv->cfg);
  printf("%s\n", shown);
  fflush(stdout);
  for (;;) {
    struct pollfd p[2] = {{lfd, POLLIN, 0}, {sfd, POLLIN, 0}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) break;
    if (p[1].revents) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
        srv_log(LOG_INFO, "signal %u: shutting down", si.ssi_signo);
      break;
    }
    if (p[0].revents) accept_one(lfd);
  }
  shut_down(lfd);
  return 0;
}
