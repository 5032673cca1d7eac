/* The client's login to a pario-server (login.h). */
#include "rio/login.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int rio_link_call(rio_link *l, unsigned type, uint64_t id, const uint8_t *body, size_t blen, uint8_t *out, size_t n,
                  long long ms) {
  uint8_t hb[RIO_HDR_SIZE], sb[RIO_STATUS];
  rio_hdr h = {RIO_VERSION, (uint16_t)type, 0, (uint32_t)blen, id};
  rio_hdr_encode(hb, &h);
  struct iovec v[2] = {{hb, sizeof hb}, {(void *)body, blen}};
  int e = rio_link_xfer(l, 1, v, 2, ms);
  if (!e) e = rio_link_read(l, hb, sizeof hb, ms);
  if (!e && !l->ssl && (hb[0] == 0x15 || hb[0] == 0x16) && hb[1] == 3) e = EPROTONOSUPPORT; /* a TLS record */
  if (!e && (rio_hdr_decode(hb, &h) || !(h.type & RIO_REPLY) || h.len < RIO_STATUS || h.len > 4096)) e = EPROTO;
  if (!e) e = rio_link_read(l, sb, sizeof sb, ms);
  if (e) return e;
  rio_rd rd = rio_rd_init(sb, sizeof sb);
  int status = rio_get_status(&rd);
  if (status != RIO_OK || (h.type & ~RIO_REPLY) != type)
    return status == RIO_EAUTH ? EACCES : status != RIO_OK ? rio_errno_from_status(status) : EPROTO;
  if (h.len - RIO_STATUS != n) return EPROTO;
  return rio_link_read(l, out, n, ms);
}

/* HELLO and AUTH: both sides prove they know the secret. */
static int authenticate(rio_link *l, const rio_target *t, rio_session *s) {
  /* Plain TCP: version 2 with records under a MAC, nothing less (no downgrade to be had);
   * TLS protects the bytes already. */
  int tls = l->ssl != NULL;
  rio_hello m = {tls ? 1 : 2, RIO_PROTO_VERSION, tls ? 0 : RIO_HELLO_MAC, {0}, 0, {0}};
  if (t->user && t->user[0]) { /* a named credential needs version 2 */
    m.min_version = 2;
    m.name_len = (uint8_t)strlen(t->user);
    memcpy(m.name, t->user, m.name_len);
  }
  uint8_t b[RIO_HELLO_MAX], rep[RIO_MAC + 24], mac[RIO_MAC];
  if (rio_random(m.nonce, sizeof m.nonce)) return EIO;
  size_t n = rio_encode_hello(b, sizeof b, &m);
  int e = rio_link_call(l, RIO_T_HELLO, 1, b, n, rep, 8 + RIO_NONCE, t->timeout_ms);
  if (e) return e;
  rio_rd rd = rio_rd_init(rep, 8 + RIO_NONCE);
  s->version = rio_get_u16(&rd);
  rio_get_u16(&rd);
  uint32_t sflags = rio_get_u32(&rd);
  const uint8_t *challenge = rio_get_bytes(&rd, RIO_NONCE);
  if (s->version < m.min_version || s->version > m.max_version || !challenge) return EPROTO;
  if (!tls && !(sflags & RIO_HELLO_MAC)) return EPROTO;
  uint8_t ch[RIO_NONCE];
  memcpy(ch, challenge, sizeof ch);
  if (rio_auth_mac(t->secret, t->slen, 0, ch, m.nonce, mac)) return EIO;
  e = rio_link_call(l, RIO_T_AUTH, 2, mac, sizeof mac, rep, RIO_MAC + 24, t->timeout_ms);
  if (e) return e;
  rd = rio_rd_init(rep, RIO_MAC + 24);
  const uint8_t *smac = rio_get_bytes(&rd, RIO_MAC);
  s->max_request = rio_get_u64(&rd);
  s->max_segments = rio_get_u32(&rd);
  s->server_id = rio_get_u64(&rd);
  if (rio_auth_mac(t->secret, t->slen, 1, ch, m.nonce, mac)) return EIO;
  if (!smac || !rio_mac_equal(smac, mac)) return EACCES; /* the server does not know the secret */
  if (s->max_request < RIO_MIN_MAX_REQUEST || s->max_segments < 1) return EPROTO;
  return tls ? 0 : rio_link_mac_start(l, t->secret, t->slen, ch, m.nonce);
}

/* Why a handshake failed, in one line that says what to do. */
static void say_refused(const rio_target *t, int e, char *why, size_t wn) {
  const char *user = t->user && t->user[0] ? t->user : NULL;
  const rio_names *nm = t->names ? t->names : &rio_names_driver;
  if (e == EACCES && user)
    snprintf(why, wn, "%s refused credential %s with the secret in %s: check the name (%s) and that the server's "
             "--credentials has the same secret", t->host, user, t->secret_file, nm->user);
  else if (e == EACCES)
    snprintf(why, wn, "%s refused the secret in %s: use the server's secret file (%s)", t->host, t->secret_file,
             nm->secret);
  else if (e == EPROTONOSUPPORT)
    snprintf(why, wn, "%s speaks TLS: %s", t->host, nm->tls_on);
  else if (e == EPROTO && t->tls)
    snprintf(why, wn, "%s: no pario handshake over TLS: is it a pario-server? (or %s)", t->host, nm->tls_off);
  else if (e == EPROTO)
    snprintf(why, wn, "%s:%s does not speak pario's protocol version 2: is it a pario-server of this version?",
             t->host, t->port);
  else if (e == EBUSY)
    snprintf(why, wn, "%s refused the connection for load (server busy): try again later or raise its "
             "--max-conns", t->host);
  else if (e == ECONNRESET && !t->tls) /* a TLS server resets a plain HELLO (its alert may be lost) */
    snprintf(why, wn, "%s:%s closed the connection at login: a TLS server? then %s; else see the server's log",
             t->host, t->port, nm->tls_on);
  else if (e == ETIMEDOUT)
    snprintf(why, wn, "%s:%s accepted the connection but did not answer the login within the timeout "
             "(pario_rio_timeout)", t->host, t->port);
  else
    snprintf(why, wn, "%s:%s: the login failed: %s", t->host, t->port, strerror(e));
}

int rio_login(rio_link *l, const rio_target *t, rio_session *s, char *why, size_t wn) {
  memset(s, 0, sizeof *s);
  int e = rio_link_dial(l, t->host, t->port, t->timeout_ms, why, wn);
  if (e) return e;
  e = t->tls ? rio_link_tls(l, t->host, t->tls_ca ? t->tls_ca : "", t->timeout_ms,
                           t->names ? t->names : &rio_names_driver, why, wn)
             : 0;
  if (!e && (e = authenticate(l, t, s)) != 0) say_refused(t, e, why, wn);
  if (e) rio_link_close(l);
  return e;
}

int rio_load_secret(const char *path, uint8_t *buf, size_t *len, char *why, size_t wn) {
  char what[128];
  int e = rio_read_secret(path, buf, len, what, sizeof what);
  if (!e) return 0;
  if (e == EINVAL)
    snprintf(why, wn, "%s: %s: make it %d to %d bytes (e.g. openssl rand -hex 32 > FILE)", path, what, RIO_MIN_SECRET,
             RIO_MAX_SECRET);
  else
    snprintf(why, wn, "%s: %s (%s): check the path and that this user may read it", path, what, strerror(e));
  return EACCES; /* without the secret the server cannot be reached: access denied */
}
