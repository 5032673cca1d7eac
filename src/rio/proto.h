/* The remote I/O protocol (src/rio/PROTOCOL.md): frame header, request and reply bodies,
 * bounded little-endian readers and writers, status codes, and the HMAC-SHA-256
 * authentication, shared by the client driver (driver/rio.c) and pario-server. Pure codec:
 * no sockets, no MPI; every decoder checks lengths before it reads. */
#ifndef PARIO_RIO_PROTO_H
#define PARIO_RIO_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define RIO_MAGIC 0x4F495250u /* "PRIO" little-endian */
#define RIO_VERSION 1       /* of the frame header: unchanged in protocol version 2 */
#define RIO_PROTO_VERSION 2 /* the highest session version (HELLO) this codec speaks */
#define RIO_HELLO_MAC 1u    /* HELLO flag: records with a MAC after AUTH (PROTOCOL.md, version 2) */
#define RIO_REC_MAX 65536u  /* the largest record's data */
#define RIO_REC_HDR 4       /* u32 len */
#define RIO_TAG 32          /* HMAC-SHA-256 */
#define RIO_HDR_SIZE 24
#define RIO_REPLY 0x8000u
#define RIO_NONCE 32
#define RIO_MAC 32
#define RIO_MAX_PATH 4096
#define RIO_DEFAULT_MAX_REQUEST (64u << 20)
#define RIO_MIN_MAX_REQUEST (1u << 20)
#define RIO_DEFAULT_MAX_SEGMENTS 65536u
#define RIO_IO_HDR 24 /* handle, coll_id, coll_n, nseg */
#define RIO_SEG 16    /* offset, len */
#define RIO_STATUS 8  /* int32 status + 4 reserved */
#define RIO_MIN_SECRET 16
#define RIO_MAX_SECRET 4096
#define RIO_MAX_ERRMSG 1024
#define RIO_MAX_CRED_NAME 64 /* HELLO's optional credential name (version 2) */
#define RIO_HELLO_MIN (8 + RIO_NONCE)
#define RIO_HELLO_MAX (RIO_HELLO_MIN + 1 + RIO_MAX_CRED_NAME)

enum rio_type {
  RIO_T_HELLO = 1,
  RIO_T_AUTH = 2,
  RIO_T_PING = 3,
  RIO_T_OPEN = 4,
  RIO_T_CLOSE = 5,
  RIO_T_DELETE = 6,
  RIO_T_STAT = 7,
  RIO_T_SET_SIZE = 8,
  RIO_T_PREALLOCATE = 9,
  RIO_T_SYNC = 10,
  RIO_T_READ = 11,
  RIO_T_WRITE = 12,
  RIO_T_LOCK = 13,
  RIO_T_COUNTER = 14,
  RIO_T_ERROR = 15,
  RIO_T_CHECKSUM = 16,
  RIO_T_MAX = 16
};

enum rio_open_flags {
  RIO_O_RDONLY = 0,
  RIO_O_WRONLY = 1,
  RIO_O_RDWR = 2,
  RIO_O_ACCMODE = 3,
  RIO_O_CREAT = 4,
  RIO_O_EXCL = 8,
  RIO_O_TRUNC = 16,
  RIO_O_APPEND = 32,
  RIO_O_ALL = 63
};

enum { RIO_LOCK_READ = 1, RIO_LOCK_WRITE = 2, RIO_UNLOCK = 3 };
enum { RIO_CTR_ADD = 1, RIO_CTR_SET = 2, RIO_CTR_GET = 3 };

enum rio_status {
  RIO_OK = 0,
  RIO_ENOENT,
  RIO_EACCES,
  RIO_EEXIST,
  RIO_EISDIR,
  RIO_ENOTDIR,
  RIO_ENOSPC,
  RIO_EIO,
  RIO_EINVAL,
  RIO_EBADF,
  RIO_EFBIG,
  RIO_EROFS,
  RIO_ENAMETOOLONG,
  RIO_EDQUOT,
  RIO_ENOMEM,
  RIO_EPROTO,
  RIO_EAUTH,
  RIO_ETOOBIG,
  RIO_ELOOP,
  RIO_EBUSY,
  RIO_EOTHER,
  RIO_NSTATUS
};

