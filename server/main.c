/* pario-server: serves the files beneath --root to pario's x-rio driver over TCP (protocol:
 * src/rio/PROTOCOL.md). The main thread parses the options, listens, prints HOST:PORT on
 * stdout once it accepts, and runs the accept loop; each connection has a reader thread and
 * the requests run on a worker pool. SIGINT/SIGTERM end it cleanly. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
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
          "  --secret-file F       shared secret (>= %d bytes) for HMAC-SHA-256 authentication\n"
          "  --threads N           worker threads (default 4, 1..256)\n"
          "  --max-request BYTES   largest request body (default 64M, 1M..1G; K/M/G suffixes)\n"
          "  --idle-timeout S      close a connection idle for S seconds (default 0: never)\n"
          "  --max-conns N         simultaneous connections (default 256)\n"
          "  --forward-to H:P      run as a forwarder to the server at H:P (same secret), merging the\n"
          "                        READ/WRITE requests of one collective operation (no --root)\n"
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

static void parse_args(int argc, char **argv, srv_config *cfg) {
  enum { O_ROOT = 256, O_LISTEN, O_SECRET, O_THREADS, O_MAXREQ, O_IDLE, O_LOG, O_CONNS, O_EMU, O_FWD, O_CERT, O_KEY,
         O_TRACE, O_MERGE, O_HELP, O_VERSION, O_INSECURE };
  static const struct option opts[] = {
      {"root", 1, 0, O_ROOT},          {"listen", 1, 0, O_LISTEN},   {"secret-file", 1, 0, O_SECRET},
      {"threads", 1, 0, O_THREADS},    {"max-request", 1, 0, O_MAXREQ}, {"idle-timeout", 1, 0, O_IDLE},
      {"log-level", 1, 0, O_LOG},      {"max-conns", 1, 0, O_CONNS}, {"emulate", 1, 0, O_EMU},
      {"forward-to", 1, 0, O_FWD},     {"tls-cert", 1, 0, O_CERT},   {"tls-key", 1, 0, O_KEY},
      {"trace", 1, 0, O_TRACE},        {"merge-wait", 1, 0, O_MERGE}, {"insecure", 0, 0, O_INSECURE},
          {"help", 0, 0, O_HELP},          {"version", 0, 0, O_VERSION}, {0, 0, 0, 0}};
  cfg->threads = 4;
  cfg->max_request = RIO_DEFAULT_MAX_REQUEST;
  cfg->max_conns = 256;
  cfg->merge_wait_ms = 50;
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
    case O_THREADS: cfg->threads = (int)parse_int("--threads", optarg, 1, 256); break;
    case O_MAXREQ: cfg->max_request = parse_size("--max-request", optarg); break;
    case O_IDLE: cfg->idle_timeout = (int)parse_int("--idle-timeout", optarg, 0, 86400 * 365); break;
    case O_MERGE: cfg->merge_wait_ms = (int)parse_int("--merge-wait", optarg, 0, 60000); break;
    case O_CONNS: cfg->max_conns = (int)parse_int("--max-conns", optarg, 1, 65536); break;
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
  if (!cfg->secret_file) die_arg("--secret-file", "required", NULL);
  if (!cfg->tls_cert != !cfg->tls_key) die_arg(cfg->tls_cert ? "--tls-key" : "--tls-cert", "required with the other", NULL);
  if (cfg->tls_cert && (cfg->emu.net_bw || cfg->emu.net_latency_ns))
    die_arg("--emulate", "the emulated link (net_latency, net_bw) does not run under TLS", NULL);
  uint64_t ms = cfg->max_request / RIO_SEG;
  cfg->max_segments = ms < RIO_DEFAULT_MAX_SEGMENTS ? (uint32_t)ms : RIO_DEFAULT_MAX_SEGMENTS;
  cfg->max_unauth = cfg->max_conns < 64 ? cfg->max_conns : 64;
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

static void peer_name(const struct sockaddr_storage *ss, socklen_t sl, char *out, size_t n) {
  char h[48], p[8];
  if (getnameinfo((const struct sockaddr *)ss, sl, h, sizeof h, p, sizeof p, NI_NUMERICHOST | NI_NUMERICSERV))
    snprintf(out, n, "?");
  else
    snprintf(out, n, "%s:%s", h, p);
}

static void *conn_main(void *arg) {
  srv_conn *c = arg;
  if (!srv->tls_ctx || srv_tls_accept(c) == 0) {
    srv_conn_serve(c);
  } else {
    pthread_mutex_lock(&srv->mu);
    srv->nunauth--;
    pthread_mutex_unlock(&srv->mu);
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

static void accept_one(int lfd) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
      srv_log(LOG_WARN, "accept: %s", strerror(errno));
    if (errno == EMFILE || errno == ENFILE) usleep(10000);
    return;
  }
  char peer[64];
  peer_name(&ss, sl, peer, sizeof peer);
  pthread_mutex_lock(&srv->mu);
  int full = srv->nconns >= srv->cfg.max_conns || srv->nunauth >= srv->cfg.max_unauth;
  int nconns = srv->nconns, nunauth = srv->nunauth;
  pthread_mutex_unlock(&srv->mu);
  if (full) {
    /* A flood must not flood the log too: one line per second, with the count left out. */
    static uint64_t last_log, quiet;
    uint64_t now = srv_now_ns();
    if (now - last_log >= 1000000000ull) {
      srv_log(LOG_WARN, "connection from %s refused: too many connections (%d, %d authenticating; %llu more refused "
              "since the last line)", peer, nconns, nunauth, (unsigned long long)quiet);
      last_log = now, quiet = 0;
    } else {
      quiet++;
    }
    close(fd);
    return;
  }
  int one = 1;
  struct timeval tv = {60, 0}; /* a client that stops reading its replies is dropped */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  srv_conn *c = srv_conn_new(fd, &srv_socket_io, peer);
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
  char why[128];
  int e = rio_read_secret(cfg->secret_file, srv->secret, &srv->secret_len, why, sizeof why);
  if (e) {
    fprintf(stderr, "pario-server: --secret-file %s: %s (%s)\n", cfg->secret_file, why, strerror(e));
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
  if (sfd < 0 || srv_pool_start(srv->cfg.threads) || srv_lock_start()) {
    fprintf(stderr, "pario-server: cannot start threads: %s\n", strerror(errno));
    return 1;
  }
  char why[300];
  if (srv->cfg.trace_dir && srv_trace_open(srv->cfg.trace_dir, shown, why, sizeof why)) {
    fprintf(stderr, "pario-server: %s\n", why);
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
