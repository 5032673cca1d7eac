/* The client's transport to a pario-server, shared by the x-rio:// driver (driver/rio*.c) and a
 * forwarder's upstream connection (server/forward.c): a non-blocking TCP socket with a
 * connect timeout, TLS inside it when asked, and the MAC records of protocol version 2
 * (rio/record.h) after authentication. Every wait has a deadline (the longest wait without
 * progress). Functions return 0 or an errno value. No MPI, no logging: what went wrong is
 * returned in words (why) for the caller to show. */
#ifndef PARIO_RIO_LINK_H
#define PARIO_RIO_LINK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rio/proto.h"
#include "rio/record.h"

typedef struct ssl_st rio_ssl; /* OpenSSL's SSL */

/* The settings a message tells the user to change: the driver's hints, or a forwarder's options. */
typedef struct rio_names {
  const char *tls_on, *tls_off; /* how to turn TLS on, off */
  const char *ca;               /* the CA file's setting */
  const char *user, *secret;    /* the credential's name, its secret file */
} rio_names;
extern const rio_names rio_names_driver;

/* A connection's byte stream. One SSL object is used by a receiver and senders: each SSL call
 * holds lock, the waiting for the socket happens outside it. */
typedef struct rio_link {
  int fd;
  rio_ssl *ssl;
  pthread_mutex_t lock;
  rio_records *mac;     /* records with a MAC after authentication (plain TCP, version 2) */
  long long rec_ms;     /* a record that has begun must keep coming: its progress timeout */
  uint8_t first[64];    /* the first bytes the TLS handshake read (what a refusal said) */
  size_t nfirst;
} rio_link;


/* A TCP connection to host:port within ms (non-blocking, TCP_NODELAY), set up as l. */
int rio_link_dial(rio_link *l, const char *host, const char *port, long long ms, char *why, size_t wn);

/* TLS over the connected socket: TLS 1.2 or later, the server's certificate verified against
 * ca (or the system's store, ca "") and checked to name host, the handshake within ms. */
int rio_link_tls(rio_link *l, const char *host, const char *ca, long long ms, const rio_names *nm, char *why,
                 size_t wn);

/* Send (wr) or receive iov (modified) until at least min bytes have moved (*got counts them):
 * a receive may take more, up to the iovecs' room. ms: the longest wait without progress; 0 on
 * a receive: only what is there now (ETIMEDOUT when nothing is). EBADMSG: a record failed its
 * MAC check or has an impossible length (rio_link_bad says which). */
int rio_link_xfer_some(rio_link *l, int wr, struct iovec *iov, int cnt, size_t min, long long ms, size_t *got);
/* Every byte of iov (modified). */
int rio_link_xfer(rio_link *l, int wr, struct iovec *iov, int cnt, long long ms);
int rio_link_read(rio_link *l, void *p, size_t n, long long ms);

/* After AUTH on plain TCP: records with a MAC from now on, under the handshake's keys. */
int rio_link_mac_start(rio_link *l, const uint8_t *secret, size_t slen, const uint8_t challenge[RIO_NONCE],
                       const uint8_t nonce[RIO_NONCE]);

void rio_link_close(rio_link *l);

#endif
