/* The TCP counter channel (tcpctr.h). Open: rank 0 listens on every IPv4 address (port chosen
 * by the kernel) and broadcasts its port, its addresses (non-loopback first, 127.0.0.1 last)
 * and two random words, the cookie and the answer; each other rank connects to the first
 * address whose listener answers the hello {cookie, rank} with {answer, rank}, then an
 * allreduce agrees. An address that is also some other host's, like docker0's, reaches a
 * listener that does not know the cookie: one that echoes the hello (or anything else) is not
 * rank 0, since the answer never crosses the network before the real rank 0 sends it.
 * The server thread polls the listener, a stop pipe and the connections, blocking: a request
 * wakes it. A connection that closes or sends garbage is dropped; the server never waits on a
 * peer that stalls (strangers: below, serve_one). Every send uses MSG_NOSIGNAL (no SIGPIPE). */
#include "sharedfp/tcpctr.h"

#include "core/comm.h"
#include "core/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAX_ADDRS = 8, CONNECT_MS = 3000, HELLO_S = 5, MAX_STRANGERS = 16, SPIN_NS = 100 * 1000 };

struct pario_tcpctr {
  int rank, nprocs;
  const pario_tcpctr_handler *h; /* set: every rank connects (rank 0 too), and h serves */
  int *rfd;          /* server thread, with h: each rank's connection, or -1 */
  int64_t *value;    /* rank 0: the counter */
  uint64_t cookie, answer; /* the hello's word, and rank 0's reply to it */
  int fd;            /* client: the connection; rank 0: the listener (owned by the thread) */
  int cfd;           /* rank 0 with a handler: its own connection as a client, else -1 */
  int stop[2];       /* rank 0: the thread ends when stop[0] is readable */
  pthread_t tid;
  int thread, broken;
  uint64_t seq;
  pthread_mutex_t lock; /* one request in flight per process, so replies cannot cross */
};

/* Exactly n bytes, or -1 (timeout, peer gone, error). */
static int io_all(int fd, void *buf, size_t n, int out) {
  char *p = buf;
  while (n) {
    ssize_t k = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k, n -= (size_t)k;
  }
  return 0;
}

