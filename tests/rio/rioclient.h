/* A small test client of pario's remote I/O protocol: starts pario-server on 127.0.0.1:0 with
 * a temporary root, speaks the raw protocol through the codec (src/rio/proto.h), and offers
 * one call per request type. For the rio tests only; the real client is driver/rio.c. */
#ifndef PARIO_TESTS_RIOCLIENT_H
#define PARIO_TESTS_RIOCLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rio/proto.h"

typedef struct rc_server {
  pid_t pid;
  char host[64];
  int port;
  char log[600];    /* the server's stderr */
  char root[512];
  char secret[600]; /* secret file path */
  char forward_to[80]; /* non-empty: start a forwarder to this HOST:PORT instead of a server */
  int nofile;          /* > 0: the server runs with RLIMIT_NOFILE this low (soft and hard) */
  char listen[80];     /* non-empty: --listen this HOST:PORT instead of 127.0.0.1:0 */
} rc_server;

/* Make a temporary directory with root/ and a secret file (work->root, work->secret). */
int rc_workdir(rc_server *s, const char *tag);
/* Start bin on 127.0.0.1:0 (or s->listen) with s->root and s->secret plus extra arguments (NULL-terminated),
 * wait for the HOST:PORT line. 0 or -1. */
int rc_server_start(rc_server *s, const char *bin, const char *const *extra);
/* SIGTERM and wait: the exit status (0 for a clean stop), or -1. */
int rc_server_stop(rc_server *s);
void rc_server_kill(rc_server *s); /* SIGKILL and reap */
int rc_log_has(const rc_server *s, const char *needle); /* count of log lines containing it */
int rc_read_secret(const rc_server *s, uint8_t *buf, size_t *len);
/* CLOCK_MONOTONIC in seconds, for the tests' deadlines and durations. */
double rc_now_s(void);

typedef struct rc_conn {
  int fd;
  uint64_t next_id;
  uint64_t max_request, server_id;
  uint32_t max_segments;
  unsigned last_type; /* the last reply's type (without RIO_REPLY): the request's, or RIO_T_ERROR */
  char last_msg[RIO_MAX_ERRMSG + 1]; /* an ERROR reply's message, else "" */
} rc_conn;

/* A TCP socket (TLS inside when PARIO_RIO_TEST_TLS_CA names the CA file), or -1. */
int rc_connect_raw(const char *host, int port);
void rc_close_fd(int fd);
/* 1 when the connection on fd runs records with a MAC (version 2; rc_connect_as asks for them
 * on plain TCP when PARIO_RIO_TEST_MAC=1 and fails if the server does not grant them). */
int rc_has_mac(int fd);
/* Connect and authenticate: 0, a RIO_E* status from the server, or -1 (connection broke). */
int rc_connect(rc_conn *c, const rc_server *s, const uint8_t *secret, size_t slen);
/* The same, naming a credential (HELLO version 2 with a name; name NULL: none, version 1 unless
 * records are asked for). */
int rc_connect_as(rc_conn *c, const rc_server *s, const char *name, const uint8_t *secret, size_t slen);
void rc_close_conn(rc_conn *c);
int rc_send_frame(int fd, unsigned type, uint64_t id, const void *body, size_t n);
int rc_send_all(int fd, const void *p, size_t n);
/* One frame: 0 and the body (malloc'd, *body may be NULL for 0 bytes) or -1. */
int rc_recv_frame(int fd, rio_hdr *h, uint8_t **body, int timeout_ms);
/* A request and its reply: the status, or -1. With reply non-NULL it gets the bytes after the
 * status block (malloc'd). */
int rc_call(rc_conn *c, unsigned type, const void *body, size_t n, uint8_t **reply, size_t *rn);

int rc_open(rc_conn *c, const char *path, uint32_t flags, uint32_t perm, uint64_t *handle, uint64_t *size);
int rc_handle_op(rc_conn *c, unsigned type, uint64_t handle); /* CLOSE, SYNC */
int rc_stat(rc_conn *c, uint64_t handle, uint64_t *size);
int rc_set_size(rc_conn *c, uint64_t handle, uint64_t size);
int rc_preallocate(rc_conn *c, uint64_t handle, uint64_t off, uint64_t len);
int rc_delete(rc_conn *c, const char *path);
int rc_write(rc_conn *c, uint64_t handle, uint32_t nseg, const uint64_t *off, const uint64_t *len, const void *data,
             uint64_t *done);
int rc_write_coll(rc_conn *c, uint64_t handle, uint64_t coll_id, uint32_t coll_n, uint32_t nseg, const uint64_t *off,
                  const uint64_t *len, const void *data, uint64_t *done);
int rc_read(rc_conn *c, uint64_t handle, uint32_t nseg, const uint64_t *off, const uint64_t *len, void *buf,
            uint64_t *done);
int rc_lock(rc_conn *c, uint64_t handle, uint32_t op, uint64_t off, uint64_t len);
int rc_counter(rc_conn *c, uint64_t handle, uint64_t key, uint32_t op, int64_t value, int64_t *old);
int rc_ping(rc_conn *c);
/* Encode a READ/WRITE body (data appended for WRITE when data is non-NULL): malloc'd, or NULL. */
uint8_t *rc_io_body(uint64_t handle, uint64_t coll_id, uint32_t coll_n, uint32_t nseg, const uint64_t *off,
                    const uint64_t *len, const void *data, size_t *n);

#endif
