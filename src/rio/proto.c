/* The remote I/O protocol codec (PROTOCOL.md beside this file): frame headers, bounded
 * little-endian readers/writers, request bodies, status codes and HMAC authentication. Shared
 * by the client driver and pario-server; it never trusts a length it has not checked. */
#include "proto.h"
#include "checksum.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- status codes --------------------------------------------------------------------------- */
static const struct {
  int status, err;
} status_table[] = {
    {RIO_OK, 0},
    {RIO_ENOENT, ENOENT},
    {RIO_EACCES, EACCES},
    {RIO_EEXIST, EEXIST},
    {RIO_EISDIR, EISDIR},
    {RIO_ENOTDIR, ENOTDIR},
    {RIO_ENOSPC, ENOSPC},
    {RIO_EIO, EIO},
    {RIO_EINVAL, EINVAL},
    {RIO_EBADF, EBADF},
    {RIO_EFBIG, EFBIG},
    {RIO_EROFS, EROFS},
    {RIO_ENAMETOOLONG, ENAMETOOLONG},
    {RIO_EDQUOT, EDQUOT},
    {RIO_ENOMEM, ENOMEM},
    {RIO_EPROTO, EPROTO},
    {RIO_EAUTH, EACCES},
    {RIO_ETOOBIG, E2BIG},
    {RIO_ELOOP, ELOOP},
    {RIO_EBUSY, EBUSY},
    {RIO_EOTHER, EIO},
};

int rio_status_from_errno(int e) {
  if (e == 0) return RIO_OK;
  if (e == EXDEV) return RIO_EACCES; /* openat2 RESOLVE_BENEATH: the path leaves the root */
  if (e == E2BIG) return RIO_ETOOBIG;
  for (size_t i = 1; i < sizeof status_table / sizeof status_table[0]; i++)
    if (status_table[i].err == e && status_table[i].status != RIO_EAUTH) return status_table[i].status;
  return RIO_EOTHER;
}

int rio_errno_from_status(int status) {
  if (status < 0 || status >= RIO_NSTATUS) return EIO;
  return status_table[status].err;
}

/* ---- frame header --------------------------------------------------------------------------- */
void rio_hdr_encode(uint8_t out[RIO_HDR_SIZE], const rio_hdr *h) {
  rio_wr w = rio_wr_init(out, RIO_HDR_SIZE);
  rio_put_u32(&w, RIO_MAGIC);
  rio_put_u16(&w, h->version);
  rio_put_u16(&w, h->type);
  rio_put_u32(&w, h->flags);
  rio_put_u32(&w, h->len);
  rio_put_u64(&w, h->id);
}

int rio_hdr_decode(const uint8_t in[RIO_HDR_SIZE], rio_hdr *h) {
  rio_rd r = rio_rd_init(in, RIO_HDR_SIZE);
  uint32_t magic = rio_get_u32(&r);
  h->version = rio_get_u16(&r);
  h->type = rio_get_u16(&r);
  h->flags = rio_get_u32(&r);
  h->len = rio_get_u32(&r);
  h->id = rio_get_u64(&r);
  return magic == RIO_MAGIC && h->version == RIO_VERSION ? 0 : RIO_EPROTO;
}

uint32_t rio_request_min(unsigned type) {
  switch (type) {
  case RIO_T_HELLO: return 8 + RIO_NONCE;
  case RIO_T_AUTH: return RIO_MAC;
  case RIO_T_PING: case RIO_T_CLOSE: case RIO_T_STAT: case RIO_T_SYNC: return 8;
  case RIO_T_OPEN: return 12 + 1;
  case RIO_T_DELETE: return 4 + 1;
  case RIO_T_SET_SIZE: return 16;
  case RIO_T_PREALLOCATE: return 24;
  case RIO_T_READ: case RIO_T_WRITE: return RIO_IO_HDR;
  case RIO_T_LOCK: return 32;
  case RIO_T_COUNTER: return 32;
  case RIO_T_CHECKSUM: return RIO_CHECKSUM_BODY;
  default: return 0;
  }
}

