/* pario-server's shared declarations: the server state, connections with their handle tables,
 * the worker pool, the counter and lock tables, path confinement and logging. The wire format
 * is src/rio/proto.h; this header is only for server/. */
#ifndef PARIO_SERVER_H
#define PARIO_SERVER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "rio/proto.h"

/* ---- logging (stderr, one line per event) ---------------------------------------------------- */
enum { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };
extern int srv_log_level;
void srv_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int srv_log_parse(const char *s); /* -1 if unknown */

/* ---- configuration ----------------------------------------------------------------------------- */
typedef struct srv_emulate {
  uint64_t net_latency_ns; /* added to every frame, each direction */
  uint64_t net_bw;         /* bytes/s per connection and direction, 0 = unlimited */
  uint64_t disk_bw;        /* bytes/s of the whole server's storage, 0 = unlimited */
  int cache_none;          /* 1: every write is followed by fdatasync (no write-back cache) */
} srv_emulate;

typedef struct srv_config {
  const char *root, *listen, *secret_file, *credentials, *forward_to, *tls_cert, *tls_key, *trace_dir;
  int threads;
  uint64_t max_request;
  uint32_t max_segments;
  int idle_timeout;   /* seconds, 0 = none */
  int frame_timeout;  /* seconds a frame that has begun may take, its WRITE data included */
  int send_timeout;   /* seconds a client may leave its replies unread before it is dropped */
  int max_handles;    /* open handles per connection */
  int max_inflight;   /* requests in flight per connection */
  int merge_wait_ms;  /* forwarder: how long the parts of a collective access wait for the rest */
  int max_conns;      /* authenticated + unauthenticated */
  int max_unauth;     /* connections still authenticating (the oldest gives way to a new one) */
  int max_unauth_peer;/* ... of them from one peer address */
  int auth_timeout;   /* seconds from accept to the end of AUTH (TLS handshake included) */
  const char *user;   /* --user: drop root for this user once set up */
  int allow_root;     /* --allow-root: stay root (warned) */
  int insecure;       /* plain TCP without MAC allowed from any peer (not only loopback) */
  const char *forward_user;        /* forwarder: the credential it logs in upstream with (NULL: default) */
  const char *forward_secret_file; /* ... and its secret (NULL: --secret-file's) */
  const char *forward_tls_ca;      /* forwarder: TLS upstream, trusting this CA file (NULL: MAC records) */
  srv_emulate emu;
} srv_config;

/* ---- connections --------------------------------------------------------------------------- */
typedef struct srv_conn srv_conn;
struct srv_job;
struct srv_out;

/* The byte stream under a connection: a socket, TLS, or an in-memory buffer (fuzzing). recv
 * reads exactly n bytes before the deadline (CLOCK_MONOTONIC ns, 0 = none): 0, or -1 on end of
 * stream, error or timeout (errno ETIMEDOUT). send writes all n bytes: 0 or -1. */
typedef struct srv_io {
  int (*recv)(srv_conn *c, void *buf, size_t n, uint64_t deadline);
  int (*send)(srv_conn *c, const void *buf, size_t n);
  void (*shutdown)(srv_conn *c);
  /* Optional: wait (as recv) for at least one byte and return what is there, at most n; -1
   * as recv. Where it is offered the reader receives many frames per call (srv_in). */
  ssize_t (*recv_some)(srv_conn *c, void *buf, size_t n, uint64_t deadline);
} srv_io;

typedef struct srv_handle {
  int fd;           /* -1: free slot */
  uint32_t gen;     /* bumps on every reuse, so a stale handle is refused */
  uint32_t acc;     /* RIO_O_RDONLY/WRONLY/RDWR */
  dev_t dev;
  ino_t ino;
  int refs;         /* requests in flight on this handle */
  int closing;      /* CLOSE received: new requests refused */
  int memfs;        /* on tmpfs or ramfs: reads never wait for a device, but RWF_NOWAIT is
                     * refused there (EOPNOTSUPP), so the reader reads plainly */
  uint64_t close_id;/* the CLOSE's request id, answered when refs drops to 0 */
  struct srv_file *file;
  char name[96];    /* the path, shortened, for log lines */
} srv_handle;

