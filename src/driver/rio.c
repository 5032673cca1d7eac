/* x-rio:// driver: files on a pario-server (src/rio/PROTOCOL.md; design in docs/remote.md).
 * This file is the driver's table and its data path: settings of a handle (hints and
 * environment), the deferred OPEN, the small requests, and list transfers cut into READ and
 * WRITE requests within the server's limits, waited for or submitted. The connections they
 * travel on are rioconn.c's, the transport and login rio/'s. */
#include "core/common.h"
#include "driver/rio.h"
#include "driver/rioconn.h"
#include "rio/checksum.h"
#include "rio/login.h"
#include "rio/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_TIMEOUT_MS 30000

/* ---- handles ------------------------------------------------------------------------------ */

typedef struct rio_fh {
  rio_where w;
  char *name;             /* "host:port/path" as given; w.path points into it */
  int flags;              /* RIO_O_* for the (possibly deferred) OPEN */
  unsigned perm;
  pthread_mutex_t lock;   /* the deferred OPEN happens once */
  rio_conn *conn;         /* NULL until the handle reached the server */
  uint64_t sh;            /* the server's handle, valid on conn only */
  unsigned long long nio; /* READ and WRITE requests sent */
} rio_fh;

static uint32_t rio_flags(int flags) {
  int acc = flags & O_ACCMODE;
  uint32_t f = acc == O_WRONLY ? RIO_O_WRONLY : acc == O_RDWR ? RIO_O_RDWR : RIO_O_RDONLY;
  if (flags & O_CREAT) f |= RIO_O_CREAT;
  if (flags & O_EXCL) f |= RIO_O_EXCL;
  if (flags & O_TRUNC) f |= RIO_O_TRUNC;
  if (flags & O_APPEND) f |= RIO_O_APPEND;
  return f;
}

static const char *setting(const pario_drv_args *a, const char *key, const char *env) {
  const char *v = a && a->hint ? a->hint(a->ctx, key) : NULL;
  if (!v || !*v) v = getenv(env);
  return v && *v ? v : NULL;
}

/* pario_rio_tls's value: 1, 0, or -1 for a word it does not know (never silently off). */
static int tls_word(const char *v) {
  static const char *const on[] = {"true", "yes", "on", "1", "enable"}, *const off[] = {"false", "no", "off", "0", "disable"};
  if (!v) return 0;
  for (int i = 0; i < 5; i++) {
    if (!strcasecmp(v, on[i])) return 1;
    if (!strcasecmp(v, off[i])) return 0;
  }
  return -1;
}

/* A failure's one line (what to do) into why, and to the log at PARIO_LOG=1. Returns e. */
static int tell(char *why, size_t wn, int e, const char *name, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int tell(char *why, size_t wn, int e, const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, wn, fmt, ap);
  va_end(ap);
  pario_log(1, "x-rio://%s: %s", name, why);
  return e;
}

/* A failure whose line is in why already (or, if empty, the errno's): to the log. Returns e. */
static int logged(const char *why, int e, const char *name) {
  pario_log(1, "x-rio://%s: %s", name, why[0] ? why : strerror(e));
  return e;
}

