/* pario-server --forward-to: a forwarder node (seed 004 section 3). Clients' requests go upstream
 * over one shared connection, replies come back by id; the READ/WRITE parts of one collective
 * (same coll_id) are merged into one request of sorted, joined segments and the reply split
 * back; a group still incomplete after --merge-wait, one whose client left, or one that cannot
 * be merged goes part by part. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "merge.h"
#include "rio/login.h"
#include "server.h"

#define MAX_PARTS 4096

/* What the forwarder did with tagged requests (logged when it stops). */
static uint64_t n_tagged, n_merged_groups, n_merged_parts, n_late_parts;

typedef struct fwd_conn { /* per client: the upstream handles it opened, and their paths */
  uint32_t n, cap;
  uint64_t *handles;
  char **paths;
} fwd_conn;

typedef struct group {
  uint64_t coll_id, born;
  unsigned type;
  uint32_t coll_n, want, have, cap; /* want: the parts still expected (coll_n at first) */
  fwd_part *parts;
  fwd_merged m; /* the merged request (merge.c) once sent */
  struct group *next;
} group;

typedef struct pending {
  uint64_t up_id, client_id;
  size_t n;    /* the client's body bytes (released with the reply) */
  srv_conn *c; /* NULL: an internal request whose reply is dropped */
  unsigned type;
  char *open_path;
  uint64_t close_handle;
  group *g;
  struct pending *next;
} pending;

static struct {
  rio_link link; /* rio/link.h: plain TCP with MAC records after login (rio/login.c) */
  int dead;
  pthread_mutex_t mu, send_mu;
  pending *pend;
  uint64_t next_id, max_request;
  uint32_t max_segments;
  pthread_t reader, timer;
  int stop;
} up = {.link.fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER, .send_mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static group *groups;

/* ---- the upstream connection --------------------------------------------------------------------
 * The client side of the protocol is the x-rio:// driver's (src/rio/login.c, link.c): connect
 * with a timeout, HELLO/AUTH in version 2 as a named credential, the server's limits checked,
 * and every byte after AUTH in records under a MAC, so the upstream server needs no --insecure. */
#define UP_TIMEOUT_MS 10000 /* connect, login, and a frame that has begun */

static int up_frame(unsigned type, uint64_t id, const void *body, size_t n) {
  uint8_t hb[RIO_HDR_SIZE];
  rio_hdr h = {RIO_VERSION, (uint16_t)type, 0, (uint32_t)n, id};
  rio_hdr_encode(hb, &h);
  struct iovec v[2] = {{hb, sizeof hb}, {(void *)body, n}};
  pthread_mutex_lock(&up.send_mu);
  int e = rio_link_xfer(&up.link, 1, v, 2, (long long)srv->cfg.frame_timeout * 1000);
  pthread_mutex_unlock(&up.send_mu);
  return e ? -1 : 0;
}

static int up_connect(const char *spec, char *why, size_t whylen) {
  char host[256], port[16];
  const char *colon = strrchr(spec, ':');
  if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof host || strlen(colon + 1) >= sizeof port)
    return snprintf(why, whylen, "expected HOST:PORT"), -1;
  memcpy(host, spec, (size_t)(colon - spec));
  host[colon - spec] = '\0';
  if (host[0] == '[') memmove(host, host + 1, strlen(host)), host[strlen(host) - 1] = '\0';
  strcpy(port, colon + 1);
  /* --forward-secret-file, read here (before the privilege drop), or --secret-file's, read already */
  const char *sf = srv->cfg.forward_secret_file;
  uint8_t secret[RIO_MAX_SECRET];
  size_t slen = srv->secret_len;
  if (sf && rio_load_secret(sf, secret, &slen, why, whylen)) return -1;
  if (!sf) memcpy(secret, srv->secret, slen);
  rio_names nm = {"give --forward-tls-ca CA_FILE", "leave out --forward-tls-ca", "--forward-tls-ca", "--forward-user",
                  sf ? "--forward-secret-file" : "--secret-file"};
  const char *ca = srv->cfg.forward_tls_ca;
  rio_target t = {.host = host, .port = port, .tls = ca != NULL, .tls_ca = ca ? ca : "", .secret = secret,
                  .slen = slen, .secret_file = sf ? sf : srv->cfg.secret_file ? srv->cfg.secret_file : "--secret-file",
                  .user = srv->cfg.forward_user ? srv->cfg.forward_user : "", .timeout_ms = UP_TIMEOUT_MS,
                  .names = &nm};
  rio_session s;
  int e = rio_login(&up.link, &t, &s, why, whylen);
  memset(secret, 0, sizeof secret);
  if (e) return -1;
  up.max_request = s.max_request;
  up.max_segments = s.max_segments;
  up.next_id = 16;
  srv_log(LOG_INFO, "forward: logged in at %s as credential %s (protocol version %u%s)", spec,
          srv->cfg.forward_user ? srv->cfg.forward_user : "default", (unsigned)s.version,
          up.link.mac ? ", records with a MAC" : up.link.ssl ? ", TLS" : "");
  return 0;
}