struct srv_conn {
  const srv_io *io;
  int fd;
  void *tls;               /* SSL *, when TLS */
  pthread_mutex_t send_mu; /* the output queue below, and one sender at a time on the stream */
  pthread_cond_t send_cv;  /* the sender waits for output */
  struct srv_out *oq_head, *oq_tail; /* replies not yet sent (conn.c's output path) */
  uint64_t oq_bytes;       /* their bytes (read unlocked by the reader's admission) */
  int sending;             /* the sender is writing an entry outside the lock */
  int sender_on, sender_stop;
  pthread_t sender;
  pthread_mutex_t mu;      /* handles, inflight */
  pthread_cond_t cv;
  srv_handle **handles;    /* slots; a handle never moves while a request holds it */
  uint32_t nhandles, cap_handles, next_gen;
  int inflight;            /* jobs queued or running, parked locks included */
  uint64_t queued_bytes;   /* their bodies' bytes (bounded per connection) */
  int dead;                /* a send failed or shutdown: stop */
  int stop_reading;        /* a worker found a malformed body: the reader takes no more frames,
                            * sends what is queued and ends (atomic) */
  int authed;
  int unauth_done;         /* no longer counted in srv->nunauth (authenticated, failed or evicted;
                            * under srv->mu) */
  uint64_t auth_deadline;  /* CLOCK_MONOTONIC ns: TLS handshake, HELLO and AUTH end by then (0: 5 s) */
  int spoke;               /* atomic: its TLS handshake ended or its HELLO came; a connection
                            * still silent gives way first when the places are taken */
  int evicted;             /* closed by the accept loop to make room (under srv->mu) */
  uint64_t serial;         /* connection number for log lines */
  char peer[64];
  char addr[48];           /* the peer's address without the port: the per-address limit */
  uint8_t *chunk;          /* the reader's streaming buffer for WRITE data, grown on demand */
  size_t chunk_cap;
  int pipe[2];             /* WRITE data spliced socket -> pipe -> file (write.c); pipe_ok 1 once
                            * made, -1 where splice cannot serve this connection */
  int pipe_ok;
  size_t pipe_cap;
  uint8_t *in;             /* the reader's input buffer (io->recv_some, after authentication):
                            * bytes received ahead of the frame being read, [in_pos, in_len) */
  size_t in_pos, in_len;
  uint8_t *out;            /* replies the reader made itself (cached small READs), sent at once
                            * when it would wait for input or the buffer is full */
  size_t out_len;
  void *link;              /* the emulated link under io (emulate.c), or NULL */
  void *fwd;               /* forwarder state (forward.c), or NULL */
  void *mem;               /* in-memory stream state (fuzzing) */
  const struct srv_cred *cred; /* who authenticated (its rights and root); NULL before AUTH */
  void *mac;               /* the record layer under io after authentication (mac.c), or NULL */
  struct srv_conn *prev, *next;
};

/* c->dead is read without the connection's locks (the reader checks it between frames). */
static inline int srv_dead(srv_conn *c) { return __atomic_load_n(&c->dead, __ATOMIC_ACQUIRE); }
static inline void srv_set_dead(srv_conn *c) { __atomic_store_n(&c->dead, 1, __ATOMIC_RELEASE); }

/* ---- credentials (cred.c) ----------------------------------------------------------------- */
typedef struct srv_cred {
  char name[RIO_MAX_CRED_NAME + 1];
  int ro;                          /* read-only: no write, create, truncate, delete */
  int rootfd;                      /* its root: srv->rootfd, or its SUBDIR (O_PATH) */
  uint8_t secret[RIO_MAX_SECRET];
  size_t secret_len;
} srv_cred;

/* --credentials FILE: 0, or -1 with why (one line naming the file, line and cause). */
int srv_cred_load(const char *path, char *why, size_t wn);
/* Add one (check_mode: refuse a secret file group or others may read or write). */
int srv_cred_add(const char *name, int ro, const char *secret_file, const char *subdir, int check_mode, char *why,
                 size_t wn);