/* The name, the secret and the timeout: hints win over the environment. */
static int configure(rio_where *w, const char *name, const pario_drv_args *a, char *why, size_t wn) {
  if (rio_parse_name(name, w->host, sizeof w->host, w->port, sizeof w->port, &w->path))
    return tell(why, wn, EINVAL, name, "not a remote file name: write x-rio://HOST:PORT/PATH");
  const char *t = setting(a, "pario_rio_timeout", "PARIO_RIO_TIMEOUT");
  double s = t ? strtod(t, NULL) : 0;
  w->timeout_ms = s > 0 && s < 1e7 ? (long long)(s * 1000) : DEFAULT_TIMEOUT_MS;
  if (w->timeout_ms < 1) w->timeout_ms = 1;
  const char *tls = setting(a, "pario_rio_tls", "PARIO_RIO_TLS"), *ca = setting(a, "pario_rio_tls_ca", "PARIO_RIO_TLS_CA");
  if ((w->tls = tls_word(tls)) < 0)
    return tell(why, wn, EINVAL, name, "pario_rio_tls / PARIO_RIO_TLS is '%s': use true/false, yes/no, on/off, 1/0 "
                "or enable/disable", tls);
  snprintf(w->tls_ca, sizeof w->tls_ca, "%s", ca ? ca : "");
  const char *user = setting(a, "pario_rio_user", "PARIO_RIO_USER");
  if (user && (!*user || strlen(user) > RIO_MAX_CRED_NAME))
    return tell(why, wn, EINVAL, name, "pario_rio_user / PARIO_RIO_USER must name a credential of 1 to %d characters",
                RIO_MAX_CRED_NAME);
  snprintf(w->user, sizeof w->user, "%s", user ? user : "");
  const char *sf = setting(a, "pario_rio_secret_file", "PARIO_RIO_SECRET_FILE");
  if (!sf) /* without the secret the server cannot be reached: access denied */
    return tell(why, wn, EACCES, name, "no secret file: set the hint pario_rio_secret_file or PARIO_RIO_SECRET_FILE");
  snprintf(w->secret_file, sizeof w->secret_file, "%s", sf);
  char what[256];
  int e = rio_load_secret(sf, w->secret, &w->slen, what, sizeof what);
  return e ? tell(why, wn, e, name, "%s", what) : 0;
}

/* The handle on the server: the deferred OPEN, on the first operation that needs it. An
 * OPEN that fails is tried again by the next operation. why: the failure's one line. */
static int reach(rio_fh *h, rio_conn **c, char *why, size_t wn) {
  pthread_mutex_lock(&h->lock);
  int e = 0;
  if (!h->conn) {
    rio_conn *nc;
    e = rio_conn_get(&h->w, &nc, why, wn);
    if (e) logged(why, e, h->name);
    if (!e) {
      uint8_t b[RIO_MAX_PATH + 16];
      rio_req r;
      size_t n = rio_encode_open(b, sizeof b, (uint32_t)h->flags, h->perm, h->w.path);
      e = n ? rio_call(nc, &r, RIO_T_OPEN, b, n, h->w.timeout_ms) : ENAMETOOLONG;
      if (!e && r.fixedn != 16) e = EPROTO;
      uint32_t changes = RIO_O_ACCMODE | RIO_O_CREAT | RIO_O_TRUNC | RIO_O_APPEND;
      if (e == EACCES && h->w.user[0] && ((uint32_t)h->flags & changes) != RIO_O_RDONLY)
        tell(why, wn, e, h->name, "open for writing refused: credential %s (pario_rio_user) is read-only on the "
             "server?", h->w.user);
      if (e) rio_conn_put(nc);
      else h->sh = rio_load_u64(r.fixed), h->conn = nc;
    }
  }
  *c = h->conn;
  pthread_mutex_unlock(&h->lock);
  return e;
}

static int ensure(rio_fh *h, rio_conn **c) {
  char why[256] = "";
  return reach(h, c, why, sizeof why);
}

/* Where the caller of open_ex / unlink_ex takes the reason of a failure from. */
static void hand_why(const pario_drv_args *a, const char *why) {
  if (a && a->why && a->whylen && why[0]) snprintf(a->why, a->whylen, "%s", why);
}

static void fh_free(rio_fh *h) {
  pthread_mutex_destroy(&h->lock);
  free(h->name);
  free(h);
}

static int rio_open_ex(const char *path, int flags, unsigned perm, const pario_drv_args *a, void **handle) {
  rio_fh *h = calloc(1, sizeof *h);
  if (!h || !(h->name = strdup(path))) {
    free(h);
    return ENOMEM;
  }
  pthread_mutex_init(&h->lock, NULL);
  char why[256] = "";
  int e = configure(&h->w, h->name, a, why, sizeof why);
  h->flags = (int)rio_flags(flags);
  h->perm = perm;
  rio_conn *c;
  if (!e && !(a && a->defer)) e = reach(h, &c, why, sizeof why);
  if (e) hand_why(a, why), fh_free(h);
  else *handle = h;
  return e;
}

