/* --emulate: one emulated link between clients and server (shared bandwidth per direction, a
 * one-way latency, many frames in flight) and a server-wide storage bandwidth, so the seed's
 * wide-area experiments run on one machine; server/README.md says exactly what is emulated. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "server.h"

static void sleep_until(uint64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* "100ms", "2s", "500us" -> ns; "20MB/s", "1GB/s", "100KB/s" -> bytes/s (powers of 10^3). */
static int parse_num(const char *v, const char *const *units, const uint64_t *mult, uint64_t *out) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (errno || end == v || !(d >= 0)) return -1; /* also refuses NaN */
  for (int i = 0; units[i]; i++)
    if (!strcmp(end, units[i])) {
      double x = d * (double)mult[i];
      if (!(x <= 1e18)) return -1; /* infinity or beyond uint64_t (found by fuzz_rio) */
      *out = (uint64_t)x;
      return 0;
    }
  return -1;
}

int srv_emulate_parse(const char *s, srv_emulate *e, char *why, size_t whylen) {
  static const char *const tu[] = {"ns", "us", "ms", "s", NULL};
  static const uint64_t tm[] = {1, 1000, 1000000, 1000000000};
  static const char *const bu[] = {"B/s", "KB/s", "MB/s", "GB/s", "KiB/s", "MiB/s", "GiB/s", NULL};
  static const uint64_t bm[] = {1, 1000, 1000000, 1000000000, 1024, 1048576, 1073741824};
  char buf[256];
  if (strlen(s) >= sizeof buf) return snprintf(why, whylen, "--emulate: too long"), -1;
  strcpy(buf, s);
  memset(e, 0, sizeof *e);
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq) return snprintf(why, whylen, "--emulate: '%s' is not key=value", kv), -1;
    *eq = '\0';
    const char *k = kv, *v = eq + 1;
    int bad = 0;
    if (!strcmp(k, "net_latency")) bad = parse_num(v, tu, tm, &e->net_latency_ns);
    else if (!strcmp(k, "net_bw")) bad = parse_num(v, bu, bm, &e->net_bw) || e->net_bw == 0;
    else if (!strcmp(k, "disk_bw")) bad = parse_num(v, bu, bm, &e->disk_bw) || e->disk_bw == 0;
    else if (!strcmp(k, "cache")) {
      if (!strcmp(v, "none")) e->cache_none = 1;
      else if (!strcmp(v, "os")) e->cache_none = 0;
      else bad = 1;
    } else {
      return snprintf(why, whylen, "--emulate: unknown key '%s' (net_latency, net_bw, disk_bw, cache)", k), -1;
    }
    if (bad) return snprintf(why, whylen, "--emulate: bad value '%s' for %s", v, k), -1;
  }
  return 0;
}

/* ---- the emulated link -------------------------------------------------------------------------
 * Between the socket and the connection code sit two queues of byte chunks, one per direction,
 * each chunk stamped with the time it may be delivered: when the previous bytes of that
 * direction have gone through the server's one shared link (net_bw, a token bucket shared by
 * every connection: one wide-area pipe) plus net_latency. A pump thread per direction moves
 * bytes between socket and queue, so many frames are in flight at once, as on a real link. */
#define LINK_CHUNK (64u << 10)
#define LINK_CAP (8u << 20) /* bytes queued per direction before the pump stops (TCP backpressure) */

typedef struct chunk {
  struct chunk *next;
  uint64_t due;
  size_t n, off;
  uint8_t data[];
} chunk;

typedef struct link {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  chunk *in_h, *in_t, *out_h, *out_t;
  size_t in_bytes, out_bytes;
  int in_eof, closing, out_err;
  pthread_t tin, tout;
} link;

static pthread_mutex_t wire_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t wire_end[2]; /* per direction: when the link is free again */

static uint64_t link_due(int dir, size_t n) {
  const srv_emulate *e = &srv->cfg.emu;
  uint64_t now = srv_now_ns(), end = now;
  if (e->net_bw) {
    pthread_mutex_lock(&wire_mu);
    uint64_t start = wire_end[dir] > now ? wire_end[dir] : now;
    end = wire_end[dir] = start + (uint64_t)((double)n * 1e9 / (double)e->net_bw);
    pthread_mutex_unlock(&wire_mu);
  }
  return end + e->net_latency_ns;
}

static void wait_until(link *l, uint64_t t) {
  if (!t) return (void)pthread_cond_wait(&l->cv, &l->mu);
  struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
  pthread_cond_timedwait(&l->cv, &l->mu, &ts);
}

static void push(chunk **h, chunk **t, chunk *k) {
  k->next = NULL;
  if (*t) (*t)->next = k;
  else *h = k;
  *t = k;
}

static void *in_pump(void *arg) {
  srv_conn *c = arg;
  link *l = c->link;
  for (;;) {
    pthread_mutex_lock(&l->mu);
    while (l->in_bytes > LINK_CAP && !l->closing) wait_until(l, 0);
    int stop = l->closing;
    pthread_mutex_unlock(&l->mu);
    chunk *k = stop ? NULL : malloc(sizeof *k + LINK_CHUNK);
    ssize_t r = k ? recv(c->fd, k->data, LINK_CHUNK, 0) : -1;
    if (r < 0 && errno == EINTR) {
      free(k);
      continue;
    }
    pthread_mutex_lock(&l->mu);
    if (r <= 0) {
      free(k);
      l->in_eof = 1;
      pthread_cond_broadcast(&l->cv);
      pthread_mutex_unlock(&l->mu);
      return NULL;
    }
    k->n = (size_t)r, k->off = 0;
    k->due = link_due(0, (size_t)r);
    push(&l->in_h, &l->in_t, k);
    l->in_bytes += (size_t)r;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
  }
}