static void set_timeouts(int fd, int seconds) {
  struct timeval tv = {seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* On dedicated cores (pario_wait_spins: every rank of the node has a core, which the node's
 * load confirms) poll without sleeping for up to SPIN_NS: a round trip across nodes takes tens
 * of microseconds, and a thread that sleeps in poll or recv adds a wake-up on each side to
 * every one. Where ranks share cores the thread that must answer needs the core: no spin.
 * poll's result (0: nothing yet, sleep in poll or recv now). */
static int spin_poll(struct pollfd *p, nfds_t n) {
  int k = 0;
  if (pario_wait_spins())
    for (long t0 = pario_mono_ns(); !(k = poll(p, n, 0)) && pario_mono_ns() - t0 < SPIN_NS;) pario_cpu_relax();
  return k;
}

int pario_tcpctr_timeout(void) {
  const char *t = getenv("PARIO_ADDPROC_TIMEOUT");
  int s = t ? atoi(t) : 0;
  return s > 0 ? s : 30;
}

/* ---- rank 0: the server ---- */

/* Every byte and connection may come from a stranger: anyone who reaches the port. The server
 * never blocks reading a peer (each read takes what has arrived, MSG_DONTWAIT, and a message
 * is served when its 16 bytes are whole), so a silent or slow peer never delays another's
 * update. A peer that has not said the hello with the cookie (unknown) has HELLO_S seconds from
 * its accept to say it; at most MAX_STRANGERS unknown peers are held at once (a new one drops
 * the oldest), so a flood costs neither descriptors nor a legitimate rank's place. A hello
 * names a rank not yet connected (a second hello for a rank is refused). */
typedef struct conn {
  int fd, known;       /* known: said the hello with the cookie */
  int rank;            /* known: whose */
  size_t got;          /* bytes of the message m read so far */
  uint64_t m[2];
  long long deadline;  /* unknown: dropped at this time (now_ms) unless its hello is whole */
} conn;

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* What has arrived from c; a whole message, a hello (answered, c becomes known) or a request
 * (answered). 0, or -1: drop c (closed, error, a hello without the cookie or for a rank that
 * is connected already). */
static int serve_one(pario_tcpctr *s, conn *c, char *have) {
  ssize_t k = recv(c->fd, (char *)c->m + c->got, sizeof c->m - c->got, MSG_DONTWAIT);
  if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  if (k <= 0) return -1;
  if ((c->got += (size_t)k) < sizeof c->m) return 0;
  c->got = 0;
  uint64_t r[2];
  if (!c->known) {
    uint64_t rank = c->m[1];
    if (c->m[0] != s->cookie || (rank == 0 && !s->h) || rank >= (uint64_t)s->nprocs || have[rank]) return -1;
    r[0] = s->answer, r[1] = rank;
    if (io_all(c->fd, r, sizeof r, 1)) return -1; /* the rank may still say it on another address */
    c->known = have[rank] = 1;
    c->rank = (int)rank;
    if (s->h) s->rfd[rank] = c->fd;
    return 0;
  }
  if (s->h) return s->h->msg(s->h->arg, s, c->rank, c->m);
  r[0] = (uint64_t)__atomic_fetch_add(s->value, (int64_t)c->m[0], __ATOMIC_SEQ_CST);
  r[1] = c->m[1];
  return io_all(c->fd, r, sizeof r, 1);
}

static void drop(pario_tcpctr *s, conn *cs, int *n, int i) {
  if (s->h && cs[i].known) {
    s->rfd[cs[i].rank] = -1;
    s->h->gone(s->h->arg, s, cs[i].rank);
  }
  close(cs[i].fd);
  cs[i] = cs[--*n];
}

static void *serve(void *arg) {
  pario_tcpctr *s = arg;
  int clients = s->h ? s->nprocs : s->nprocs - 1; /* with a handler rank 0 connects too */
  int cap = clients + MAX_STRANGERS, n = 0, ranks = 0; /* ranks: hellos taken */
  conn *cs = calloc((size_t)cap, sizeof *cs);
  struct pollfd *p = calloc((size_t)cap + 2, sizeof *p);
  char *have = calloc((size_t)s->nprocs, 1); /* the ranks connected */
  while (cs && p && have) {
    long long now = now_ms(), wake = -1;
    for (int i = n - 1; i >= 0; i--) /* backwards: a dropped one is replaced by the last */
      if (!cs[i].known && cs[i].deadline <= now) drop(s, cs, &n, i);
      else if (!cs[i].known && (wake < 0 || cs[i].deadline < wake)) wake = cs[i].deadline;
    p[0] = (struct pollfd){.fd = s->stop[0], .events = POLLIN};
    p[1] = (struct pollfd){.fd = s->fd, .events = POLLIN}; /* -1 once closed: poll skips it */
    for (int i = 0; i < n; i++) p[2 + i] = (struct pollfd){.fd = cs[i].fd, .events = POLLIN};
    int k = spin_poll(p, (nfds_t)n + 2);
    if (!k) k = poll(p, (nfds_t)n + 2, wake < 0 ? -1 : (int)(wake - now + 1));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 || p[0].revents) break;
    for (int i = n - 1; i >= 0; i--) {
      int was = cs[i].known;
      if (p[2 + i].revents && serve_one(s, &cs[i], have)) drop(s, cs, &n, i);
      else ranks += cs[i].known - was;
    }
    /* A few connections a wake (the listener does not block): a storm of them drains the
     * backlog fast, so a rank's SYN is not dropped, yet one wake takes too few to push out a
     * rank accepted in it before its hello is read. */
    for (int a = 0; s->fd >= 0 && p[1].revents && a < MAX_STRANGERS / 2; a++) {
      int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd < 0 && (errno == EINTR || errno == ECONNABORTED)) continue;
      if (fd < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { /* EMFILE...: no busy loop on a */
        close(s->fd); /* listener that stays readable; the ranks still waiting time out, the */
        s->fd = -1;   /* open agrees on failure and addproc uses MPI messages */
      }
      if (fd < 0) break;
      int old = -1, strangers = 0;
      for (int i = 0; i < n; i++) {
        if (cs[i].known) continue;
        strangers++;
        if (old < 0 || cs[i].deadline < cs[old].deadline) old = i;
      }
      if (strangers >= MAX_STRANGERS) drop(s, cs, &n, old); /* full: the oldest unknown peer goes */
      set_timeouts(fd, HELLO_S); /* bounds the blocking send of a reply */
      cs[n++] = (conn){.fd = fd, .deadline = now_ms() + HELLO_S * 1000};
    }
    if (s->fd >= 0 && ranks == clients) { /* everyone is here: no more strangers */
      close(s->fd);
      s->fd = -1;
      for (int i = n - 1; i >= 0; i--)
        if (!cs[i].known) drop(s, cs, &n, i);
    }
  }
  for (int i = 0; i < n; i++) close(cs[i].fd);
  if (s->h) /* no more sends: the connections are closed */
    for (int r = 0; r < s->nprocs; r++) s->rfd[r] = -1;
  free(cs);
  free(p);
  free(have);
  return NULL;
}

/* The listener (on bind_addr: every address, or a test's loopback), its port, and this host's
 * IPv4 addresses (network order), loopback last. */
static int listen_any(uint32_t bind_addr, int backlog, int *port, uint32_t *addrs, int *naddr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = bind_addr, .sin_port = 0};
  socklen_t len = sizeof a;
  if (fd < 0) return -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, backlog) || getsockname(fd, (struct sockaddr *)&a, &len)) {
    close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  *naddr = 0;
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs) == 0)
    for (struct ifaddrs *i = ifs; i && *naddr < MAX_ADDRS - 1; i = i->ifa_next)
      if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK))
        addrs[(*naddr)++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
  freeifaddrs(ifs);
  addrs[(*naddr)++] = htonl(INADDR_LOOPBACK);
  return fd;
}