static int rio_open(const char *path, int flags, unsigned perm, void **handle) {
  return rio_open_ex(path, flags, perm, NULL, handle);
}

static int rio_close(void *handle) {
  rio_fh *h = handle;
  int e = 0;
  if (h->conn) {
    uint8_t b[8];
    rio_req r;
    rio_store_u64(b, h->sh);
    e = rio_call(h->conn, &r, RIO_T_CLOSE, b, 8, h->w.timeout_ms);
    rio_conn_put(h->conn);
  }
  fh_free(h);
  return e;
}

/* A request on the file's server handle: its body (n bytes, encoded with handle 0) starts with
 * the handle, which is known only after the deferred OPEN, so it is stored there then. */
static int handle_call(rio_fh *h, unsigned type, uint8_t *body, size_t n, rio_req *r) {
  rio_conn *c;
  int e = ensure(h, &c);
  if (e) return e;
  if (n < 8) return EINVAL; /* cannot happen: every caller's buffer fits its body */
  rio_store_u64(body, h->sh);
  return rio_call(c, r, type, body, n, h->w.timeout_ms);
}

/* A request whose body is the server handle and nv-1 more numbers. */
static int handle_op(rio_fh *h, unsigned type, int nv, uint64_t a, uint64_t b, rio_req *r) {
  uint64_t v[3] = {0, a, b};
  uint8_t body[24];
  return handle_call(h, type, body, rio_encode_u64s(body, sizeof body, nv, v), r);
}

static int rio_sync(void *handle) {
  rio_req r;
  return handle_op(handle, RIO_T_SYNC, 1, 0, 0, &r);
}

static int rio_truncate(void *handle, off_t size) {
  rio_req r;
  return size < 0 ? EINVAL : handle_op(handle, RIO_T_SET_SIZE, 2, (uint64_t)size, 0, &r);
}

static int rio_allocate(void *handle, off_t offset, off_t len) {
  rio_req r;
  return offset < 0 || len < 0 ? EINVAL : handle_op(handle, RIO_T_PREALLOCATE, 3, (uint64_t)offset, (uint64_t)len, &r);
}

static int rio_size(void *handle, off_t *size) {
  rio_req r;
  int e = handle_op(handle, RIO_T_STAT, 1, 0, 0, &r);
  if (!e && r.fixedn != 8) e = EPROTO;
  if (!e) *size = (off_t)rio_load_u64(r.fixed);
  return e;
}

static int rio_lock(void *handle, int op, off_t offset, off_t len) {
  rio_req r;
  uint8_t b[40];
  rio_lock_req m = {0, (uint32_t)op, (uint64_t)offset, (uint64_t)len};
  return handle_call(handle, RIO_T_LOCK, b, rio_encode_lock(b, sizeof b, &m), &r);
}

/* Byte-range locks are part of the protocol: every server has them. */
static int rio_lock_probe(void *handle, int op) {
  (void)handle, (void)op;
  return 0;
}

static int rio_counter(void *handle, uint64_t key, int op, int64_t value, int64_t *old) {
  rio_req r;
  uint8_t b[40];
  rio_counter_req m = {0, key, (uint32_t)op, value};
  int e = handle_call(handle, RIO_T_COUNTER, b, rio_encode_counter(b, sizeof b, &m), &r);
  if (!e && r.fixedn != 8) e = EPROTO;
  if (!e) *old = (int64_t)rio_load_u64(r.fixed);
  return e;
}

/* CHECKSUM piece by piece: each request sums at most max_request bytes on the server and the
 * next continues from its value (PROTOCOL.md), so a huge file never holds a worker long. */