uint64_t rio_request_limit(unsigned type, int authed, uint64_t max_request) {
  if (!authed) return type == RIO_T_HELLO ? RIO_HELLO_MAX : type == RIO_T_AUTH ? rio_request_min(type) : 0;
  switch (type) {
  case RIO_T_HELLO: case RIO_T_AUTH: case RIO_T_ERROR: return 0; /* not after authentication */
  case RIO_T_OPEN: return 12 + RIO_MAX_PATH;
  case RIO_T_DELETE: return 4 + RIO_MAX_PATH;
  case RIO_T_READ: case RIO_T_WRITE: return max_request;
  default: return rio_request_min(type);
  }
}

/* ---- bounded readers and writers ------------------------------------------------------------ */
static int rd_need(rio_rd *r, size_t n) {
  if (r->err || r->n < n) {
    r->err = 1;
    r->n = 0;
    return 0;
  }
  return 1;
}

static uint64_t rd_le(rio_rd *r, int bytes) {
  if (!rd_need(r, (size_t)bytes)) return 0;
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | r->p[i];
  r->p += bytes;
  r->n -= (size_t)bytes;
  return v;
}

uint16_t rio_get_u16(rio_rd *r) { return (uint16_t)rd_le(r, 2); }
uint32_t rio_get_u32(rio_rd *r) { return (uint32_t)rd_le(r, 4); }
uint64_t rio_get_u64(rio_rd *r) { return rd_le(r, 8); }

const uint8_t *rio_get_bytes(rio_rd *r, size_t n) {
  if (!rd_need(r, n)) return NULL;
  const uint8_t *p = r->p;
  r->p += n;
  r->n -= n;
  return p;
}

static void wr_le(rio_wr *w, uint64_t v, int bytes) {
  if (w->err || w->cap - w->n < (size_t)bytes) {
    w->err = 1;
    return;
  }
  for (int i = 0; i < bytes; i++) w->p[w->n++] = (uint8_t)(v >> (8 * i));
}

void rio_put_u16(rio_wr *w, uint16_t v) { wr_le(w, v, 2); }
void rio_put_u32(rio_wr *w, uint32_t v) { wr_le(w, v, 4); }
void rio_put_u64(rio_wr *w, uint64_t v) { wr_le(w, v, 8); }

void rio_put_bytes(rio_wr *w, const void *p, size_t n) {
  if (w->err || w->cap - w->n < n) {
    w->err = 1;
    return;
  }
  if (n) memcpy(w->p + w->n, p, n);
  w->n += n;
}

void rio_put_status(rio_wr *w, int status) {
  rio_put_u32(w, (uint32_t)status);
  rio_put_u32(w, 0);
}

int rio_get_status(rio_rd *r) {
  int32_t s = (int32_t)rio_get_u32(r);
  (void)rio_get_u32(r);
  if (r->err) return RIO_EPROTO;
  return s >= 0 && s < RIO_NSTATUS ? s : RIO_EOTHER;
}

/* ---- request decoders ----------------------------------------------------------------------- */
/* A decoder succeeds only if it read every byte of the body and no more. */
static int rd_done(const rio_rd *r) { return !r->err && r->n == 0 ? 0 : RIO_EPROTO; }

int rio_decode_hello(const uint8_t *b, size_t n, rio_hello *m) {
  rio_rd r = rio_rd_init(b, n);
  m->min_version = rio_get_u16(&r);
  m->max_version = rio_get_u16(&r);
  m->flags = rio_get_u32(&r);
  const uint8_t *nonce = rio_get_bytes(&r, RIO_NONCE);
  if (nonce) memcpy(m->nonce, nonce, RIO_NONCE);
  m->name_len = 0;
  m->name[0] = '\0';
  if (!r.err && r.n > 0) { /* the credential name: exactly u8 len, len bytes, nothing after */
    m->name_len = (uint8_t)rd_le(&r, 1);
    const uint8_t *name = rio_get_bytes(&r, m->name_len);
    if (m->name_len == 0 || m->name_len > RIO_MAX_CRED_NAME || !name || m->max_version < 2) return RIO_EPROTO;
    memcpy(m->name, name, m->name_len);
    m->name[m->name_len] = '\0';
  }
  if (rd_done(&r) || m->min_version > m->max_version) return RIO_EPROTO;
  return 0;
}

