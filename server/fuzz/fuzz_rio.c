/* libFuzzer target over pario-server's frame decoder and request handlers: the input is one
 * connection's byte stream (first byte: start authenticated or not), served inline by the real
 * conn.c/ops.c against a temporary root, every reply checked to be a well-formed frame. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server.h"

static srv_state state;
srv_state *srv = &state;

typedef struct mem_stream {
  const uint8_t *p;
  size_t n;
  uint8_t hdr[RIO_HDR_SIZE]; /* reply parser: the header being collected */
  size_t hgot;
  uint64_t skip; /* body bytes of the current reply still to come */
} mem_stream;

static int mem_recv(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  (void)deadline;
  mem_stream *m = c->mem;
  if (m->n < n) {
    m->p += m->n, m->n = 0;
    errno = ECONNRESET;
    return -1;
  }
  memcpy(buf, m->p, n);
  m->p += n, m->n -= n;
  return 0;
}

/* Every byte the server sends must belong to a well-formed reply frame. */
static int mem_send(srv_conn *c, const void *buf, size_t n) {
  mem_stream *m = c->mem;
  const uint8_t *p = buf;
  while (n > 0) {
    if (m->skip) {
      size_t k = m->skip < n ? (size_t)m->skip : n;
      m->skip -= k, p += k, n -= k;
      continue;
    }
    size_t k = RIO_HDR_SIZE - m->hgot < n ? RIO_HDR_SIZE - m->hgot : n;
    memcpy(m->hdr + m->hgot, p, k);
    m->hgot += k, p += k, n -= k;
    if (m->hgot == RIO_HDR_SIZE) {
      rio_hdr h;
      if (rio_hdr_decode(m->hdr, &h) || !(h.type & RIO_REPLY) || (h.type & ~RIO_REPLY) > RIO_T_MAX ||
          h.len < RIO_STATUS || h.len > srv->cfg.max_request + 64)
        abort(); /* a malformed reply is a finding */
      m->hgot = 0;
      m->skip = h.len;
    }
  }
  return 0;
}

static void mem_shutdown(srv_conn *c) { ((mem_stream *)c->mem)->n = 0; }

static const srv_io mem_io = {mem_recv, mem_send, mem_shutdown};

static char root[256];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  snprintf(root, sizeof root, "%s/pario-fuzz-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(root)) abort();
  srv->rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  memcpy(srv->secret, "fuzzing-secret-0123456789", 25);
  srv->secret_len = 25;
  srv->cfg.max_request = RIO_MIN_MAX_REQUEST;
  srv->cfg.max_segments = RIO_MIN_MAX_REQUEST / RIO_SEG;
  srv->cfg.threads = 0;
  pthread_mutex_init(&srv->mu, NULL);
  srv_log_level = -1;
  /* Bound what a fuzzed WRITE, SET_SIZE or PREALLOCATE can put on disk. */
  struct rlimit rl = {16u << 20, 16u << 20};
  setrlimit(RLIMIT_FSIZE, &rl);
  signal(SIGXFSZ, SIG_IGN);
  fprintf(stderr, "fuzz_rio: root %s\n", root);
  return 0;
}

static void clean_root(void) {
  int fd = openat(srv->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) return;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..")))
      unlinkat(dirfd(d), e->d_name, 0);
  closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static unsigned runs;
  if (size < 1) return 0;
  mem_stream m = {data + 1, size - 1, {0}, 0, 0};
  srv_conn *c = srv_conn_new(-1, &mem_io, "fuzz");
  if (!c) return 0;
  c->mem = &m;
  c->authed = data[0] & 1;
  srv->nunauth++;
  srv_conn_serve(c);
  srv_conn_free(c);
  if (++runs % 512 == 0) clean_root();
  return 0;
}