static int rio_checksum(void *handle, unsigned algo, off_t offset, off_t len, uint32_t *value, off_t *bytes) {
  rio_fh *h = handle;
  rio_conn *c;
  int e = ensure(h, &c);
  if (e) return e;
  rio_checksum_req m = {h->sh, algo, rio_sum_start(algo), (uint64_t)offset, 0};
  uint64_t left = (uint64_t)len, total = 0;
  for (;;) {
    uint64_t piece = len == 0 || left > c->max_request ? c->max_request : left;
    uint8_t b[RIO_CHECKSUM_BODY];
    rio_req r;
    m.len = piece;
    e = rio_call(c, &r, RIO_T_CHECKSUM, b, rio_encode_checksum(b, sizeof b, &m), h->w.timeout_ms);
    if (!e && r.fixedn != 16) e = EPROTO;
    if (e) return e;
    uint64_t got = rio_load_u64(r.fixed + 8);
    if (got > piece) return EPROTO;
    m.start = (uint32_t)rio_load_u64(r.fixed);
    m.offset += got, total += got, left -= len ? got : 0;
    if (got == 0 || (len && left == 0)) break; /* not at a short reply: a forwarder's upstream may cap lower */
  }
  *value = m.start;
  *bytes = (off_t)total;
  return 0;
}

static int rio_unlink_ex(const char *path, const pario_drv_args *a) {
  rio_where *w = calloc(1, sizeof *w);
  if (!w) return ENOMEM;
  char why[256] = "";
  int e = configure(w, path, a, why, sizeof why);
  rio_conn *c = NULL;
  if (!e && (e = rio_conn_get(w, &c, why, sizeof why)) != 0) logged(why, e, path);
  if (!e) {
    uint8_t b[RIO_MAX_PATH + 8];
    rio_req r;
    size_t n = rio_encode_path(b, sizeof b, w->path);
    e = n ? rio_call(c, &r, RIO_T_DELETE, b, n, w->timeout_ms) : ENAMETOOLONG;
    if (e == EACCES && w->user[0])
      tell(why, sizeof why, e, path, "delete refused: credential %s (pario_rio_user) is read-only on the server?",
           w->user);
    rio_conn_put(c);
  }
  hand_why(e ? a : NULL, why);
  free(w);
  return e;
}

static int rio_unlink(const char *path) { return rio_unlink_ex(path, NULL); }

/* ---- data: READ and WRITE requests -------------------------------------------------------- */

/* One request of a list transfer: its segments (cut where a request ends), its slice of the
 * memory iovecs, and the bytes it moves. */
typedef struct io_part {
  rio_req r;
  uint8_t *body;   /* io header + segments */
  size_t blen;
  struct iovec *mem;
  int memcnt;
  uint64_t bytes;
} io_part;

/* A cursor over the memory iovecs: the next len bytes as iovecs appended to p->mem. */
typedef struct mem_cur {
  const struct iovec *iov;
  int cnt, i;
  size_t off;
} mem_cur;

static int take_mem(mem_cur *m, uint64_t len, io_part *p, int *cap) {
  while (len > 0 && m->i < m->cnt) {
    size_t avail = m->iov[m->i].iov_len - m->off, k = avail < len ? avail : (size_t)len;
    if (k == 0) {
      m->i++, m->off = 0;
      continue;
    }
    struct iovec *last = p->memcnt ? &p->mem[p->memcnt - 1] : NULL;
    char *at = (char *)m->iov[m->i].iov_base + m->off;
    if (last && (char *)last->iov_base + last->iov_len == at) { /* adjacent pieces: one iovec */
      last->iov_len += k;
      m->off += k;
      len -= k;
      continue;
    }
    if (p->memcnt == *cap) {
      int nc = *cap ? 2 * *cap : 16;
      struct iovec *nv = realloc(p->mem, sizeof *nv * (size_t)nc);
      if (!nv) return ENOMEM;
      p->mem = nv, *cap = nc;
    }
    p->mem[p->memcnt++] = (struct iovec){(char *)m->iov[m->i].iov_base + m->off, k};
    m->off += k;
    len -= k;
  }
  return len ? EINVAL : 0; /* memory shorter than the segments */
}

/* Cut segs into requests within the server's limits: at most max_segments segments and a
 * body (and a READ reply) of at most max_request bytes. */
