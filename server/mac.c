/* Integrity after authentication on plain TCP (protocol version 2, RIO_HELLO_MAC): the record
 * layer (src/rio/record.c, the one implementation client and server share) under the frames,
 * as TLS is but without encryption. Every byte read is verified before the frame code sees it,
 * so injected, dropped, reordered, replayed or altered bytes end the connection before they
 * are acted on (a WRITE's bad data never reach the file). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rio/record.h"
#include "server.h"

typedef struct mac_link {
  const srv_io *inner; /* the socket (or emulated link) under the records */
  rio_records *rec;
} mac_link;

static mac_link *ml(srv_conn *c) { return c->mac; }

/* Raw bytes under the records: the inner link's calls, as 0 or an errno. */
typedef struct raw {
  srv_conn *c;
  uint64_t deadline;
} raw;

static int raw_recv(void *ctx, void *buf, size_t n) {
  raw *r = ctx;
  return ml(r->c)->inner->recv(r->c, buf, n, r->deadline) ? (errno ? errno : EIO) : 0;
}

static int raw_send(void *ctx, void *buf, size_t n) {
  raw *r = ctx;
  return ml(r->c)->inner->send(r->c, buf, n) ? (errno ? errno : EIO) : 0;
}

/* At least min bytes (of at most n) verified, or -1 (errno set; a bad record logged). */
static ssize_t mac_read(srv_conn *c, void *buf, size_t n, size_t min, uint64_t deadline) {
  mac_link *m = ml(c);
  raw r = {c, deadline};
  struct iovec v = {buf, n};
  size_t got = 0;
  int e = rio_rec_recv(m->rec, &v, 1, min, raw_recv, &r, &got);
  if (e == EBADMSG)
    srv_log(LOG_WARN, "conn %llu (%s): record %llu: %s (injected, dropped, reordered, replayed or altered on the "
            "path, or not from the authenticated peer); closing", (unsigned long long)c->serial, c->peer,
            (unsigned long long)(m->rec->rx.seq ? m->rec->rx.seq - 1 : 0), m->rec->bad);
  if (e) return errno = e, -1;
  return (ssize_t)got;
}

static ssize_t mac_recv_some(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  return mac_read(c, buf, n, 1, deadline);
}

static int mac_recv(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  return mac_read(c, buf, n, n, deadline) < 0 ? -1 : 0;
}

static int mac_send(srv_conn *c, const void *buf, size_t n) {
  raw r = {c, 0};
  struct iovec v = {(void *)buf, n};
  size_t sent = 0;
  int e = rio_rec_send(ml(c)->rec, &v, 1, raw_send, &r, &sent);
  return e ? (errno = e, -1) : 0;
}

static void mac_shutdown(srv_conn *c) { ml(c)->inner->shutdown(c); }

static const srv_io mac_io = {mac_recv, mac_send, mac_shutdown, mac_recv_some};

int srv_mac_wrap(srv_conn *c, const uint8_t c2s[RIO_TAG], const uint8_t s2c[RIO_TAG]) {
  mac_link *m = calloc(1, sizeof *m);
  if (!m || rio_rec_new(&m->rec, s2c, c2s)) return free(m), -1;
  m->inner = c->io;
  c->mac = m;
  c->io = &mac_io;
  return 0;
}

void srv_mac_free(srv_conn *c) {
  mac_link *m = ml(c);
  if (!m) return;
  rio_rec_free(m->rec);
  free(m);
  c->mac = NULL;
}
