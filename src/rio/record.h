/* Records with a MAC (protocol version 2 on plain TCP, src/rio/PROTOCOL.md): after
 * authentication the bytes of both directions travel in records of at most RIO_REC_MAX bytes,
 * each with an HMAC-SHA-256 tag over its sequence number, length and data (rio_seal), so that
 * nothing a relay injects, drops, reorders, replays or alters is ever handed on. The one
 * implementation of the record layer, for the client (rio/link.c) and pario-server
 * (server/mac.c): the caller supplies how raw bytes are read and written. */
#ifndef PARIO_RIO_RECORD_H
#define PARIO_RIO_RECORD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rio/proto.h"

/* Move exactly n raw bytes (read into buf, or write from it): 0 or an errno value. */
typedef int (*rio_rec_io)(void *ctx, void *buf, size_t n);

typedef struct rio_records {
  rio_seal tx, rx;
  pthread_mutex_t tx_lock; /* a record's seq and its place on the wire go together */
  uint8_t *in, *out;       /* the last verified record's data [pos, len); a record being sent */
  size_t pos, len;
  const char *bad;         /* after EBADMSG: what was wrong with the record */
} rio_records;

/* Records keyed with tx (this side's sending key) and rx: 0, ENOMEM or EIO. */
int rio_rec_new(rio_records **out, const uint8_t tx[RIO_TAG], const uint8_t rx[RIO_TAG]);
void rio_rec_free(rio_records *m);
/* Verified bytes not yet handed on. */
static inline size_t rio_rec_buffered(const rio_records *m) { return m->len - m->pos; }
/* Send every byte of iov (modified) in records, each written whole with wr; *sent counts the
 * data bytes. 0 or an errno. */
int rio_rec_send(rio_records *m, struct iovec *iov, int cnt, rio_rec_io wr, void *ctx, size_t *sent);
/* Hand iov (modified) verified bytes, reading records with rd while fewer than min bytes have
 * moved (*got counts them). 0, rd's errno, or EBADMSG (m->bad says why; m->rx.seq - 1 is the
 * record's number). */
int rio_rec_recv(rio_records *m, struct iovec *iov, int cnt, size_t min, rio_rec_io rd, void *ctx, size_t *got);

#endif