static int plan_parts(const rio_conn *c, uint64_t sh, const pario_seg *segs, int nseg, const struct iovec *mem,
                      int memcnt, pario_drv_coll *coll, io_part **out, int *nparts) {
  uint64_t room_total = c->max_request - RIO_IO_HDR - RIO_STATUS - 8 - RIO_SEG; /* one segment's worth kept */
  uint32_t maxseg = c->max_segments;
  mem_cur m = {mem, memcnt, 0, 0};
  io_part *parts = NULL;
  int np = 0, cap = 0, e = 0, s = 0;
  uint64_t used_in_seg = 0; /* bytes of segs[s] already placed */
  while (!e && s < nseg) {
    if (np == cap) {
      int nc = cap ? 2 * cap : 4;
      io_part *pp = realloc(parts, sizeof *pp * (size_t)nc);
      if (!pp) { e = ENOMEM; break; }
      parts = pp, cap = nc;
    }
    io_part *p = &parts[np++];
    memset(p, 0, sizeof *p);
    /* first pass: how many segments (or pieces of one) fit */
    uint64_t room = room_total, bytes = 0;
    int k = 0, t = s;
    uint64_t u = used_in_seg;
    while (t < nseg && (uint32_t)k < maxseg && room >= RIO_SEG) {
      uint64_t left = (uint64_t)segs[t].len - u, take;
      room -= RIO_SEG;
      take = left < room ? left : room;
      if (take == 0 && left > 0) break;
      k++, bytes += take, room -= take;
      if (take < left) { u += take; break; }
      t++, u = 0;
    }
    p->blen = rio_io_hdr_bytes((uint32_t)k);
    p->body = malloc(p->blen);
    if (!p->body) { e = ENOMEM; break; }
    rio_wr w = rio_wr_init(p->body, p->blen);
    uint64_t coll_id;
    uint32_t coll_n;
    pario_drv_coll_next(coll, &coll_id, &coll_n); /* a collective access's parts carry its tag */
    rio_put_io_hdr(&w, sh, coll_id, coll_n, (uint32_t)k);
    int memcap = 0;
    for (int i = 0; i < k && !e; i++) { /* second pass: from (s, used_in_seg) to (t, u) */
      uint64_t take = s == t ? u - used_in_seg : (uint64_t)segs[s].len - used_in_seg;
      rio_put_u64(&w, (uint64_t)segs[s].off + used_in_seg);
      rio_put_u64(&w, take);
      e = take_mem(&m, take, p, &memcap);
      used_in_seg += take;
      if (used_in_seg == (uint64_t)segs[s].len) s++, used_in_seg = 0;
    }
    p->bytes = bytes;
  }
  *out = parts;
  *nparts = np;
  return e;
}

static void free_parts(io_part *parts, int np) {
  for (int i = 0; i < np; i++) {
    free(parts[i].body);
    free(parts[i].mem);
  }
  free(parts);
}

/* A submitted list transfer (driver.h submit): its requests, and what completes it. */
struct rio_aio {
  rio_qnode q;    /* in the connection's send queue (first: rioconn.c's queue links it) */
  rio_fh *h;
  int wr, np;
  io_part *parts;
  int left; /* requests not done yet, plus one while the submitter is still sending */
  void (*done)(void *arg, int err, size_t bytes);
  void *arg;
};

/* Put every request of a list transfer on the wire before any reply is awaited, so the server
 * works on one while the next travels. */
static void send_parts(rio_fh *h, rio_conn *c, int wr, io_part *parts, int np, rio_aio *a) {
  for (int i = 0; i < np; i++) {
    io_part *p = &parts[i];
    p->r.aio = a;
    if (!wr) p->r.iov = p->mem, p->r.iovcnt = p->memcnt, p->r.want = p->bytes;
    rio_start(c, &p->r, wr ? RIO_T_WRITE : RIO_T_READ, p->body, p->blen, wr ? p->mem : NULL, wr ? p->memcnt : 0,
          wr ? p->bytes : 0);
  }
  __atomic_add_fetch(&h->nio, (unsigned long long)np, __ATOMIC_RELAXED);
}