/* The credential named by len bytes of name (0 = "default"); an unknown name gets a dummy with a random secret
 * (*known 0), so that a probe costs and answers the same as a wrong secret. */
const srv_cred *srv_cred_find(const char *name, size_t len, int *known);

/* ---- the server ---------------------------------------------------------------------------- */
typedef struct srv_state {
  srv_config cfg;
  int rootfd;
  uint8_t secret[RIO_MAX_SECRET]; /* --secret-file's (the forwarder's upstream too) */
  size_t secret_len;
  srv_cred *creds;
  int ncreds;
  uint64_t server_id;
  int stopping; /* atomic */
  pthread_mutex_t mu; /* connection list and counts */
  pthread_cond_t cv;
  srv_conn *conns;
  int nconns, nunauth;
  uint64_t next_serial;
  void *tls_ctx; /* SSL_CTX * */
  int fd_budget; /* descriptors that handles may hold, all connections together */
  int fds_open;  /* held by handles now (atomic) */
} srv_state;

extern srv_state *srv;

uint64_t srv_now_ns(void); /* log.c: the monotonic clock, ns */

/* A connection that ends before authentication is logged at warn, unless the accept loop
 * closed it to make room (a flood would flood the log too): debug. */
static inline int srv_unauth_log_level(srv_conn *c) {
  return __atomic_load_n(&c->unauth_done, __ATOMIC_ACQUIRE) ? LOG_DEBUG : LOG_WARN;
}

/* The connection stops counting as one still authenticating (once; the accept loop may have
 * done it already when it evicted the connection). */
static inline void srv_unauth_done(srv_conn *c) {
  pthread_mutex_lock(&srv->mu);
  if (!c->unauth_done) __atomic_store_n(&c->unauth_done, 1, __ATOMIC_RELEASE), srv->nunauth--;
  pthread_mutex_unlock(&srv->mu);
}

/* conn.c: serve one connection until it ends (authentication, frames, dispatch), then free it. */
void srv_conn_serve(srv_conn *c);
/* out.c: the connection record; its byte stream, buffers, output queue, sender and replies. */
srv_conn *srv_conn_new(int fd, const srv_io *io, const char *peer);
void srv_conn_free(srv_conn *c);
void srv_conn_release(srv_conn *c, uint64_t body_bytes); /* a request in flight ended */
void srv_tune_socket(srv_conn *c);   /* the accepted socket's timeouts and keepalive */
void srv_buffers_start(srv_conn *c); /* the reader's input and reply buffers (after login) */
int srv_out_flush(srv_conn *c);      /* the reader's reply buffer, sent */
void srv_sender_start(srv_conn *c);  /* the output queue's sender thread */
void srv_sender_stop(srv_conn *c);
void srv_out_drain(srv_conn *c);     /* at the end: the queue sent or dropped */
/* A protocol error: say why (best effort), log it; the caller ends the connection. */
void srv_proto_error(srv_conn *c, uint64_t id, int status, const char *what);
const char *srv_type_name(unsigned t); /* a request type's name (logs, trace spans) */
/* The output path. Nothing here waits for the client: bytes go out at once when the socket
 * takes them, otherwise into the connection's output queue, which its sender thread drains.
 * srv_send2 queues the bytes of a and b (b may be NULL) as one piece. srv_send_job hands a job
 * to the sender, which runs send(j) (a READ: read.c's send half reads and sends it) and then done(j)
 * (ends the job): the output path knows no request. 0, or -1 when the connection is dead. */
int srv_send2(srv_conn *c, const void *a, size_t an, const void *b, size_t bn);
void srv_send_job(srv_conn *c, struct srv_job *j, int (*send)(struct srv_job *), void (*done)(struct srv_job *));
uint64_t srv_out_free(const srv_conn *c); /* room left in the output queue's budget */
/* The sender's pace: each MiB of a reply must leave within --send-timeout. SO_SNDTIMEO alone
 * restarts with every partial send, so a client that takes a few KiB per timeout held on for
 * ever. srv_pace_sent: 0, or -1 (errno ETIMEDOUT) when the client is too slow. */