/* ---- the other ranks: connect and say hello ---- */

static int connect_one(uint32_t addr, int port, uint64_t cookie, uint64_t answer, int rank) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = addr, .sin_port = htons((uint16_t)port)};
  if (fd < 0) return -1;
  int rc = connect(fd, (struct sockaddr *)&a, sizeof a), err = 0;
  socklen_t len = sizeof err;
  if (rc && errno == EINPROGRESS) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    rc = poll(&p, 1, CONNECT_MS) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && !err ? 0 : -1;
  }
  uint64_t hello[2] = {cookie, (uint64_t)rank}, ack[2] = {0, 0};
  if (rc == 0 && fcntl(fd, F_SETFL, 0) == 0) {
    set_timeouts(fd, HELLO_S);
    if (io_all(fd, hello, sizeof hello, 1) == 0 && io_all(fd, ack, sizeof ack, 0) == 0 && ack[0] == answer &&
        ack[1] == (uint64_t)rank) {
      set_timeouts(fd, pario_tcpctr_timeout());
      return fd;
    }
  }
  close(fd);
  return -1;
}

/* Test hooks, read on rank 0 only and inert unless set (tests/mpi/tcpattack.sh):
 * PARIO_TEST_TCPCTR_PORTFILE=PATH: once listening, rank 0 writes "PORT COOKIE\n" (the cookie in
 * hex, so a test can also play an insider) to PATH (whole: a temporary file renamed);
 * PARIO_TEST_TCPCTR_HOLD_MS=N: then it waits N ms before the other ranks connect, the window in
 * which a test's strangers reach the listener first;
 * PARIO_TEST_TCPCTR_DECOY=IP (a loopback address but 127.0.0.1): rank 0 listens on 127.0.0.1
 * only and names IP first, as if one of its addresses were also another host's, where a test's
 * impostor listens on the same port. test_decoy: IP, or 0. */
static uint32_t test_decoy(void) {
  const char *d = getenv("PARIO_TEST_TCPCTR_DECOY");
  struct in_addr a;
  return d && inet_pton(AF_INET, d, &a) == 1 && a.s_addr != htonl(INADDR_LOOPBACK) ? a.s_addr : 0;
}

static void test_hooks(int port, uint64_t cookie) {
  const char *file = getenv("PARIO_TEST_TCPCTR_PORTFILE"), *hold = getenv("PARIO_TEST_TCPCTR_HOLD_MS");
  char tmp[4096];
  if (file && *file && snprintf(tmp, sizeof tmp, "%s.tmp", file) < (int)sizeof tmp) {
    FILE *f = fopen(tmp, "w");
    if (f) {
      int ok = fprintf(f, "%d %016llx\n", port, (unsigned long long)cookie) > 0;
      if (fclose(f) == 0 && ok) rename(tmp, file);
    }
  }
  long ms = hold ? atol(hold) : 0;
  if (ms > 0) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) && errno == EINTR) {
    }
  }
}

static void stop_server(pario_tcpctr *c) {
  if (c->thread) {
    char b = 1;
    while (write(c->stop[1], &b, 1) < 0 && errno == EINTR) {
    }
    pthread_join(c->tid, NULL);
  }
  if (c->fd >= 0) close(c->fd); /* the listener, if the thread had not closed it */
  close(c->stop[0]);
  close(c->stop[1]);
}