/* The result of a list transfer whose requests are all done: the first error, and the bytes
 * in segment order up to the first short read (end of file). */
static int collect(int wr, const io_part *parts, int np, size_t *done) {
  int e = 0, short_read = 0;
  *done = 0;
  for (int i = 0; i < np; i++) {
    const io_part *p = &parts[i];
    int pe = p->r.err;
    uint64_t got = wr ? (p->r.fixedn == 8 ? rio_load_u64(p->r.fixed) : 0) : p->r.got;
    if (!pe && wr && (p->r.fixedn != 8 || got != p->bytes)) pe = p->r.fixedn != 8 ? EPROTO : EIO;
    if (!e) e = pe;
    if (!e && !short_read) *done += (size_t)got;
    if (got < p->bytes) short_read = 1; /* end of file: nothing after it counts */
  }
  return e;
}

/* One request of a submitted transfer is done (or the submitter has sent them all): the last
 * one completes the transfer. The memory of the requests goes with it. */
void rio_aio_part_done(rio_aio *a) {
  if (__atomic_sub_fetch(&a->left, 1, __ATOMIC_ACQ_REL) != 0) return;
  size_t done;
  int e = collect(a->wr, a->parts, a->np, &done);
  free_parts(a->parts, a->np);
  void (*cb)(void *, int, size_t) = a->done;
  void *arg = a->arg;
  free(a);
  cb(arg, e, done);
}

/* Segments as the driver interface allows them: no negative offset or length, no overflow. */
static int check_segs(const pario_seg *segs, int nseg, uint64_t *total) {
  *total = 0;
  for (int i = 0; i < nseg; i++) {
    if (segs[i].off < 0 || segs[i].len < 0 || segs[i].off > INT64_MAX - segs[i].len) return EINVAL;
    *total += (uint64_t)segs[i].len;
  }
  return 0;
}

/* A list transfer, waited for here. */
static int io_list(rio_fh *h, int wr, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt,
                   size_t *done, pario_drv_coll *coll) {
  rio_conn *c;
  io_part *parts = NULL;
  uint64_t total;
  int np = 0, e = ensure(h, &c);
  *done = 0;
  if (!e) e = check_segs(segs, nseg, &total);
  if (!e) e = plan_parts(c, h->sh, segs, nseg, mem, memcnt, coll, &parts, &np);
  if (e) {
    free_parts(parts, np);
    return e;
  }
  send_parts(h, c, wr, parts, np, NULL);
  for (int i = 0; i < np; i++) /* wait for all: nothing may still point at the caller's memory */
    rio_finish(c, &parts[i].r, h->w.timeout_ms);
  e = collect(wr, parts, np, done);
  free_parts(parts, np);
  return e;
}

/* Writes over this size are put on the wire by the connection's sender thread, so that the
 * caller of a large MPI_File_iwrite goes back to computing at once; smaller requests are sent
 * by the calling thread (a hand-off would cost more than the send). */
#define SUBMIT_INLINE_MAX (64u << 10)

/* The connection's sender thread: a queued write goes on the wire as the caller would send
 * it, then the thread lets go of the transfer (the submitter's share). */
void rio_aio_send(rio_conn *c, rio_aio *a) {
  send_parts(a->h, c, a->wr, a->parts, a->np, a);
  rio_aio_part_done(a);
}

/* driver.h submit: the requests are sent now, by the calling thread or (large writes) the
 * connection's sender thread; the receiver completes the transfer when the last reply has
 * come (or the connection has died). */