/* Send a whole reply frame to a client (its status block inside body). */
static void to_client(srv_conn *c, unsigned type, uint64_t id, const void *body, size_t n) {
  uint8_t hb[RIO_HDR_SIZE];
  rio_hdr h = {RIO_VERSION, (uint16_t)(type | RIO_REPLY), 0, (uint32_t)n, id};
  rio_hdr_encode(hb, &h);
  srv_send2(c, hb, sizeof hb, body, n); /* through the output queue: never waits for the client */
}

static int up_request(pending *p, unsigned type, const void *body, size_t n) {
  pthread_mutex_lock(&up.mu);
  int dead = up.dead;
  if (!dead) {
    p->up_id = ++up.next_id;
    p->next = up.pend;
    up.pend = p;
  }
  pthread_mutex_unlock(&up.mu);
  if (dead || up_frame(type, p->up_id, body, n) == 0) return dead ? -1 : 0;
  return -1; /* the reader sees the broken connection and fails every pending request */
}

/* ---- client handle sets -------------------------------------------------------------------------- */
static const char *fwd_path(srv_conn *c, uint64_t h) {
  fwd_conn *f = c->fwd;
  const char *p = NULL;
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; f && i < f->n; i++)
    if (f->handles[i] == h) p = f->paths[i];
  pthread_mutex_unlock(&c->mu);
  return p;
}

static void fwd_add(srv_conn *c, uint64_t h, char *path) {
  fwd_conn *f = c->fwd;
  pthread_mutex_lock(&c->mu);
  if (f->n == f->cap) {
    uint32_t cap = f->cap ? 2 * f->cap : 16;
    uint64_t *hs = realloc(f->handles, cap * sizeof *hs);
    if (hs) f->handles = hs;
    char **ps = hs ? realloc(f->paths, cap * sizeof *ps) : NULL;
    if (ps) f->paths = ps, f->cap = cap;
  }
  if (f->n < f->cap) {
    f->handles[f->n] = h;
    f->paths[f->n++] = path;
    path = NULL;
  }
  pthread_mutex_unlock(&c->mu);
  free(path);
}

static void fwd_drop(srv_conn *c, uint64_t h) {
  fwd_conn *f = c->fwd;
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; i < f->n; i++)
    if (f->handles[i] == h) {
      free(f->paths[i]);
      f->handles[i] = f->handles[--f->n];
      f->paths[i] = f->paths[f->n];
      break;
    }
  pthread_mutex_unlock(&c->mu);
}

/* ---- collective groups ----------------------------------------------------------------------- */
static void group_free(group *g) {
  for (uint32_t i = 0; i < g->have; i++) free(g->parts[i].body);
  free(g->parts);
  fwd_merge_free(&g->m);
  free(g);
}

