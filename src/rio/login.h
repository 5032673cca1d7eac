/* A client's session with a pario-server, shared by the x-rio:// driver and a forwarder's
 * upstream connection: connect (with a timeout), TLS when asked, HELLO and AUTH (version 2
 * with records under a MAC on plain TCP, a named credential), the check of the limits the
 * server announces. Failures come back as an errno value and one line saying what to do. */
#ifndef PARIO_RIO_LOGIN_H
#define PARIO_RIO_LOGIN_H

#include <stddef.h>
#include <stdint.h>

#include "rio/link.h"
#include "rio/proto.h"

/* Where and as whom. */
typedef struct rio_target {
  const char *host, *port;
  int tls;                /* TLS (the server has --tls-cert) */
  const char *tls_ca;     /* CA file, "" for the system's store */
  const char *user;       /* credential name, "" for the server's "default" */
  const char *secret_file; /* for messages */
  const uint8_t *secret;
  size_t slen;
  long long timeout_ms;   /* connect, handshake, and each wait without progress */
  const rio_names *names; /* the settings messages name (NULL: the driver's hints) */
} rio_target;

/* What the server announced at login. */
typedef struct rio_session {
  uint16_t version;
  uint64_t max_request;
  uint32_t max_segments;
  uint64_t server_id;
} rio_session;

/* Connect to t and log in: l is set up (close it with rio_link_close), s filled. 0, or an errno
 * value (EACCES: refused secret or certificate; EPROTONOSUPPORT: TLS against plain or plain
 * against TLS; EBUSY: the server refused for load; EPROTO: not a pario server) with why saying
 * what to do. */
int rio_login(rio_link *l, const rio_target *t, rio_session *s, char *why, size_t wn);

/* A small request before any receiver runs (the handshake, PING): send the frame (id), read the
 * reply's body after its status block into out (exactly n bytes). 0 or an errno. */
int rio_link_call(rio_link *l, unsigned type, uint64_t id, const uint8_t *body, size_t blen, uint8_t *out, size_t n,
                  long long ms);

/* Read a secret file as the client does, why saying what to do when it will not serve. 0 or EACCES. */
int rio_load_secret(const char *path, uint8_t *buf, size_t *len, char *why, size_t wn);

#endif