static int get_path(rio_rd *r, const char **path, uint32_t *pathlen) {
  *pathlen = rio_get_u32(r);
  if (r->err || *pathlen == 0) return RIO_EPROTO;
  if (*pathlen > RIO_MAX_PATH) return RIO_ETOOBIG;
  *path = (const char *)rio_get_bytes(r, *pathlen);
  if (!*path || memchr(*path, '\0', *pathlen)) return RIO_EPROTO;
  return 0;
}

int rio_decode_open(const uint8_t *b, size_t n, rio_open_req *m) {
  rio_rd r = rio_rd_init(b, n);
  m->flags = rio_get_u32(&r);
  m->perm = rio_get_u32(&r);
  int e = get_path(&r, &m->path, &m->pathlen);
  if (e) return e;
  if (m->flags & ~(uint32_t)RIO_O_ALL || (m->flags & RIO_O_ACCMODE) == RIO_O_ACCMODE || m->perm > 07777)
    return RIO_EPROTO;
  return rd_done(&r);
}

int rio_decode_path(const uint8_t *b, size_t n, const char **path, uint32_t *pathlen) {
  rio_rd r = rio_rd_init(b, n);
  int e = get_path(&r, path, pathlen);
  return e ? e : rd_done(&r);
}

int rio_decode_handle(const uint8_t *b, size_t n, uint64_t *handle) {
  rio_rd r = rio_rd_init(b, n);
  *handle = rio_get_u64(&r);
  return rd_done(&r);
}

int rio_decode_handle2(const uint8_t *b, size_t n, uint64_t *handle, uint64_t *v) {
  rio_rd r = rio_rd_init(b, n);
  *handle = rio_get_u64(&r);
  *v = rio_get_u64(&r);
  if (*v > (uint64_t)INT64_MAX) return RIO_EINVAL;
  return rd_done(&r);
}

/* A byte range the server can address with off_t: offset and offset + length both fit. */
static int range_ok(uint64_t off, uint64_t len) { return off <= (uint64_t)INT64_MAX && len <= (uint64_t)INT64_MAX - off; }

/* A request's byte range (offset, then length): 0, or RIO_EINVAL where range_ok refuses it. */
static int get_range(rio_rd *r, uint64_t *off, uint64_t *len) {
  *off = rio_get_u64(r);
  *len = rio_get_u64(r);
  return range_ok(*off, *len) ? 0 : RIO_EINVAL;
}

int rio_decode_handle3(const uint8_t *b, size_t n, uint64_t *handle, uint64_t *a, uint64_t *b2) {
  rio_rd r = rio_rd_init(b, n);
  *handle = rio_get_u64(&r);
  int e = get_range(&r, a, b2);
  return e ? e : rd_done(&r);
}

int rio_decode_lock(const uint8_t *b, size_t n, rio_lock_req *m) {
  rio_rd r = rio_rd_init(b, n);
  m->handle = rio_get_u64(&r);
  m->op = rio_get_u32(&r);
  (void)rio_get_u32(&r);
  int range = get_range(&r, &m->offset, &m->len);
  if (rd_done(&r)) return RIO_EPROTO;
  return m->op < RIO_LOCK_READ || m->op > RIO_UNLOCK ? RIO_EINVAL : range;
}

int rio_decode_checksum(const uint8_t *b, size_t n, rio_checksum_req *m) {
  rio_rd r = rio_rd_init(b, n);
  m->handle = rio_get_u64(&r);
  m->algo = rio_get_u32(&r);
  m->start = rio_get_u32(&r);
  int range = get_range(&r, &m->offset, &m->len);
  if (rd_done(&r)) return RIO_EPROTO;
  return m->algo != RIO_SUM_ADLER32 && m->algo != RIO_SUM_CRC32C ? RIO_EINVAL : range;
}