/* errno <-> wire status (unknown values map to RIO_EOTHER / EIO). */
int rio_status_from_errno(int e);
int rio_errno_from_status(int status);

/* ---- frame header ------------------------------------------------------------------------ */
typedef struct rio_hdr {
  uint16_t version;
  uint16_t type; /* with RIO_REPLY for replies */
  uint32_t flags;
  uint32_t len; /* body bytes */
  uint64_t id;
} rio_hdr;

void rio_hdr_encode(uint8_t out[RIO_HDR_SIZE], const rio_hdr *h);
/* Decode and check magic and version; 0 or RIO_EPROTO. Does not judge type or len: the
 * receiver checks them against its own limits (rio_body_limit) before reading the body. */
int rio_hdr_decode(const uint8_t in[RIO_HDR_SIZE], rio_hdr *h);

/* The largest body a server accepts for a request type (max_request for READ/WRITE and
 * bounded by max_segments), 0 for a type that is not a request. authed 0: only HELLO and AUTH,
 * with their exact sizes. */
uint64_t rio_request_limit(unsigned type, int authed, uint64_t max_request);
/* The smallest body of a request type (its fixed part). */
uint32_t rio_request_min(unsigned type);

/* ---- bounded readers and writers ------------------------------------------------------- */
typedef struct rio_rd {
  const uint8_t *p;
  size_t n;  /* bytes left */
  int err;   /* set when a read passed the end: every later read returns 0 */
} rio_rd;

static inline rio_rd rio_rd_init(const void *p, size_t n) {
  rio_rd r = {(const uint8_t *)p, n, 0};
  return r;
}
uint16_t rio_get_u16(rio_rd *r);
uint32_t rio_get_u32(rio_rd *r);
uint64_t rio_get_u64(rio_rd *r);
/* A pointer to the next n bytes (not copied), or NULL past the end. */
const uint8_t *rio_get_bytes(rio_rd *r, size_t n);

typedef struct rio_wr {
  uint8_t *p;
  size_t cap, n;
  int err; /* set when a write would pass cap */
} rio_wr;

static inline rio_wr rio_wr_init(void *p, size_t cap) {
  rio_wr w = {(uint8_t *)p, cap, 0, 0};
  return w;
}
void rio_put_u16(rio_wr *w, uint16_t v);
void rio_put_u32(rio_wr *w, uint32_t v);
void rio_put_u64(rio_wr *w, uint64_t v);
void rio_put_bytes(rio_wr *w, const void *p, size_t n);
/* The status block that starts every reply body. */
void rio_put_status(rio_wr *w, int status);
int rio_get_status(rio_rd *r);

static inline void rio_store_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t rio_load_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* Advance an iovec array past n transferred bytes (every short-transfer loop of the client,
 * the forwarder and the posix driver). */
static inline void rio_iov_advance(struct iovec **iov, int *cnt, size_t n) {
  while (*cnt > 0 && n >= (*iov)->iov_len) {
    n -= (*iov)->iov_len;
    (*iov)++;
    (*cnt)--;
  }
  if (*cnt > 0 && n) {
    (*iov)->iov_base = (char *)(*iov)->iov_base + n;
    (*iov)->iov_len -= n;
  }
}

/* ---- request bodies ---------------------------------------------------------------------- */
typedef struct rio_hello {
  uint16_t min_version, max_version;
  uint32_t flags;
  uint8_t nonce[RIO_NONCE];
  uint8_t name_len; /* 0: no name (the credential "default"); version 2 only */
  char name[RIO_MAX_CRED_NAME + 1];
} rio_hello;

