/* Records with a MAC (record.h): the one implementation, client and server. */
#include "rio/record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rio_rec_new(rio_records **out, const uint8_t tx[RIO_TAG], const uint8_t rx[RIO_TAG]) {
  rio_records *m = calloc(1, sizeof *m);
  if (!m) return ENOMEM;
  m->in = malloc(RIO_REC_MAX + RIO_TAG);
  m->out = malloc(RIO_REC_HDR + RIO_REC_MAX + RIO_TAG);
  int e = m->in && m->out ? 0 : ENOMEM;
  if (!e && rio_seal_init(&m->tx, tx)) e = EIO;
  if (!e && rio_seal_init(&m->rx, rx)) rio_seal_free(&m->tx), e = EIO;
  if (e) return free(m->in), free(m->out), free(m), e;
  pthread_mutex_init(&m->tx_lock, NULL);
  *out = m;
  return 0;
}

void rio_rec_free(rio_records *m) {
  if (!m) return;
  rio_seal_free(&m->tx);
  rio_seal_free(&m->rx);
  pthread_mutex_destroy(&m->tx_lock);
  free(m->in);
  free(m->out);
  free(m);
}

int rio_rec_send(rio_records *m, struct iovec *iov, int cnt, rio_rec_io wr, void *ctx, size_t *sent) {
  int e = 0;
  pthread_mutex_lock(&m->tx_lock);
  while (!e && cnt > 0) {
    size_t k = 0;
    while (cnt > 0 && k < RIO_REC_MAX) {
      size_t t = iov->iov_len < RIO_REC_MAX - k ? iov->iov_len : RIO_REC_MAX - k;
      memcpy(m->out + RIO_REC_HDR + k, iov->iov_base, t);
      k += t;
      rio_iov_advance(&iov, &cnt, t);
    }
    if (!k) break;
    for (int i = 0; i < 4; i++) m->out[i] = (uint8_t)(k >> (8 * i));
    if (rio_seal_tag(&m->tx, m->out + RIO_REC_HDR, (uint32_t)k, m->out + RIO_REC_HDR + k)) e = EIO;
    if (!e) e = wr(ctx, m->out, RIO_REC_HDR + k + RIO_TAG);
    if (!e) *sent += k;
  }
  pthread_mutex_unlock(&m->tx_lock);
  return e;
}

/* The next record, verified, into m->in. */
static int read_record(rio_records *m, rio_rec_io rd, void *ctx) {
  uint8_t lb[RIO_REC_HDR];
  int e = rd(ctx, lb, sizeof lb);
  if (e) return e;
  uint32_t n = (uint32_t)lb[0] | (uint32_t)lb[1] << 8 | (uint32_t)lb[2] << 16 | (uint32_t)lb[3] << 24;
  if (n == 0 || n > RIO_REC_MAX) return m->bad = "a record has an impossible length", EBADMSG;
  if ((e = rd(ctx, m->in, (size_t)n + RIO_TAG))) return e;
  if (!rio_seal_check(&m->rx, m->in, n, m->in + n)) return m->bad = "a record failed its MAC check", EBADMSG;
  m->pos = 0, m->len = n;
  return 0;
}

int rio_rec_recv(rio_records *m, struct iovec *iov, int cnt, size_t min, rio_rec_io rd, void *ctx, size_t *got) {
  while (cnt > 0) {
    if (iov->iov_len == 0) {
      iov++, cnt--;
      continue;
    }
    if (m->pos == m->len) {
      if (*got >= min) break;
      int e = read_record(m, rd, ctx);
      if (e) return e;
    }
    size_t k = iov->iov_len < m->len - m->pos ? iov->iov_len : m->len - m->pos;
    memcpy(iov->iov_base, m->in + m->pos, k);
    m->pos += k, *got += k;
    rio_iov_advance(&iov, &cnt, k);
  }
  return 0;
}