int rio_decode_counter(const uint8_t *b, size_t n, rio_counter_req *m) {
  rio_rd r = rio_rd_init(b, n);
  m->handle = rio_get_u64(&r);
  m->key = rio_get_u64(&r);
  m->op = rio_get_u32(&r);
  (void)rio_get_u32(&r);
  m->value = (int64_t)rio_get_u64(&r);
  if (rd_done(&r)) return RIO_EPROTO;
  return m->op >= RIO_CTR_ADD && m->op <= RIO_CTR_GET ? 0 : RIO_EINVAL;
}

int rio_decode_io(const uint8_t *b, size_t n, uint32_t body_len, unsigned type, uint32_t max_segments,
                  rio_io_req *m, size_t *hdr_bytes) {
  rio_rd r = rio_rd_init(b, n);
  m->handle = rio_get_u64(&r);
  m->coll_id = rio_get_u64(&r);
  m->coll_n = rio_get_u32(&r);
  m->nseg = rio_get_u32(&r);
  if (r.err) return RIO_EPROTO;
  if (m->nseg > max_segments) return RIO_ETOOBIG;
  size_t hb = rio_io_hdr_bytes(m->nseg);
  if (hb > body_len) return RIO_EPROTO;
  m->segs = rio_get_bytes(&r, (size_t)m->nseg * RIO_SEG);
  if (!m->segs) return RIO_EPROTO;
  uint64_t total = 0;
  for (uint32_t i = 0; i < m->nseg; i++) {
    uint64_t off, len;
    rio_seg_at(m, i, &off, &len);
    if (!range_ok(off, len)) return RIO_EINVAL;
    if (len > UINT32_MAX || total + len > UINT32_MAX) return RIO_ETOOBIG; /* a body is < 4 GiB */
    total += len;
  }
  m->total = total;
  *hdr_bytes = hb;
  if (type == RIO_T_READ) return body_len == hb ? 0 : RIO_EPROTO;
  if (type == RIO_T_WRITE) return (uint64_t)body_len == hb + total ? 0 : RIO_EPROTO;
  return RIO_EPROTO;
}

/* ---- client encoders ------------------------------------------------------------------------ */
static size_t wr_result(const rio_wr *w) { return w->err ? 0 : w->n; }

size_t rio_encode_hello(uint8_t *b, size_t cap, const rio_hello *m) {
  rio_wr w = rio_wr_init(b, cap);
  rio_put_u16(&w, m->min_version);
  rio_put_u16(&w, m->max_version);
  rio_put_u32(&w, m->flags);
  rio_put_bytes(&w, m->nonce, RIO_NONCE);
  if (m->name_len) {
    uint8_t nl = m->name_len;
    rio_put_bytes(&w, &nl, 1);
    rio_put_bytes(&w, m->name, m->name_len);
  }
  return wr_result(&w);
}

static void put_path(rio_wr *w, const char *path) {
  size_t n = strlen(path);
  if (n == 0 || n > RIO_MAX_PATH) {
    w->err = 1;
    return;
  }
  rio_put_u32(w, (uint32_t)n);
  rio_put_bytes(w, path, n);
}

size_t rio_encode_open(uint8_t *b, size_t cap, uint32_t flags, uint32_t perm, const char *path) {
  rio_wr w = rio_wr_init(b, cap);
  rio_put_u32(&w, flags);
  rio_put_u32(&w, perm);
  put_path(&w, path);
  return wr_result(&w);
}

size_t rio_encode_path(uint8_t *b, size_t cap, const char *path) {
  rio_wr w = rio_wr_init(b, cap);
  put_path(&w, path);
  return wr_result(&w);
}

size_t rio_encode_u64s(uint8_t *b, size_t cap, int n, const uint64_t *v) {
  rio_wr w = rio_wr_init(b, cap);
  for (int i = 0; i < n; i++) rio_put_u64(&w, v[i]);
  return wr_result(&w);
}