int pario_tcpctr_open(MPI_Comm comm, int64_t *value, const pario_tcpctr_handler *h, pario_tcpctr **out) {
  pario_tcpctr *c = calloc(1, sizeof *c);
  long long v[5 + MAX_ADDRS] = {0}; /* ok, port, cookie, answer, naddr, addresses */
  int ok = c != NULL, all = 0, rank = 0, nprocs = 1;
  int64_t initial = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &nprocs);
  if (c) {
    c->rank = rank, c->nprocs = nprocs, c->value = value, c->fd = -1, c->cfd = -1, c->stop[0] = c->stop[1] = -1;
    c->h = h;
    pthread_mutex_init(&c->lock, NULL);
    if (h && rank == 0 && (c->rfd = malloc(sizeof(int) * (size_t)nprocs)))
      for (int r = 0; r < nprocs; r++) c->rfd[r] = -1;
  }
  if (rank == 0 && c && (!h || c->rfd)) {
    uint32_t addrs[MAX_ADDRS];
    int port = 0, naddr = 0;
    uint64_t w[2];
    if (getrandom(w, sizeof w, 0) != (ssize_t)sizeof w) { /* no entropy source: weaker words */
      w[0] = (uint64_t)time(NULL) * 6364136223846793005ULL ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)c;
      w[1] = (w[0] ^ (uint64_t)clock()) * 0x9e3779b97f4a7c15ULL + (uint64_t)(uintptr_t)&w;
    }
    c->cookie = w[0], c->answer = w[1];
    initial = *value;
    uint32_t decoy = test_decoy();
    ok = (c->fd = listen_any(htonl(decoy ? INADDR_LOOPBACK : INADDR_ANY), nprocs + MAX_STRANGERS, &port, addrs, &naddr)) >= 0 &&
         pipe2(c->stop, O_CLOEXEC) == 0 && (c->thread = pthread_create(&c->tid, NULL, serve, c) == 0);
    if (decoy) { /* first; the last non-loopback address goes where the list is full */
      if (naddr == MAX_ADDRS) addrs[MAX_ADDRS - 2] = addrs[MAX_ADDRS - 1], naddr--;
      memmove(addrs + 1, addrs, sizeof *addrs * (size_t)naddr++);
      addrs[0] = decoy;
    }
    if (ok) test_hooks(port, c->cookie);
    v[0] = ok, v[1] = port, v[2] = (long long)c->cookie, v[3] = (long long)c->answer, v[4] = naddr;
    for (int i = 0; i < naddr; i++) v[5 + i] = addrs[i];
  }
  PMPI_Bcast(v, 5 + MAX_ADDRS, MPI_LONG_LONG, 0, comm);
  if (rank != 0 && c) {
    c->cookie = (uint64_t)v[2], c->answer = (uint64_t)v[3];
    for (int i = 0; v[0] && i < v[4] && i < MAX_ADDRS && c->fd < 0; i++)
      c->fd = connect_one((uint32_t)v[5 + i], (int)v[1], c->cookie, c->answer, rank);
    ok = v[0] && c->fd >= 0;
  } else if (h && c && ok) { /* rank 0 is a client of its own server: over loopback */
    c->cfd = connect_one(htonl(INADDR_LOOPBACK), (int)v[1], c->cookie, c->answer, 0);
    ok = c->cfd >= 0;
  }
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (all) {
    *out = c;
    return 0;
  }
  if (c) {
    if (rank == 0) {
      if (c->cfd >= 0) close(c->cfd);
      stop_server(c);
      *value = initial; /* what a peer with the cookie added before the open failed is undone */
    } else if (c->fd >= 0) close(c->fd);
    pthread_mutex_destroy(&c->lock);
    free(c->rfd);
    free(c);
  }
  return ENOTCONN;
}

int pario_tcpctr_fetch_add(pario_tcpctr *c, int64_t n, int64_t *old) {
  pthread_mutex_lock(&c->lock);
  uint64_t m[2] = {(uint64_t)n, ++c->seq}, r[2] = {0, 0};
  int ok = !c->broken && io_all(c->fd, m, sizeof m, 1) == 0;
  if (ok) spin_poll(&(struct pollfd){.fd = c->fd, .events = POLLIN}, 1); /* then recv, with its timeout */
  ok = ok && io_all(c->fd, r, sizeof r, 0) == 0 && r[1] == m[1];
  if (!ok) c->broken = 1; /* a late reply would answer the wrong request: no more requests */
  pthread_mutex_unlock(&c->lock);
  *old = (int64_t)r[0];
  return ok ? 0 : EIO;
}

void pario_tcpctr_close(pario_tcpctr *c) {
  if (c->cfd >= 0) close(c->cfd);
  if (c->rank == 0) stop_server(c);
  else close(c->fd);
  pthread_mutex_destroy(&c->lock);
  free(c->rfd);
  free(c);
}

int pario_tcpctr_conn(pario_tcpctr *c) { return c->rank == 0 ? c->cfd : c->fd; }

int pario_tcpctr_send(int fd, uint64_t a, uint64_t b) {
  uint64_t m[2] = {a, b};
  return fd < 0 ? -1 : io_all(fd, m, sizeof m, 1);
}

int pario_tcpctr_recv(int fd, uint64_t m[2]) { return io_all(fd, m, 2 * sizeof *m, 0); }

int pario_tcpctr_send_to(pario_tcpctr *c, int rank, uint64_t a, uint64_t b) {
  return rank >= 0 && rank < c->nprocs && c->rfd ? pario_tcpctr_send(c->rfd[rank], a, b) : -1;
}