typedef struct srv_pace {
  uint64_t deadline, credit;
} srv_pace;
void srv_pace_start(srv_pace *p);
int srv_pace_sent(srv_pace *p, size_t n);
/* Descriptor exhaustion (EMFILE/ENFILE) in op, logged at most once a second with a count. */
void srv_log_fd_exhausted(const char *op, int err);
/* Reply helpers (through the output path). */
int srv_reply(srv_conn *c, unsigned type, uint64_t id, int status, const void *body, size_t n);
int srv_reply_error(srv_conn *c, uint64_t id, int status, const char *msg);
extern const srv_io srv_socket_io;
/* The reader's input: exactly n bytes, from the input buffer first (as io->recv otherwise). */
int srv_in(srv_conn *c, void *buf, size_t n, uint64_t deadline);
static inline size_t srv_in_buffered(const srv_conn *c) { return c->in_len - c->in_pos; }
/* Room in the reader's reply buffer for a reply of n bytes (flushing it first if needed), or
 * NULL when there is no buffer or n does not fit; srv_out_commit adds the n bytes written there. */
uint8_t *srv_out_room(srv_conn *c, size_t n);
static inline void srv_out_commit(srv_conn *c, size_t n) { c->out_len += n; }

/* The unit of file I/O in one step of a request: a READ's chunks, a WRITE's, a CHECKSUM's reads. */
#define SRV_CHUNK (1u << 20)

/* ops.c, read.c, write.c: request handlers. A job is one request whose body is in memory; the
 * handler sends its reply (or parks it: LOCK) and then releases the job with srv_job_done. */
typedef struct srv_job {
  srv_conn *c;
  rio_hdr h;
  uint8_t *body;
  size_t n;
  srv_handle *hd;  /* the handle this job holds a reference on, or NULL */
  uint64_t handle; /* its wire value */
  struct srv_job *next;
} srv_job;
void srv_handle_job(srv_job *j); /* ops.c: every request but WRITE, dispatched by type */
/* admit.c, for the handlers of every file: take the job's handle (the wire value) with a
 * reference, 0, or replied RIO_EBADF and -1. */
int srv_take_handle(srv_job *j, uint64_t value);
/* A body that does not decode: RIO_EPROTO (fields that do not add up to its length) answers
 * ERROR and ends the connection; another code is the request's refusal. Returns e. */
int srv_bad_body(srv_job *j, int e);
/* Whether the connection's credential is read-only (cred.c). */
static inline int srv_conn_ro(const srv_conn *c) { return c->cred && c->cred->ro; }
/* The refusal of op to a read-only credential: logged, its message in msg (sent as an ERROR
 * reply, PROTOCOL.md "Refusals with a reason"). */
void srv_ro_refusal(srv_conn *c, const char *op, char *msg, size_t n);
/* A read-only credential asking for op (a change): refused with the reason; 1 if refused. */
int srv_refused_ro(srv_job *j, const char *op);
/* What every request on an open handle passes first, in order: a body that decodes (e: the
 * decoder's status), a read-only credential refused when the request changes something
 * (change: what; NULL: nothing), the handle open on this connection. 1 when answered here. */
int srv_admit(srv_job *j, int e, const char *change, uint64_t h);

/* read.c: READ from a worker: 0 when answered, 1 when the job went to the connection's sender
 * (which ends it). */
int srv_read(srv_job *j);
/* A small READ whose data is in the page cache, answered by the reader: 1 when done. */
int srv_read_inline(srv_job *j);

/* write.c: WRITE, handled by the connection's reader as the data streams in. 0, or -1 if the
 * stream broke (the connection ends). */
int srv_handle_write(srv_conn *c, const rio_hdr *h, const rio_io_req *io, uint64_t deadline);

/* handles.c: the handle table. Lookup with a reference for an in-flight request: the handle,
 * or NULL (errno-free: *status says why). */
srv_handle *srv_handle_get(srv_conn *c, uint64_t handle, int *status);
void srv_handle_put(srv_conn *c, srv_handle *hd);
void srv_conn_close_all(srv_conn *c);
void srv_job_done(srv_job *j); /* drop the job's handle reference, free it, release its slot */
/* Before an OPEN: 0 when the connection (--max-handles) and the server's descriptor budget
 * have room for one more handle, else refused (RIO_EBUSY replied, with a message) and 1. */