static void *out_pump(void *arg) {
  srv_conn *c = arg;
  link *l = c->link;
  pthread_mutex_lock(&l->mu);
  for (;;) {
    chunk *k = l->out_h;
    if (!k) {
      if (l->closing) break;
      wait_until(l, 0);
      continue;
    }
    if (k->due > srv_now_ns() && !l->out_err) {
      wait_until(l, k->due);
      continue;
    }
    l->out_h = k->next;
    if (!l->out_h) l->out_t = NULL;
    l->out_bytes -= k->n;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    int bad = l->out_err || srv_socket_io.send(c, k->data, k->n) != 0;
    free(k);
    pthread_mutex_lock(&l->mu);
    if (bad) l->out_err = 1;
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

static int link_recv(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  link *l = c->link;
  uint8_t *p = buf;
  pthread_mutex_lock(&l->mu);
  while (n > 0) {
    chunk *k = l->in_h;
    uint64_t now = srv_now_ns();
    if (deadline && now >= deadline) break;
    if (!k) {
      if (l->in_eof || l->closing) break;
      wait_until(l, deadline);
      continue;
    }
    if (k->due > now) {
      wait_until(l, deadline && deadline < k->due ? deadline : k->due);
      continue;
    }
    size_t m = k->n - k->off < n ? k->n - k->off : n;
    memcpy(p, k->data + k->off, m);
    p += m, n -= m, k->off += m, l->in_bytes -= m;
    if (k->off == k->n) {
      l->in_h = k->next;
      if (!l->in_h) l->in_t = NULL;
      free(k);
      pthread_cond_broadcast(&l->cv);
    }
  }
  int timed_out = n > 0 && !l->in_eof && !l->closing;
  pthread_mutex_unlock(&l->mu);
  if (n == 0) return 0;
  errno = timed_out ? ETIMEDOUT : ECONNRESET;
  return -1;
}

static int link_send(srv_conn *c, const void *buf, size_t n) {
  link *l = c->link;
  const uint8_t *p = buf;
  while (n > 0) {
    size_t m = n < LINK_CHUNK ? n : LINK_CHUNK;
    chunk *k = malloc(sizeof *k + m);
    if (!k) return -1;
    memcpy(k->data, p, m);
    k->n = m, k->off = 0;
    k->due = link_due(1, m);
    pthread_mutex_lock(&l->mu);
    while (l->out_bytes > LINK_CAP && !l->out_err && !l->closing) wait_until(l, 0);
    int bad = l->out_err || l->closing;
    if (!bad) {
      push(&l->out_h, &l->out_t, k);
      l->out_bytes += m;
      pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    if (bad) return free(k), -1;
    p += m, n -= m;
  }
  return 0;
}

static void link_shutdown(srv_conn *c) {
  link *l = c->link;
  pthread_mutex_lock(&l->mu);
  l->closing = 1;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
  shutdown(c->fd, SHUT_RD);
}

static const srv_io link_io = {link_recv, link_send, link_shutdown, NULL}; /* unbuffered: the pump holds the bytes */

int srv_emulate_wrap(srv_conn *c) {
  const srv_emulate *e = &srv->cfg.emu;
  if (!e->net_bw && !e->net_latency_ns) return 0;
  link *l = calloc(1, sizeof *l);
  if (!l) return -1;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&l->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&l->mu, NULL);
  c->link = l;
  if (pthread_create(&l->tin, NULL, in_pump, c)) return free(l), c->link = NULL, -1;
  if (pthread_create(&l->tout, NULL, out_pump, c)) {
    shutdown(c->fd, SHUT_RD);
    pthread_join(l->tin, NULL);
    free(l);
    c->link = NULL;
    return -1;
  }
  c->io = &link_io;
  return 0;
}

/* At the connection's end: the replies still queued go out (the out pump drains), then both
 * pumps end and the queues are freed. */
void srv_emulate_unwrap(srv_conn *c) {
  link *l = c->link;
  if (!l) return;
  link_shutdown(c);
  pthread_join(l->tout, NULL);
  shutdown(c->fd, SHUT_RDWR);
  pthread_join(l->tin, NULL);
  for (chunk *k = l->in_h, *n; k; k = n) n = k->next, free(k);
  for (chunk *k = l->out_h, *n; k; k = n) n = k->next, free(k);
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
  free(l);
  c->link = NULL;
}

static pthread_mutex_t disk_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t disk_next;

void srv_emulate_disk(size_t bytes) {
  uint64_t bw = srv->cfg.emu.disk_bw;
  if (!bw) return;
  uint64_t now = srv_now_ns();
  pthread_mutex_lock(&disk_mu);
  uint64_t start = disk_next > now ? disk_next : now;
  disk_next = start + (uint64_t)((double)bytes * 1e9 / (double)bw);
  uint64_t due = disk_next;
  pthread_mutex_unlock(&disk_mu);
  sleep_until(due);
}
