/* rio-load: a bounded collective load for pario-server and its forwarder (tests/rio/measure.sh):
 * N client threads, S steps, each step every client writes or reads its piece of a block of N
 * adjacent pieces, tagged as one collective, then all wait. Prints MB/s and requests/s.
 * usage: rio-load HOST:PORT SECRET [--clients N] [--steps S] [--piece B] [--op write|read] ...
 * Transport: plain TCP; TLS with PARIO_RIO_TEST_TLS_CA=cert.pem; records with a MAC (protocol
 * version 2) with PARIO_RIO_TEST_MAC=1. The line printed names the transport the connections
 * actually used. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rioclient.h"

static rc_server S;
static uint8_t secret[RIO_MAX_SECRET];
static size_t slen;
static int nclients = 4, steps = 100, coll = 1, is_write = 1, errors;
static uint64_t piece = 65536;
static double max_seconds = 30;
static const char *file = "load.dat";
static pthread_barrier_t bar;
static volatile int stop;
static uint64_t moved, requests;
static int nmac; /* connections that run records with a MAC */

static void *client(void *arg) {
  int rank = (int)(long)arg, bad = 0;
  rc_conn c;
  uint64_t h = 0;
  uint8_t *buf = malloc(piece), *rb;
  memset(buf, 'a' + rank, piece);
  if (rc_connect(&c, &S, secret, slen) || rc_open(&c, file, RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL)) bad = 1;
  if (!bad && rc_has_mac(c.fd)) __atomic_add_fetch(&nmac, 1, __ATOMIC_RELAXED);
  pthread_barrier_wait(&bar);
  static double t0;
  if (rank == 0) t0 = rc_now_s();
  for (int s = 0; s < steps; s++) {
    if (!bad) {
      uint64_t off = ((uint64_t)s * (uint64_t)nclients + (uint64_t)rank) * piece, done;
      size_t n, rn;
      uint8_t *body = rc_io_body(h, coll ? (uint64_t)s + 1 : 0, coll ? (uint32_t)nclients : 0, 1, &off, &piece,
                                 is_write ? buf : NULL, &n);
      int st = rc_call(&c, is_write ? RIO_T_WRITE : RIO_T_READ, body, n, &rb, &rn);
      free(body);
      done = st == 0 && rn >= 8 ? rio_load_u64(rb) : 0;
      if (st == 0) free(rb);
      if (st != 0) bad = 1;
      __atomic_add_fetch(&moved, done, __ATOMIC_RELAXED);
      __atomic_add_fetch(&requests, 1, __ATOMIC_RELAXED);
    }
    if (rank == 0 && rc_now_s() - t0 > max_seconds) stop = 1;
    pthread_barrier_wait(&bar);
    if (stop) break;
  }
  rc_handle_op(&c, RIO_T_CLOSE, h);
  rc_close_conn(&c);
  free(buf);
  if (bad) __atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
  return NULL;
}

static const char usage[] =
    "usage: rio-load HOST:PORT SECRET_FILE [--clients N] [--steps S] [--piece BYTES] [--op write|read]\n"
    "       [--coll 0|1] [--max-seconds S] [--file NAME]\n"
    "A bounded load on pario-server (tests/rio/measure.sh). PARIO_RIO_TEST_TLS_CA=cert.pem: TLS;\n"
    "PARIO_RIO_TEST_MAC=1: records with a MAC (protocol version 2) on plain TCP.\n";

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--help")) return fputs(usage, stdout), 0;
  if (argc == 2 && !strcmp(argv[1], "--version")) return puts("rio-load (pario tests)"), 0;
  if (argc < 3 || argc % 2 == 0) return fputs(usage, stderr), 2;
  const char *colon = strrchr(argv[1], ':');
  if (!colon) return fprintf(stderr, "rio-load: expected HOST:PORT\n"), 2;
  snprintf(S.host, sizeof S.host, "%.*s", (int)(colon - argv[1]), argv[1]);
  S.port = atoi(colon + 1);
  snprintf(S.secret, sizeof S.secret, "%s", argv[2]);
  for (int i = 3; i + 1 < argc; i += 2) { /* argc is odd: every option has its value */
    const char *o = argv[i], *v = argv[i + 1];
    if (!strcmp(o, "--clients")) nclients = atoi(v);
    else if (!strcmp(o, "--steps")) steps = atoi(v);
    else if (!strcmp(o, "--piece")) piece = strtoull(v, NULL, 10);
    else if (!strcmp(o, "--op")) is_write = !strcmp(v, "write");
    else if (!strcmp(o, "--coll")) coll = atoi(v);
    else if (!strcmp(o, "--max-seconds")) max_seconds = atof(v);
    else if (!strcmp(o, "--file")) file = v;
    else return fprintf(stderr, "rio-load: unknown option %s\n", o), 2;
  }
  if (nclients < 1 || nclients > 256 || steps < 1 || steps > 1000000 || piece < 1 || piece > (16u << 20))
    return fprintf(stderr, "rio-load: clients 1..256, steps 1..10^6, piece 1..16M\n"), 2;
  if (rc_read_secret(&S, secret, &slen)) return fprintf(stderr, "rio-load: cannot read %s\n", argv[2]), 1;
  pthread_barrier_init(&bar, NULL, (unsigned)nclients);
  pthread_t *t = calloc((size_t)nclients, sizeof *t);
  double t0 = rc_now_s();
  for (long i = 0; i < nclients; i++) pthread_create(&t[i], NULL, client, (void *)i);
  for (int i = 0; i < nclients; i++) pthread_join(t[i], NULL);
  double dt = rc_now_s() - t0;
  const char *ca = getenv("PARIO_RIO_TEST_TLS_CA");
  const char *transport = ca && *ca ? "tls" : nmac == nclients ? "mac" : nmac ? "mixed" : "plain";
  printf("rio-load: %s clients %d piece %llu coll %d transport %s: %llu requests, %llu bytes in %.3f s = %.2f MB/s, "
         "%.0f requests/s%s\n",
         is_write ? "write" : "read", nclients, (unsigned long long)piece, coll, transport, (unsigned long long)requests,
         (unsigned long long)moved, dt, moved / dt / 1e6, requests / dt, errors ? " (ERRORS)" : "");
  free(t);
  return errors != 0;
}