size_t rio_encode_lock(uint8_t *b, size_t cap, const rio_lock_req *m) {
  rio_wr w = rio_wr_init(b, cap);
  rio_put_u64(&w, m->handle);
  rio_put_u32(&w, m->op);
  rio_put_u32(&w, 0);
  rio_put_u64(&w, m->offset);
  rio_put_u64(&w, m->len);
  return wr_result(&w);
}

size_t rio_encode_counter(uint8_t *b, size_t cap, const rio_counter_req *m) {
  rio_wr w = rio_wr_init(b, cap);
  rio_put_u64(&w, m->handle);
  rio_put_u64(&w, m->key);
  rio_put_u32(&w, m->op);
  rio_put_u32(&w, 0);
  rio_put_u64(&w, (uint64_t)m->value);
  return wr_result(&w);
}

size_t rio_encode_checksum(uint8_t *b, size_t cap, const rio_checksum_req *m) {
  rio_wr w = rio_wr_init(b, cap);
  rio_put_u64(&w, m->handle);
  rio_put_u32(&w, m->algo);
  rio_put_u32(&w, m->start);
  rio_put_u64(&w, m->offset);
  rio_put_u64(&w, m->len);
  return wr_result(&w);
}

void rio_put_io_hdr(rio_wr *w, uint64_t handle, uint64_t coll_id, uint32_t coll_n, uint32_t nseg) {
  rio_put_u64(w, handle);
  rio_put_u64(w, coll_id);
  rio_put_u32(w, coll_n);
  rio_put_u32(w, nseg);
}

/* ---- authentication ------------------------------------------------------------------------- */
int rio_random(uint8_t *buf, size_t n) { return RAND_bytes(buf, (int)n) == 1 ? 0 : -1; }

int rio_auth_mac(const uint8_t *secret, size_t slen, int role, const uint8_t challenge[RIO_NONCE],
                 const uint8_t nonce[RIO_NONCE], uint8_t mac[RIO_MAC]) {
  static const char client_label[] = "pario-rio-v1 client", server_label[] = "pario-rio-v1 server";
  uint8_t msg[sizeof client_label - 1 + 2 * RIO_NONCE];
  const char *label = role ? server_label : client_label;
  size_t ln = sizeof client_label - 1;
  memcpy(msg, label, ln);
  memcpy(msg + ln, role ? nonce : challenge, RIO_NONCE);
  memcpy(msg + ln + RIO_NONCE, role ? challenge : nonce, RIO_NONCE);
  unsigned int outlen = 0;
  if (!HMAC(EVP_sha256(), secret, (int)slen, msg, sizeof msg, mac, &outlen) || outlen != RIO_MAC) return -1;
  return 0;
}

int rio_mac_equal(const uint8_t a[RIO_MAC], const uint8_t b[RIO_MAC]) { return CRYPTO_memcmp(a, b, RIO_MAC) == 0; }

/* ---- records (version 2) ---------------------------------------------------------------------- */
static int hmac3(const uint8_t *key, size_t klen, const char *label, const uint8_t *a, const uint8_t *b,
                 uint8_t out[RIO_TAG]) {
  uint8_t msg[64 + 2 * RIO_NONCE];
  size_t ln = strlen(label), n = ln;
  memcpy(msg, label, ln);
  if (a) memcpy(msg + n, a, RIO_NONCE), n += RIO_NONCE;
  if (b) memcpy(msg + n, b, RIO_NONCE), n += RIO_NONCE;
  unsigned int outlen = 0;
  return HMAC(EVP_sha256(), key, (int)klen, msg, n, out, &outlen) && outlen == RIO_TAG ? 0 : -1;
}

/* Labels keep these keys apart from the AUTH proofs and from each other. */
int rio_kdf(const uint8_t *secret, size_t slen, const uint8_t challenge[RIO_NONCE], const uint8_t nonce[RIO_NONCE],
            uint8_t c2s[RIO_TAG], uint8_t s2c[RIO_TAG]) {
  uint8_t prk[RIO_TAG];
  int r = hmac3(secret, slen, "pario-rio-v2 kdf", challenge, nonce, prk);
  if (!r) r = hmac3(prk, sizeof prk, "pario-rio-v2 c2s", NULL, NULL, c2s);
  if (!r) r = hmac3(prk, sizeof prk, "pario-rio-v2 s2c", NULL, NULL, s2c);
  OPENSSL_cleanse(prk, sizeof prk);
  return r;
}