static void send_plain(srv_conn *c, uint64_t id, unsigned type, uint8_t *body, size_t n) {
  pending *p = calloc(1, sizeof *p);
  if (p) p->c = c, p->client_id = id, p->type = type, p->n = n;
  if (!p || up_request(p, type, body, n)) {
    if (p) {
      /* still in up.pend if the send failed: the reader fails it; otherwise free it here */
      pthread_mutex_lock(&up.mu);
      int listed = 0;
      for (pending *q = up.pend; q; q = q->next) listed |= q == p;
      pthread_mutex_unlock(&up.mu);
      if (listed) return;
      free(p);
    }
    srv_reply_error(c, id, RIO_EIO, "forwarder: the upstream server is gone");
    srv_conn_release(c, n);
  }
}

static void group_reply(group *g, int status, const uint8_t *rest, size_t rn);

/* The parts of g, all complete: merged into one request upstream when they name one file and
 * can be (merge.c), else one by one. */
static void group_send(group *g) {
  const char *path0 = fwd_path(g->parts[0].c, g->parts[0].io.handle);
  int ok = path0 != NULL;
  for (uint32_t i = 0; ok && i < g->have; i++) {
    const char *pi = fwd_path(g->parts[i].c, g->parts[i].io.handle);
    ok = pi && !strcmp(pi, path0);
  }
  size_t body_n = 0;
  uint8_t *body = NULL;
  pending *pd = NULL;
  if (ok && fwd_merge_plan(g->parts, g->have, &g->m) == 0 &&
      fwd_merge_fits(&g->m, g->type, up.max_request, up.max_segments) &&
      (body = fwd_merge_body(&g->m, g->parts, g->type, g->parts[0].io.handle, &body_n)) != NULL &&
      (pd = calloc(1, sizeof *pd)) != NULL) {
    pd->g = g, pd->type = g->type;
    __atomic_add_fetch(&n_merged_groups, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&n_merged_parts, g->have, __ATOMIC_RELAXED);
    srv_log(LOG_DEBUG, "forward: collective %llu: %u requests merged into one %s of %u segments, %llu bytes",
            (unsigned long long)g->coll_id, g->have, g->type == RIO_T_WRITE ? "WRITE" : "READ", g->m.nseg,
            (unsigned long long)g->m.total);
    if (up_request(pd, g->type, body, body_n)) {
      pthread_mutex_lock(&up.mu);
      int listed = 0;
      for (pending *q = up.pend; q; q = q->next) listed |= q == pd;
      pthread_mutex_unlock(&up.mu);
      if (!listed) { /* upstream already gone; a listed one is failed by the reader */
        free(pd);
        group_reply(g, RIO_EIO, NULL, 0);
      }
    }
    free(body);
    return;
  }
  free(body);
  fwd_merge_free(&g->m);
  for (uint32_t i = 0; i < g->have; i++) {
    send_plain(g->parts[i].c, g->parts[i].id, g->type, g->parts[i].body, g->parts[i].n);
    free(g->parts[i].body);
    g->parts[i].body = NULL;
  }
  g->have = 0;
  group_free(g);
}

