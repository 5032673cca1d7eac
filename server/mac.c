/* Integrity after authentication on plain TCP (protocol version 2, RIO_HELLO_MAC): a record
 * layer under the frames, as TLS is but without encryption. Every byte read is verified before
 * the frame code sees it, so injected, dropped, reordered, replayed or altered bytes end the
 * connection before they are acted on (a WRITE's bad data never reach the file). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

typedef struct mac_link {
  const srv_io *inner;   /* the socket (or emulated link) under the records */
  rio_seal rx, tx;
  pthread_mutex_t tx_mu; /* a record's seq and its place on the wire go together */
  uint8_t *in;           /* the verified data of the last record read: [pos, len) */
  size_t pos, len;
  uint8_t *out;          /* one record being sent */
} mac_link;

static mac_link *ml(srv_conn *c) { return c->mac; }

/* The next record, verified, into m->in. */
static int read_record(srv_conn *c, uint64_t deadline) {
  mac_link *m = ml(c);
  uint8_t lb[RIO_REC_HDR];
  if (m->inner->recv(c, lb, sizeof lb, deadline)) return -1;
  uint32_t n = (uint32_t)lb[0] | (uint32_t)lb[1] << 8 | (uint32_t)lb[2] << 16 | (uint32_t)lb[3] << 24;
  if (n == 0 || n > RIO_REC_MAX) {
    srv_log(LOG_WARN, "conn %llu (%s): record of %u bytes (limits 1..%u): not from the authenticated peer; "
            "closing", (unsigned long long)c->serial, c->peer, n, RIO_REC_MAX);
    return errno = EBADMSG, -1;
  }
  if (m->inner->recv(c, m->in, (size_t)n + RIO_TAG, deadline)) return -1;
  if (!rio_seal_check(&m->rx, m->in, n, m->in + n)) {
    srv_log(LOG_WARN, "conn %llu (%s): record %llu failed its MAC check (injected, dropped, reordered, replayed "
            "or altered on the path); closing", (unsigned long long)c->serial, c->peer,
            (unsigned long long)(m->rx.seq - 1));
    return errno = EBADMSG, -1;
  }
  m->pos = 0, m->len = n;
  return 0;
}

static ssize_t mac_recv_some(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  mac_link *m = ml(c);
  if (m->pos == m->len && read_record(c, deadline)) return -1;
  size_t k = m->len - m->pos < n ? m->len - m->pos : n;
  memcpy(buf, m->in + m->pos, k);
  m->pos += k;
  return (ssize_t)k;
}

static int mac_recv(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  for (uint8_t *p = buf; n > 0;) {
    ssize_t r = mac_recv_some(c, p, n, deadline);
    if (r < 0) return -1;
    p += r, n -= (size_t)r;
  }
  return 0;
}

static int mac_send(srv_conn *c, const void *buf, size_t n) {
  mac_link *m = ml(c);
  const uint8_t *p = buf;
  int r = 0;
  pthread_mutex_lock(&m->tx_mu);
  while (n > 0 && r == 0) {
    uint32_t k = n < RIO_REC_MAX ? (uint32_t)n : RIO_REC_MAX;
    for (int i = 0; i < 4; i++) m->out[i] = (uint8_t)(k >> (8 * i));
    memcpy(m->out + RIO_REC_HDR, p, k);
    r = rio_seal_tag(&m->tx, p, k, m->out + RIO_REC_HDR + k);
    if (r == 0) r = m->inner->send(c, m->out, RIO_REC_HDR + (size_t)k + RIO_TAG);
    p += k, n -= k;
  }
  pthread_mutex_unlock(&m->tx_mu);
  return r;
}

static void mac_shutdown(srv_conn *c) { ml(c)->inner->shutdown(c); }

static const srv_io mac_io = {mac_recv, mac_send, mac_shutdown, mac_recv_some};

int srv_mac_wrap(srv_conn *c, const uint8_t c2s[RIO_TAG], const uint8_t s2c[RIO_TAG]) {
  mac_link *m = calloc(1, sizeof *m);
  if (!m) return -1;
  m->in = malloc(RIO_REC_MAX + RIO_TAG);
  m->out = malloc(RIO_REC_HDR + RIO_REC_MAX + RIO_TAG);
  int ok = m->in && m->out && rio_seal_init(&m->rx, c2s) == 0;
  if (ok && rio_seal_init(&m->tx, s2c) != 0) rio_seal_free(&m->rx), ok = 0;
  if (!ok) return free(m->in), free(m->out), free(m), -1;
  pthread_mutex_init(&m->tx_mu, NULL);
  m->inner = c->io;
  c->mac = m;
  c->io = &mac_io;
  return 0;
}

void srv_mac_free(srv_conn *c) {
  mac_link *m = ml(c);
  if (!m) return;
  rio_seal_free(&m->rx);
  rio_seal_free(&m->tx);
  pthread_mutex_destroy(&m->tx_mu);
  free(m->in);
  free(m->out);
  free(m);
  c->mac = NULL;
}
