/* What a request passes before its handler works (ops.c, read.c, write.c): a body that decodes
 * (a malformed one ends the connection), a handle open on this connection, and the rights of the
 * connection's credential (a read-only one refused any change, with the reason). */
#include <stdio.h>
#include <sys/socket.h>

#include "server.h"

/* A body that does not decode: a malformed body (EPROTO: fields that do not add up to its
 * length) ends the connection, as PROTOCOL.md says; other codes (a value out of range in a
 * well-formed body) are ordinary refusals. */
int srv_bad_body(srv_job *j, int e) {
  if (e == RIO_EPROTO) {
    srv_log(LOG_WARN, "conn %llu (%s): protocol error: malformed request body (type %u); closing",
            (unsigned long long)j->c->serial, j->c->peer, j->h.type);
    srv_reply_error(j->c, j->h.id, RIO_EPROTO, "malformed request body");
    /* The reader stops before its next frame (SHUT_RD wakes it from a read) and sends what is
     * queued, this ERROR included, before the end. */
    __atomic_store_n(&j->c->stop_reading, 1, __ATOMIC_RELEASE);
    if (j->c->fd < 0 || shutdown(j->c->fd, SHUT_RD)) {
      pthread_mutex_lock(&j->c->mu);
      srv_set_dead(j->c);
      pthread_mutex_unlock(&j->c->mu);
      j->c->io->shutdown(j->c);
    }
  } else {
    srv_reply(j->c, j->h.type, j->h.id, e, NULL, 0);
  }
  return e;
}

/* Take the job's handle (first u64 of the body); 0, or replied with EBADF. */
int srv_take_handle(srv_job *j, uint64_t value) {
  int st;
  j->hd = srv_handle_get(j->c, value, &st);
  j->handle = value;
  if (!j->hd) srv_reply(j->c, j->h.type, j->h.id, st, NULL, 0);
  return j->hd ? 0 : -1;
}

/* What a read-only credential asking for op is told, and logged. */
void srv_ro_refusal(srv_conn *c, const char *op, char *msg, size_t n) {
  snprintf(msg, n, "%s refused: credential %s is read-only", op, c->cred->name);
  srv_log(LOG_WARN, "conn %llu (%s): %s", (unsigned long long)c->serial, c->peer, msg);
}

/* A read-only credential asking to change something: logged, answered RIO_EACCES with the
 * cause (an ERROR reply). 1 if refused. */
int srv_refused_ro(srv_job *j, const char *op) {
  if (!srv_conn_ro(j->c)) return 0;
  char msg[128];
  srv_ro_refusal(j->c, op, msg, sizeof msg);
  srv_reply_error(j->c, j->h.id, RIO_EACCES, msg);
  return 1;
}

/* What every request on an open handle passes first, in this order: a well-formed body (e: the
 * decoder's status), a read-only credential refused when the request changes something (change:
 * what it changes; NULL when nothing), the handle open on this connection. 1 when the request
 * was answered here. */
int srv_admit(srv_job *j, int e, const char *change, uint64_t h) {
  if (e) return srv_bad_body(j, e), 1;
  if (change && srv_refused_ro(j, change)) return 1;
  return srv_take_handle(j, h) ? 1 : 0;
}