/* The merged reply, split back to every part. */
static void group_reply(group *g, int status, const uint8_t *rest, size_t rn) {
  uint64_t done = rn >= 8 ? rio_load_u64(rest) : 0;
  if (status == RIO_OK && (rn < 8 || (g->type == RIO_T_READ && rn - 8 != done))) status = RIO_EPROTO;
  if (status == RIO_OK && g->type == RIO_T_WRITE && done != g->m.total) status = RIO_EIO;
  if (status == RIO_OK && g->type == RIO_T_READ) fwd_merge_by_part(&g->m);
  uint32_t at = 0;
  for (uint32_t i = 0; i < g->have; i++) {
    fwd_part *pt = &g->parts[i];
    if (status != RIO_OK) {
      uint8_t sb[RIO_STATUS];
      rio_wr w = rio_wr_init(sb, sizeof sb);
      rio_put_status(&w, status);
      to_client(pt->c, g->type, pt->id, sb, sizeof sb);
    } else if (g->type == RIO_T_WRITE) {
      uint8_t b[RIO_STATUS + 8];
      rio_wr w = rio_wr_init(b, sizeof b);
      rio_put_status(&w, RIO_OK);
      rio_put_u64(&w, pt->io.total);
      to_client(pt->c, g->type, pt->id, b, sizeof b);
    } else {
      size_t n = 0;
      uint8_t *b = fwd_read_reply(&g->m, &at, i, pt, rest + 8, done, &n);
      if (b) to_client(pt->c, RIO_T_READ, pt->id, b, n);
      else srv_reply_error(pt->c, pt->id, RIO_ENOMEM, "forwarder: out of memory");
      free(b);
    }
    srv_conn_release(pt->c, pt->n);
  }
  group_free(g);
}

static void group_add(srv_conn *c, uint64_t id, uint8_t *body, size_t n, size_t hb, const rio_io_req *io, unsigned type) {
  pthread_mutex_lock(&g_mu);
  group *g = groups;
  n_tagged++;
  while (g && !(g->coll_id == io->coll_id && g->type == type)) g = g->next;
  if (!g && (g = calloc(1, sizeof *g)) != NULL) {
    g->coll_id = io->coll_id, g->type = type, g->coll_n = g->want = io->coll_n;
    g->next = groups;
    groups = g;
  }
  if (g && g->have == 0) g->born = srv_now_ns(); /* the wait runs from the first part */
  if (g && g->have == g->cap && g->coll_n == io->coll_n) { /* parts grow with what arrives, not with coll_n */
    uint32_t cap = g->cap ? 2 * g->cap : 4;
    fwd_part *np = realloc(g->parts, (cap < g->want ? cap : g->want) * sizeof *np);
    if (np) g->parts = np, g->cap = cap < g->want ? cap : g->want;
  }
  if (!g || g->coll_n != io->coll_n || g->have == g->cap) { /* no memory, or parts that disagree: no merge */
    pthread_mutex_unlock(&g_mu);
    send_plain(c, id, type, body, n);
    free(body);
    return;
  }
  fwd_part *p = &g->parts[g->have++];
  p->c = c, p->id = id, p->body = body, p->n = n, p->hb = hb, p->io = *io;
  p->io.segs = body + RIO_IO_HDR; /* the decoded view points into the body we keep */
  int full = g->have == g->want;
  if (full)
    for (group **q = &groups; *q; q = &(*q)->next)
      if (*q == g) {
        *q = g->next;
        break;
      }
  pthread_mutex_unlock(&g_mu);
  if (full) group_send(g);
}

/* Send the parts of g upstream one by one (the group keeps no part afterwards). */
static void parts_plain(group *g, const char *why) {
  srv_log(LOG_DEBUG, "forward: collective %llu %s incomplete (%u of %u parts) %s: sent part by part",
          (unsigned long long)g->coll_id, g->type == RIO_T_WRITE ? "WRITE" : "READ", g->have, g->want, why);
  __atomic_add_fetch(&n_late_parts, g->have, __ATOMIC_RELAXED);
  for (uint32_t i = 0; i < g->have; i++) {
    send_plain(g->parts[i].c, g->parts[i].id, g->type, g->parts[i].body, g->parts[i].n);
    free(g->parts[i].body);
    g->parts[i].body = NULL;
  }
  g->have = 0;
}

/* Detach the groups for which take(g, arg) holds (under g_mu) and send their parts one by one:
 * a group whose client left, or one that waited too long. The latter stays behind as a ghost
 * (keep) that expects only the parts still missing, so that late parts (a rank whose first
 * request had to connect first, say) still merge among themselves; a ghost nobody joined
 * within ten times the wait is dropped. */
