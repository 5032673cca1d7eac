/* The x-rio:// driver's connections (driver/rioconn.c), for its data path (driver/rio.c): a
 * process-wide cache of authenticated TCP or TLS connections (rio/login.h). One connection
 * carries any number of requests in flight from any number of threads: senders take turns
 * under a send lock, one receiver thread per connection hands each reply to its waiter by id.
 * Every wait has a deadline (no progress for the timeout); a dead connection fails all its
 * waiters at once, and the next handle to need the server connects again. Submitted transfers
 * have no waiter: the receiver completes them, and a connection's one sender thread sends the
 * large writes among them. */
#ifndef PARIO_DRIVER_RIOCONN_H
#define PARIO_DRIVER_RIOCONN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rio/link.h"
#include "rio/proto.h"

#define SMALL_REPLY 64 /* the largest fixed reply after the status block (AUTH: 56) */

/* Settings of one handle (or one DELETE): where, with which secret, how patient. */
typedef struct rio_where {
  char host[256], port[16], secret_file[512];
  int tls;            /* pario_rio_tls */
  char tls_ca[512];   /* pario_rio_tls_ca: "" for the system's CA store */
  char user[RIO_MAX_CRED_NAME + 1]; /* pario_rio_user: "" for the server's "default" */
  const char *path; /* relative to the server's root */
  uint8_t secret[RIO_MAX_SECRET];
  size_t slen;
  long long timeout_ms;
} rio_where;


enum { WAITING, RECEIVING, DONE };

/* A submitted list transfer (driver.h submit), of the data path (rio.c). Its first member is
 * its link in a connection's send queue. */
typedef struct rio_aio rio_aio;
typedef struct rio_qnode {
  struct rio_qnode *next;
} rio_qnode;

typedef struct rio_req {
  struct rio_req *next;
  uint64_t id;
  unsigned type;
  int state; /* WAITING; RECEIVING while the receiver fills it (its waiter stays); DONE */
  int err;   /* 0, the errno of a transport failure, or the reply status as an errno */
  /* READ: where the data goes and how much may come; got: the bytes that came. */
  const struct iovec *iov;
  int iovcnt;
  uint64_t want, got;
  uint8_t fixed[SMALL_REPLY]; /* other replies: the fields after the status block */
  uint32_t fixedn;
  uint64_t t0, sent; /* tracing: when it started, bytes of body and data sent */
  rio_aio *aio;      /* a submitted request (driver.h submit): nobody waits, the receiver
                        * completes it; its deadline runs from `since` */
  uint64_t since;
} rio_req;

typedef struct rio_conn {
  struct rio_conn *next; /* in the cache */
  char host[256], port[16], secret_file[512], tls_ca[512];
  char user[RIO_MAX_CRED_NAME + 1]; /* pario_rio_user: the credential's name, "" for none */
  int tls;
  rio_link link;
  long long timeout_ms;       /* progress timeout of the receiver's reads */
  pthread_mutex_t lock;       /* pending, dead, err, refs */
  pthread_cond_t cond;        /* a reply came or the connection died */
  pthread_mutex_t send_lock;  /* one frame at a time on the wire */
  rio_req *pending;
  int naio;                   /* submitted requests in pending: the receiver keeps their time */
  pthread_cond_t send_cond;   /* the sender thread: a queued transfer, or the end */
  rio_qnode *sendq, *sendq_tail; /* submitted writes the sender thread puts on the wire */
  int sender;                 /* the sender thread runs (made at the first queued write) */
  int dead, err;
  int refs;                   /* handles using it, and the receiver thread */
  uint64_t max_request;
  uint32_t max_segments;
  uint16_t version;
  uint8_t *rx;                /* the receiver's read-ahead: [rx_pos, rx_len) of RX_CAP bytes */
  size_t rx_pos, rx_len;
  /* Frames without data (READ and the small requests) made while the receiver is handling
   * replies wait here, copied, and leave together (the rules at queue_frame): bytes
   * [outq_head, outq_len) of OUTQ_CAP, under lock; NULL under TLS. */
  uint8_t *outq;
  size_t outq_head, outq_len;
  int rx_awake;               /* the receiver is handling bytes it has read: it sends the queue
                               * before it next waits, so a frame queued now leaves soon */
  int sending;                /* a thread holding send_lock will look at the queue again */
} rio_conn;

/* The connection for w: a live one from the cache, or a new one (connected and logged in).
 * On failure why says what to do, in one line. */
int rio_conn_get(const rio_where *w, rio_conn **out, char *why, size_t wn);
/* Drop a reference (a handle's): the last one closes the connection. */
void rio_conn_put(rio_conn *c);

/* Put a request on the wire (header, body, then data) and register it for its reply. A
 * failure ends the connection and reaches the waiter through rio_finish (or, submitted, the
 * transfer's completion). */
void rio_start(rio_conn *c, rio_req *r, unsigned type, const void *body, size_t blen, const struct iovec *data,
               int datacnt, uint64_t datalen);
/* Wait for r's reply, at most ms without it: then the server is taken for dead. r->err. */
int rio_finish(rio_conn *c, rio_req *r, long long ms);
/* One request and its reply; reply fields land in r->fixed. */
int rio_call(rio_conn *c, rio_req *r, unsigned type, const void *body, size_t blen, long long ms);
/* Queue a submitted write (its rio_qnode) for the connection's sender thread (made here the
 * first time), which calls rio_aio_send on it. 0, or an errno with nothing queued. */
int rio_queue_send(rio_conn *c, rio_aio *a);

/* Of the data path (rio.c): one request of a submitted transfer is done, its last completes
 * it; and the sender thread's sending of a queued transfer. */
void rio_aio_part_done(rio_aio *a);
void rio_aio_send(rio_conn *c, rio_aio *a);

#endif