int rio_seal_init(rio_seal *s, const uint8_t key[RIO_TAG]) {
  s->seq = 0;
  s->ctx = NULL;
  EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
  EVP_MAC_free(mac);
  OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0), OSSL_PARAM_construct_end()};
  if (!ctx || !EVP_MAC_init(ctx, key, RIO_TAG, p)) return EVP_MAC_CTX_free(ctx), -1;
  s->ctx = ctx;
  return 0;
}

void rio_seal_free(rio_seal *s) {
  EVP_MAC_CTX_free(s->ctx);
  s->ctx = NULL;
}

int rio_seal_tag(rio_seal *s, const uint8_t *data, uint32_t len, uint8_t tag[RIO_TAG]) {
  uint8_t head[12];
  rio_store_u64(head, s->seq++);
  for (int i = 0; i < 4; i++) head[8 + i] = (uint8_t)(len >> (8 * i));
  size_t out = 0;
  EVP_MAC_CTX *ctx = s->ctx;
  if (!ctx || !EVP_MAC_init(ctx, NULL, 0, NULL) || !EVP_MAC_update(ctx, head, sizeof head) ||
      !EVP_MAC_update(ctx, data, len) || !EVP_MAC_final(ctx, tag, &out, RIO_TAG) || out != RIO_TAG)
    return -1;
  return 0;
}

int rio_seal_check(rio_seal *s, const uint8_t *data, uint32_t len, const uint8_t tag[RIO_TAG]) {
  uint8_t want[RIO_TAG];
  return rio_seal_tag(s, data, len, want) == 0 && CRYPTO_memcmp(want, tag, RIO_TAG) == 0;
}

int rio_read_secret(const char *path, uint8_t *buf, size_t *len, char *why, size_t whylen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    snprintf(why, whylen, "cannot open the secret file");
    return e;
  }
  size_t n = 0;
  for (;;) {
    if (n == RIO_MAX_SECRET) {
      char extra;
      ssize_t r = read(fd, &extra, 1);
      if (r > 0) {
        close(fd);
        snprintf(why, whylen, "the secret file is longer than %d bytes", RIO_MAX_SECRET);
        return EINVAL;
      }
      break;
    }
    ssize_t r = read(fd, buf + n, RIO_MAX_SECRET - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      snprintf(why, whylen, "cannot read the secret file");
      return e;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
  if (n < RIO_MIN_SECRET) {
    snprintf(why, whylen, "the secret in the secret file is %zu bytes, shorter than %d bytes (the minimum)", n,
             RIO_MIN_SECRET);
    return EINVAL;
  }
  *len = n;
  return 0;
}

/* ---- names ---------------------------------------------------------------------------------- */
int rio_parse_name(const char *rest, char *host, size_t hostcap, char *port, size_t portcap, const char **path) {
  const char *h = rest, *hend, *p;
  if (*h == '[') { /* [v6 address] */
    hend = strchr(h, ']');
    if (!hend || hend[1] != ':') return EINVAL;
    h++;
    p = hend + 2;
  } else {
    hend = strchr(h, ':');
    if (!hend) return EINVAL;
    p = hend + 1;
  }
  size_t hl = (size_t)(hend - h);
  const char *slash = strchr(p, '/');
  if (!slash) return EINVAL;
  size_t pl = (size_t)(slash - p);
  if (hl == 0 || hl >= hostcap || pl == 0 || pl >= portcap || memchr(h, '/', hl)) return EINVAL;
  for (size_t i = 0; i < pl; i++)
    if (p[i] < '0' || p[i] > '9') return EINVAL;
  memcpy(host, h, hl);
  host[hl] = '\0';
  memcpy(port, p, pl);
  port[pl] = '\0';
  while (*slash == '/') slash++;
  if (!*slash) return EINVAL;
  *path = slash;
  return 0;
}