static void flush_groups(int (*take)(const group *g, const void *arg), const void *arg, int keep, const char *why) {
  uint64_t now = srv_now_ns(), ghost_ns = 10ull * (uint64_t)srv->cfg.merge_wait_ms * 1000000ull;
  pthread_mutex_lock(&g_mu);
  group *late = NULL;
  for (group **q = &groups; *q;) {
    group *g = *q;
    if (keep && g->have == 0 && now - g->born > ghost_ns) { /* an expired ghost */
      *q = g->next;
      group_free(g);
    } else if (g->have > 0 && take(g, arg)) {
      *q = g->next;
      g->next = late;
      late = g;
    } else {
      q = &g->next;
    }
  }
  pthread_mutex_unlock(&g_mu);
  while (late) {
    group *g = late;
    late = g->next;
    uint32_t sent = g->have;
    parts_plain(g, why);
    if (keep && g->want > sent) {
      pthread_mutex_lock(&g_mu); /* the parts sent are no longer expected */
      g->want -= sent, g->born = srv_now_ns();
      g->next = groups;
      groups = g;
      pthread_mutex_unlock(&g_mu);
    } else {
      group_free(g);
    }
  }
}

static int too_old(const group *g, const void *now) {
  return *(const uint64_t *)now - g->born > (uint64_t)srv->cfg.merge_wait_ms * 1000000ull;
}

static int has_part_of(const group *g, const void *c) {
  for (uint32_t i = 0; i < g->have; i++)
    if (g->parts[i].c == c) return 1;
  return 0;
}

/* Groups that waited longer than --merge-wait go upstream part by part: the wait for the
 * other parts of a collective access is bounded (the parts a client may never send, say,
 * when the ranks sent different numbers of requests). */
static void *timer_main(void *arg) {
  (void)arg;
  unsigned tick_us = srv->cfg.merge_wait_ms >= 80 ? 20000 : srv->cfg.merge_wait_ms >= 4 ? srv->cfg.merge_wait_ms * 250 : 1000;
  while (!__atomic_load_n(&up.stop, __ATOMIC_ACQUIRE)) {
    usleep(tick_us);
    uint64_t now = srv_now_ns();
    flush_groups(too_old, &now, 1, "after --merge-wait");
  }
  return NULL;
}

/* ---- replies from upstream ---------------------------------------------------------------------- */
static void deliver(pending *p, const rio_hdr *h, const uint8_t *body) {
  rio_rd r = rio_rd_init(body, h->len);
  int status = rio_get_status(&r);
  if (p->g) {
    group_reply(p->g, h->type == (p->type | RIO_REPLY) ? status : (status ? status : RIO_EPROTO), r.p, r.n);
  } else if (p->c) {
    if (status == RIO_OK && p->type == RIO_T_OPEN && r.n >= 8) {
      fwd_add(p->c, rio_load_u64(r.p), p->open_path);
      p->open_path = NULL;
    }
    if (status == RIO_OK && p->type == RIO_T_CLOSE) fwd_drop(p->c, p->close_handle);
    to_client(p->c, h->type & ~RIO_REPLY, p->client_id, body, h->len);
    srv_conn_release(p->c, p->n);
  }
  free(p->open_path);
  free(p);
}

static void fail_all(void) {
  pthread_mutex_lock(&up.mu);
  up.dead = 1;
  pending *all = up.pend;
  up.pend = NULL;
  pthread_mutex_unlock(&up.mu);
  uint8_t sb[RIO_STATUS];
  rio_wr w = rio_wr_init(sb, sizeof sb);
  rio_put_status(&w, RIO_EIO);
  rio_hdr h = {RIO_VERSION, 0, 0, RIO_STATUS, 0};
  while (all) {
    pending *p = all;
    all = p->next;
    h.type = (uint16_t)(p->type | RIO_REPLY);
    deliver(p, &h, sb);
  }
}