int srv_handle_room(srv_job *j);
/* A new handle for fd (opened with access acc, st its fstat): RIO_OK and its wire value, or a
 * RIO_E* status (fd then stays the caller's). */
int srv_handle_new(srv_conn *c, int fd, uint32_t acc, const struct stat *st, const char *path, uint32_t pl,
                   uint64_t *value);

/* pool.c: the worker pool (threads 0: run the job in the caller). */
int srv_pool_start(int threads);
void srv_pool_stop(void);
void srv_pool_submit(srv_job *j);

/* shared.c: per-file counters shared by every connection, keyed by (dev, ino, key), and
 * parked LOCK requests retried on every unlock and close and every 50 ms. */
struct srv_file *srv_file_ref(dev_t dev, ino_t ino);
void srv_file_unref(struct srv_file *f);
int srv_counter_op(struct srv_file *f, uint64_t key, uint32_t op, int64_t value, int64_t *old);
void srv_lock_park(srv_job *j);
void srv_lock_kick(void);
void srv_lock_cancel(srv_conn *c, srv_handle *hd); /* parked locks of a handle (NULL: all of c) */
int srv_lock_start(void);
void srv_lock_stop(void);
int srv_lock_try(srv_job *j); /* 1 done (replied), 0 still blocked */

/* resolve.c: open a path beneath the root. Returns an fd, or -errno with why set. */
int srv_resolve_open(int rootfd, const char *path, uint32_t pathlen, int oflags, mode_t mode, const char **why);
int srv_resolve_unlink(int rootfd, const char *path, uint32_t pathlen, const char **why);
/* A directory beneath the root (a credential's SUBDIR): an O_PATH descriptor or -errno. */
int srv_resolve_dir(int rootfd, const char *path, uint32_t pathlen, const char **why);
extern int srv_have_openat2; /* tests may force the fallback: 0 */

/* trace.c: server-side tracing (--trace DIR); the calls cost nothing when it is off. */
int srv_trace_open(const char *dir, const char *shown, char *why, size_t whylen);
void srv_trace_close(void);
void srv_trace_thread(const char *name); /* this thread's name in the trace */
/* A span from t0 (CLOCK_MONOTONIC ns) to now: cat "net" or "storage", name e.g. "pwrite", or
 * "recv" + type_name -> "recv WRITE"; flow the request id. */
void srv_trace_span(const char *cat, const char *name, const char *type_name, uint64_t t0, uint64_t bytes,
                    uint64_t offset, uint64_t flow);

/* tls.c: optional TLS (--tls-cert/--tls-key). */
int srv_tls_init(const char *cert, const char *key, char *why, size_t whylen);
int srv_tls_accept(srv_conn *c); /* handshake; on success c->io speaks TLS. 0 or -1 */
void srv_tls_free(srv_conn *c);

/* mac.c: records with a MAC under c->io (version 2 on plain TCP), keys from rio_kdf. */
int srv_mac_wrap(srv_conn *c, const uint8_t c2s[RIO_TAG], const uint8_t s2c[RIO_TAG]);
void srv_mac_free(srv_conn *c);

/* forward.c: the forwarder (--forward-to). */
int srv_forward_start(void);
void srv_forward_stop(void);
/* Takes body and the in-flight slot one_request counted for it; -1 ends c. */
int srv_forward_request(srv_conn *c, const rio_hdr *h, uint8_t *body, size_t n);
void srv_forward_end(srv_conn *c);
void srv_forward_free(srv_conn *c);

/* Requests served, by type, and bytes moved (logged at shutdown; the measurements use them). */
extern uint64_t srv_served[RIO_T_MAX + 1], srv_bytes_read, srv_bytes_written;

/* emulate.c: shaping of links and storage (no-ops when not configured). */
int srv_emulate_parse(const char *s, srv_emulate *e, char *why, size_t whylen);
int srv_emulate_wrap(srv_conn *c);    /* put the emulated link under c->io (no-op if none) */
void srv_emulate_unwrap(srv_conn *c); /* drain and remove it */
void srv_emulate_disk(size_t bytes);

#endif