static int rio_submit(void *handle, int rw, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt,
                      pario_drv_coll *coll, void (*done)(void *arg, int err, size_t bytes), void *arg) {
  rio_fh *h = handle;
  rio_conn *c;
  io_part *parts = NULL;
  uint64_t total;
  int np = 0, e = check_segs(segs, nseg, &total);
  if (e) return e;
  rio_aio *a = calloc(1, sizeof *a);
  if (!a) return ENOMEM;
  e = ensure(h, &c); /* a deferred OPEN: a round trip, once per handle */
  if (!e) e = plan_parts(c, h->sh, segs, nseg, mem, memcnt, coll, &parts, &np);
  if (!e) {
    *a = (rio_aio){{NULL}, h, rw != 0, np, parts, np + 1, done, arg};
    if (rw && total > SUBMIT_INLINE_MAX) {
      if ((e = rio_queue_send(c, a)) == 0) return 0; /* the sender thread holds the share now */
    } else {
      send_parts(h, c, rw != 0, parts, np, a);
      rio_aio_part_done(a); /* the submitter's share: from now on the replies complete it */
      return 0;
    }
  }
  free_parts(parts, np);
  free(a);
  return e;
}

static int rio_preadl(void *h, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt, size_t *done,
                      pario_drv_coll *coll) {
  return io_list(h, 0, segs, nseg, mem, memcnt, done, coll);
}

static int rio_pwritel(void *h, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt, size_t *done,
                       pario_drv_coll *coll) {
  return io_list(h, 1, segs, nseg, mem, memcnt, done, coll);
}

static int contig(void *h, int wr, const struct iovec *iov, int cnt, off_t offset, size_t *done, pario_drv_coll *coll) {
  size_t total = 0;
  for (int i = 0; i < cnt; i++) total += iov[i].iov_len;
  pario_seg s = {offset, (off_t)total};
  *done = 0;
  return total ? io_list(h, wr, &s, 1, iov, cnt, done, coll) : 0;
}

static int rio_preadv(void *h, const struct iovec *iov, int cnt, off_t offset, size_t *done, pario_drv_coll *coll) {
  return contig(h, 0, iov, cnt, offset, done, coll);
}

static int rio_pwritev(void *h, const struct iovec *iov, int cnt, off_t offset, size_t *done, pario_drv_coll *coll) {
  return contig(h, 1, iov, cnt, offset, done, coll);
}

void pario_rio_describe(void *handle, pario_rio_info *out) {
  rio_fh *h = handle;
  memset(out, 0, sizeof *out);
  snprintf(out->server, sizeof out->server, strchr(h->w.host, ':') ? "[%s]:%s" : "%s:%s", h->w.host, h->w.port);
  snprintf(out->secret_file, sizeof out->secret_file, "%s", h->w.secret_file);
  snprintf(out->tls_ca, sizeof out->tls_ca, "%s", h->w.tls_ca);
  out->tls = h->w.tls;
  out->timeout_ms = h->w.timeout_ms;
  out->requests = __atomic_load_n(&h->nio, __ATOMIC_RELAXED);
  pthread_mutex_lock(&h->lock);
  out->connected = h->conn != NULL;
  out->version = h->conn ? h->conn->version : RIO_PROTO_VERSION;
  pthread_mutex_unlock(&h->lock);
}

const pario_driver pario_driver_rio = {
    .name = "rio",
    .open = rio_open,
    .close = rio_close,
    .preadv = rio_preadv,
    .pwritev = rio_pwritev,
    .sync = rio_sync,
    .truncate = rio_truncate,
    .allocate = rio_allocate,
    .size = rio_size,
    .lock = rio_lock,
    .lock_probe = rio_lock_probe,
    .unlink = rio_unlink,
    .remote = 1,
    .hint_prefix = "pario_rio_",
    .io_threads = 16, /* nonblocking collectives of a file the engine's workers run at once (the
                         others are submitted); seed 004 allowed 64 */
    .list_window = 16 << 20, /* a request per 16 MiB of an access: one round trip, not 32 */
    .open_ex = rio_open_ex,
    .unlink_ex = rio_unlink_ex,
    .preadl = rio_preadl,
    .pwritel = rio_pwritel,
    .counter = rio_counter,
    .submit = rio_submit,
    .checksum = rio_checksum,
};

__attribute__((constructor)) static void rio_register(void) { pario_driver_register("x-rio://", &pario_driver_rio); }