static void *reader_main(void *arg) {
  (void)arg;
  for (;;) {
    uint8_t hb[RIO_HDR_SIZE];
    rio_hdr h;
    if (rio_link_read(&up.link, hb, sizeof hb, -1) || rio_hdr_decode(hb, &h) || h.len > up.max_request + 64) break;
    uint8_t *body = malloc(h.len ? h.len : 1);
    if (!body || rio_link_read(&up.link, body, h.len, UP_TIMEOUT_MS * 6)) {
      free(body);
      break;
    }
    pthread_mutex_lock(&up.mu);
    pending **q = &up.pend, *p = NULL;
    while (*q && (*q)->up_id != h.id) q = &(*q)->next;
    if (*q) p = *q, *q = p->next;
    pthread_mutex_unlock(&up.mu);
    if (p) deliver(p, &h, body);
    else srv_log(LOG_WARN, "forward: a reply for no request (id %llu) from upstream", (unsigned long long)h.id);
    free(body);
  }
  if (!__atomic_load_n(&up.stop, __ATOMIC_ACQUIRE))
    srv_log(LOG_ERROR, "forward: the upstream server closed the connection; requests fail with EIO");
  fail_all();
  return NULL;
}

/* ---- the client side -------------------------------------------------------------------------- */
int srv_forward_start(void) {
  char why[512];
  if (up_connect(srv->cfg.forward_to, why, sizeof why)) {
    fprintf(stderr, "pario-server: --forward-to %s: %s\n", srv->cfg.forward_to, why);
    return -1;
  }
  if (pthread_create(&up.reader, NULL, reader_main, NULL) || pthread_create(&up.timer, NULL, timer_main, NULL))
    return -1;
  return 0;
}

void srv_forward_stop(void) {
  srv_log(LOG_INFO, "forward: %llu tagged requests: %llu merged into %llu, %llu sent part by part",
          (unsigned long long)n_tagged, (unsigned long long)n_merged_parts, (unsigned long long)n_merged_groups,
          (unsigned long long)n_late_parts);
  __atomic_store_n(&up.stop, 1, __ATOMIC_RELEASE);
  shutdown(up.link.fd, SHUT_RDWR);
  pthread_join(up.reader, NULL);
  pthread_join(up.timer, NULL);
  rio_link_close(&up.link);
}

/* The handle a request names (first u64 of the body), for the types that have one. */
static int has_handle(unsigned t) {
  return t == RIO_T_CLOSE || t == RIO_T_STAT || t == RIO_T_SET_SIZE || t == RIO_T_PREALLOCATE || t == RIO_T_SYNC ||
         t == RIO_T_READ || t == RIO_T_WRITE || t == RIO_T_LOCK || t == RIO_T_COUNTER ||
         t == RIO_T_CHECKSUM;
}

/* Decode like the server would, so nothing malformed goes upstream: 0, or a status. */
static int check_body(unsigned t, const uint8_t *b, size_t n, rio_io_req *io, size_t *hb, char **path) {
  uint64_t x, y, z;
  rio_open_req o;
  rio_lock_req l;
  rio_counter_req k;
  rio_checksum_req s;
  const char *p;
  uint32_t pl;
  int e;
  switch (t) {
  case RIO_T_PING: case RIO_T_CLOSE: case RIO_T_STAT: case RIO_T_SYNC: return rio_decode_handle(b, n, &x);
  case RIO_T_SET_SIZE: return rio_decode_handle2(b, n, &x, &y);
  case RIO_T_PREALLOCATE: return rio_decode_handle3(b, n, &x, &y, &z);
  case RIO_T_LOCK: return rio_decode_lock(b, n, &l);
  case RIO_T_COUNTER: return rio_decode_counter(b, n, &k);
  case RIO_T_CHECKSUM: return rio_decode_checksum(b, n, &s);
  case RIO_T_DELETE: return rio_decode_path(b, n, &p, &pl);
  case RIO_T_OPEN:
    if ((e = rio_decode_open(b, n, &o)) != 0) return e;
    *path = strndup(o.path, o.pathlen);
    return *path ? 0 : RIO_ENOMEM;
  case RIO_T_READ: case RIO_T_WRITE: return rio_decode_io(b, n, (uint32_t)n, t, srv->cfg.max_segments, io, hb);
  default: return RIO_EPROTO;
  }
}

