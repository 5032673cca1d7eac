/* A relay on the path between a client and pario-server (tests/rio/relay.sh): it forwards one
 * connection both ways and, after the handshake, attacks the client's stream as someone on the
 * path without the secret could: inject a DELETE, drop, reorder or replay a unit (a record
 * under the MAC, else a frame), or flip a byte of the WRITE data.
 * usage: relay SERVER_PORT MODE   (MODE: pass inject drop reorder replay flip); prints its port */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rio/proto.h"

typedef struct dir {
  int from, to;
  uint8_t *buf;
  size_t len, cap;
  int frames;  /* handshake frames seen */
} dir;

static const char *mode;
static int mac, units, done;
static uint8_t *held;
static size_t heldn;

static void send_all(int fd, const void *p, size_t n) {
  for (const uint8_t *b = p; n;) {
    ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
    if (k <= 0) return;
    b += k, n -= (size_t)k;
  }
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* The DELETE of "victim" as the attacker can make it: a plain frame, in a record with a made-up
 * tag where records are in use. */
static void inject(int fd) {
  uint8_t f[RIO_HDR_SIZE + 4 + 6], r[RIO_REC_HDR + sizeof f + RIO_TAG];
  rio_hdr h = {RIO_VERSION, RIO_T_DELETE, 0, 10, 7};
  rio_hdr_encode(f, &h);
  rio_wr w = rio_wr_init(f + RIO_HDR_SIZE, 10);
  rio_put_u32(&w, 6);
  rio_put_bytes(&w, "victim", 6);
  if (!mac) return send_all(fd, f, sizeof f);
  memset(r, 0, sizeof r);
  r[0] = sizeof f;
  memcpy(r + RIO_REC_HDR, f, sizeof f);
  send_all(fd, r, sizeof r);
}

/* One unit of the client's stream after the handshake, attacked by mode. */
static void client_unit(int to, uint8_t *u, size_t n) {
  int k = units++;
  if (!strcmp(mode, "inject") && k == 0) inject(to);
  if (!strcmp(mode, "drop") && k == 2) return;
  if (!strcmp(mode, "replay") && k == 2) send_all(to, u, n);
  if (!strcmp(mode, "reorder") && k == 2) {
    held = malloc(n), heldn = n;
    memcpy(held, u, n);
    return;
  }
  if (!strcmp(mode, "flip") && !done && n > 2000) u[n / 2] ^= 0x20, done = 1;
  send_all(to, u, n);
  if (held && k == 3) send_all(to, held, heldn), free(held), held = NULL;
}

/* The length of the next whole unit in d's buffer, or 0. */
static size_t unit_len(const dir *d, int c2s) {
  int framed = d->frames < 2 || !mac || !c2s;
  size_t need = framed ? RIO_HDR_SIZE : RIO_REC_HDR;
  if (d->len < need) return 0;
  size_t n = framed ? RIO_HDR_SIZE + le32(d->buf + 12) : RIO_REC_HDR + le32(d->buf) + RIO_TAG;
  return d->len >= n ? n : 0;
}

static int pump(dir *d, int c2s) {
  if (d->cap - d->len < 65536) d->buf = realloc(d->buf, d->cap = d->cap * 2 + 65536);
  ssize_t k = recv(d->from, d->buf + d->len, d->cap - d->len, 0);
  if (k <= 0) return -1;
  d->len += (size_t)k;
  if (!c2s && d->frames >= 2) { /* the server's replies: passed on as they come */
    send_all(d->to, d->buf, d->len);
    d->len = 0;
    return 0;
  }
  for (size_t n; (n = unit_len(d, c2s)) > 0;) {
    if (!c2s && d->frames == 0) mac = (le32(d->buf + RIO_HDR_SIZE + 12) & RIO_HELLO_MAC) != 0;
    if (d->frames < 2) d->frames++, send_all(d->to, d->buf, n);
    else client_unit(d->to, d->buf, n);
    memmove(d->buf, d->buf + n, d->len - n);
    d->len -= n;
    if (!c2s && d->frames == 2) return send_all(d->to, d->buf, d->len), d->len = 0, 0;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) return fprintf(stderr, "usage: relay SERVER_PORT MODE\n"), 2;
  mode = argv[2];
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &al))
    return perror("relay: listen"), 1;
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  int cs = accept(ls, NULL, NULL), ss = socket(AF_INET, SOCK_STREAM, 0);
  a.sin_port = htons((uint16_t)atoi(argv[1]));
  if (cs < 0 || ss < 0 || connect(ss, (struct sockaddr *)&a, sizeof a)) return perror("relay: connect"), 1;
  dir up = {cs, ss, NULL, 0, 0, 0}, down = {ss, cs, NULL, 0, 0, 0};
  for (;;) {
    struct pollfd p[2] = {{cs, POLLIN, 0}, {ss, POLLIN, 0}};
    if (poll(p, 2, 30000) <= 0) break; /* bounded: the test never hangs on the relay */
    if (p[0].revents && pump(&up, 1)) break;
    if (p[1].revents && pump(&down, 0)) break;
  }
  close(cs), close(ss), close(ls);
  free(up.buf), free(down.buf);
  return 0;
}