typedef struct rio_hello_reply {
  uint16_t version;
  uint32_t server_flags;
  uint8_t challenge[RIO_NONCE];
} rio_hello_reply;

typedef struct rio_auth_reply {
  uint8_t server_mac[RIO_MAC];
  uint64_t max_request;
  uint32_t max_segments;
  uint64_t server_id;
} rio_auth_reply;

typedef struct rio_open_req {
  uint32_t flags, perm;
  const char *path; /* not NUL-terminated: pathlen bytes inside the body */
  uint32_t pathlen;
} rio_open_req;

/* A READ or WRITE: the io header and the segment list (pointing into the body). For WRITE,
 * data points at the first data byte and total is the bytes expected there. */
typedef struct rio_io_req {
  uint64_t handle, coll_id;
  uint32_t coll_n, nseg;
  const uint8_t *segs; /* nseg * RIO_SEG bytes */
  uint64_t total;      /* sum of the segment lengths */
} rio_io_req;

static inline void rio_seg_at(const rio_io_req *io, uint32_t i, uint64_t *off, uint64_t *len) {
  *off = rio_load_u64(io->segs + (size_t)i * RIO_SEG);
  *len = rio_load_u64(io->segs + (size_t)i * RIO_SEG + 8);
}

typedef struct rio_lock_req {
  uint64_t handle;
  uint32_t op;
  uint64_t offset, len;
} rio_lock_req;

typedef struct rio_counter_req {
  uint64_t handle, key;
  uint32_t op;
  int64_t value;
} rio_counter_req;

/* CHECKSUM: sum len bytes (0: to the end of file) from offset with algo (checksum.h),
 * continuing from start (the value of the bytes before, rio_sum_start for none). */
typedef struct rio_checksum_req {
  uint64_t handle;
  uint32_t algo, start;
  uint64_t offset, len;
} rio_checksum_req;
#define RIO_CHECKSUM_BODY 32

/* Decoders of request bodies: 0 or RIO_EPROTO (or RIO_ETOOBIG for limits). Each checks that
 * the fields fill the body exactly (READ: exactly the io header and segments; WRITE: the
 * header part only, since the data may be streamed: *hdr_bytes says where data starts). */
int rio_decode_hello(const uint8_t *b, size_t n, rio_hello *m);
int rio_decode_open(const uint8_t *b, size_t n, rio_open_req *m);
int rio_decode_path(const uint8_t *b, size_t n, const char **path, uint32_t *pathlen);
int rio_decode_handle(const uint8_t *b, size_t n, uint64_t *handle);                 /* CLOSE, STAT, SYNC */
int rio_decode_handle2(const uint8_t *b, size_t n, uint64_t *handle, uint64_t *v);   /* SET_SIZE */
int rio_decode_handle3(const uint8_t *b, size_t n, uint64_t *handle, uint64_t *a, uint64_t *b2); /* PREALLOCATE */
int rio_decode_lock(const uint8_t *b, size_t n, rio_lock_req *m);
int rio_decode_counter(const uint8_t *b, size_t n, rio_counter_req *m);
int rio_decode_checksum(const uint8_t *b, size_t n, rio_checksum_req *m); /* RIO_EINVAL: unknown algo, range past 2^63 */
/* The io header and segments at the start of b (n bytes available). Checks nseg against
 * max_segments, the segment bytes against n, every offset + len against 2^63, and the sum of
 * the lengths. For READ pass body_len == header + segments; for WRITE the data follows and
 * body_len must equal header + segments + total. */
int rio_decode_io(const uint8_t *b, size_t n, uint32_t body_len, unsigned type, uint32_t max_segments,
                  rio_io_req *m, size_t *hdr_bytes);
/* Bytes of the io header + segment list for nseg segments. */
static inline size_t rio_io_hdr_bytes(uint32_t nseg) { return RIO_IO_HDR + (size_t)nseg * RIO_SEG; }