int srv_forward_request(srv_conn *c, const rio_hdr *h, uint8_t *body, size_t n) {
  if (!c->fwd && !(c->fwd = calloc(1, sizeof(fwd_conn)))) {
    free(body);
    srv_conn_release(c, n);
    return -1;
  }
  rio_io_req io;
  size_t hb = 0;
  char *path = NULL;
  int st = check_body(h->type, body, n, &io, &hb, &path);
  if (st == RIO_OK && has_handle(h->type) && !fwd_path(c, rio_load_u64(body))) st = RIO_EBADF;
  if (st != RIO_OK) {
    if (st == RIO_EPROTO) {
      srv_log(LOG_WARN, "conn %llu (%s): protocol error: malformed request body (type %u); closing",
              (unsigned long long)c->serial, c->peer, h->type);
      srv_reply_error(c, h->id, RIO_EPROTO, "malformed request body");
    } else {
      srv_reply(c, h->type, h->id, st, NULL, 0);
    }
    free(body), free(path);
    srv_conn_release(c, n);
    return st == RIO_EPROTO ? -1 : 0;
  }
  if ((h->type == RIO_T_READ || h->type == RIO_T_WRITE) && io.coll_id && io.coll_n >= 2 && io.coll_n <= MAX_PARTS) {
    group_add(c, h->id, body, n, hb, &io, h->type);
    return 0;
  }
  pending *p = calloc(1, sizeof *p);
  if (!p) {
    free(body), free(path);
    srv_reply_error(c, h->id, RIO_ENOMEM, "forwarder: out of memory");
    srv_conn_release(c, n);
    return 0;
  }
  p->c = c, p->client_id = h->id, p->type = h->type, p->open_path = path, p->n = n;
  if (h->type == RIO_T_CLOSE) p->close_handle = rio_load_u64(body);
  if (up_request(p, h->type, body, n)) {
    pthread_mutex_lock(&up.mu);
    int listed = 0;
    for (pending *q = up.pend; q; q = q->next) listed |= q == p;
    pthread_mutex_unlock(&up.mu);
    if (!listed) { /* upstream already dead */
      free(p->open_path);
      free(p);
      srv_reply_error(c, h->id, RIO_EIO, "forwarder: the upstream server is gone");
      srv_conn_release(c, n);
    }
  }
  free(body);
  return 0;
}

/* A client left: close its handles upstream (a lock it waits for is cancelled by that), so its
 * requests in flight end; conn.c then waits for them. */
void srv_forward_end(srv_conn *c) {
  fwd_conn *f = c->fwd;
  if (!f) return;
  flush_groups(has_part_of, c, 0, "(a client left)"); /* the others need not wait for its parts */
  pthread_mutex_lock(&c->mu);
  uint32_t n = f->n;
  uint64_t *hs = n ? malloc(n * sizeof *hs) : NULL;
  if (hs) memcpy(hs, f->handles, n * sizeof *hs);
  pthread_mutex_unlock(&c->mu);
  for (uint32_t i = 0; hs && i < n; i++) {
    pending *p = calloc(1, sizeof *p);
    uint8_t b[8];
    rio_store_u64(b, hs[i]);
    if (p) p->type = RIO_T_CLOSE;
    if (p) up_request(p, RIO_T_CLOSE, b, 8);
  }
  free(hs);
}

void srv_forward_free(srv_conn *c) {
  fwd_conn *f = c->fwd;
  if (!f) return;
  for (uint32_t i = 0; i < f->n; i++) free(f->paths[i]);
  free(f->handles);
  free(f->paths);
  free(f);
  c->fwd = NULL;
}