/* ---- encoders for the client (each returns the body length, 0 if cap is too small) ------- */
size_t rio_encode_hello(uint8_t *b, size_t cap, const rio_hello *m);
size_t rio_encode_open(uint8_t *b, size_t cap, uint32_t flags, uint32_t perm, const char *path);
size_t rio_encode_path(uint8_t *b, size_t cap, const char *path);
size_t rio_encode_u64s(uint8_t *b, size_t cap, int n, const uint64_t *v);
size_t rio_encode_lock(uint8_t *b, size_t cap, const rio_lock_req *m);
size_t rio_encode_counter(uint8_t *b, size_t cap, const rio_counter_req *m);
size_t rio_encode_checksum(uint8_t *b, size_t cap, const rio_checksum_req *m);
/* io header; segments are appended with rio_put_u64 pairs by the caller. */
void rio_put_io_hdr(rio_wr *w, uint64_t handle, uint64_t coll_id, uint32_t coll_n, uint32_t nseg);

/* ---- authentication (OpenSSL libcrypto) --------------------------------------------------- */
/* Fill buf with n cryptographically random bytes: 0 or -1. */
int rio_random(uint8_t *buf, size_t n);
/* The client's (role 0) or server's (role 1) proof: HMAC-SHA-256(secret, label || a || b) with
 * label "pario-rio-v1 client" and (a, b) = (challenge, nonce), or "pario-rio-v1 server" and
 * (nonce, challenge). 0 or -1. */
int rio_auth_mac(const uint8_t *secret, size_t slen, int role, const uint8_t challenge[RIO_NONCE],
                 const uint8_t nonce[RIO_NONCE], uint8_t mac[RIO_MAC]);
/* Constant-time comparison of two MACs: 1 if equal. */
int rio_mac_equal(const uint8_t a[RIO_MAC], const uint8_t b[RIO_MAC]);
/* Read a secret file: at most RIO_MAX_SECRET bytes, trailing newlines removed, at least
 * RIO_MIN_SECRET left. 0, or an errno value (EINVAL: too short or too long; the message buffer
 * says why). */
int rio_read_secret(const char *path, uint8_t *buf, size_t *len, char *why, size_t whylen);

/* ---- integrity after authentication (version 2, RIO_HELLO_MAC) ---------------------------------
 * Each direction's key: HMAC-SHA-256(PRK, label) with PRK = HMAC-SHA-256(secret, "pario-rio-v2
 * kdf" || challenge || nonce) and label "pario-rio-v2 c2s" or "pario-rio-v2 s2c". A record is
 * u32 len (1..RIO_REC_MAX), len bytes, tag = HMAC-SHA-256(key, u64 seq || u32 len || data), seq
 * counting the direction's records from 0. */
int rio_kdf(const uint8_t *secret, size_t slen, const uint8_t challenge[RIO_NONCE], const uint8_t nonce[RIO_NONCE],
            uint8_t c2s[RIO_TAG], uint8_t s2c[RIO_TAG]);
typedef struct rio_seal {
  void *ctx; /* EVP_MAC_CTX * keyed once */
  uint64_t seq;
} rio_seal;
int rio_seal_init(rio_seal *s, const uint8_t key[RIO_TAG]); /* 0 or -1 */
void rio_seal_free(rio_seal *s);
/* The tag of the next record (seq advances): 0 or -1. */
int rio_seal_tag(rio_seal *s, const uint8_t *data, uint32_t len, uint8_t tag[RIO_TAG]);
/* Check the next record's tag in constant time (seq advances): 1 if it is right. */
int rio_seal_check(rio_seal *s, const uint8_t *data, uint32_t len, const uint8_t tag[RIO_TAG]);

/* ---- names ------------------------------------------------------------------------------- */
/* Split "host:port/path" (what follows "x-rio://"): host may be [v6]. 0 or EINVAL. The path
 * keeps no leading slash (it is relative to the server's root). */
int rio_parse_name(const char *rest, char *host, size_t hostcap, char *port, size_t portcap, const char **path);

#endif
