/* individual (seed 003, sec. 3.3): write-only shared pointer without any shared storage.
 * write_shared appends the data to this rank's hidden file .NAME.pario-sfp-ID.RANK and keeps a
 * record (timestamp, local offset, length) in memory; at every merge point (sync, close,
 * seek_shared, set_view, ordered calls: collective) rank 0 orders all ranks' records by
 * (timestamp, rank, sequence), gives each its place at the shared pointer, and every rank
 * copies its own data there. S is then a replica, equal on every rank after each merge.
 * Timestamps are CLOCK_MONOTONIC, one clock per host (not MPI_Wtime: Open MPI 4 counts it
 * from each process's own start); across hosts each rank's offset to rank 0 is measured at
 * the first merge (pario_clock_offset: rank 0 measures one rank per host, several round
 * trips) and applied to all its records, which are only compared at merges. Chosen only
 * when named. */
#include "core/rep.h"
#include "sharedfp/sharedfp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ind_rec {
  int64_t ts;              /* CLOCK_MONOTONIC, ns */
  int64_t off, n; /* in the hidden file (bytes); length in etypes */
} ind_rec;

typedef struct ind_state {
  pthread_mutex_t lock;
  int fd;                  /* the hidden data file, created on the first write */
  char path[4200];
  ind_rec *recs;
  size_t nrec, cap;
  int64_t dlen, sum_n;     /* bytes in the hidden file; etypes kept since the last merge */
  int64_t value;           /* S (replica) */
  int clock_done;
  long long clock_off;     /* add to a timestamp to get rank 0's clock (ns) */
  long long clock_err;     /* the offset's error bound (ns) */
} ind_state;

#define CHUNK (4 << 20)

static int ind_query(pario_file *f) {
  return f->drv->remote ? -1 : 5; /* its hidden files live beside the data file */
}

static int ind_attach(pario_file *f, void **state) {
  ind_state *s = calloc(1, sizeof *s);
  if (!s) return ENOMEM;
  char suffix[32];
  snprintf(suffix, sizeof suffix, ".%d", f->rank);
  pario_sharedfp_hidden_path(f, suffix, s->path, sizeof s->path);
  pthread_mutex_init(&s->lock, NULL);
  s->fd = -1;
  *state = s;
  return 0;
}

static int full_io(int fd, int wr, void *p, size_t n, off_t off) {
  while (n > 0) {
    ssize_t r = wr ? pwrite(fd, p, n, off) : pread(fd, p, n, off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r < 0 ? errno : EIO;
    p = (char *)p + r, n -= (size_t)r, off += r;
  }
  return 0;
}

/* Append the data of (buf, count, type), piece by contiguous piece, at s->dlen. */
static int append(ind_state *s, const void *buf, const pario_typemap *tm, int64_t bytes) {
  pario_mcursor m;
  struct iovec iov[64];
  int n = 0, e = 0;
  int64_t at = s->dlen, end = s->dlen + bytes;
  pario_mcursor_init(&m, (void *)buf, tm);
  while (at < end && !e) {
    if (pario_mcursor_iov(&m, end - at, iov, 64, &n) <= 0) return EINVAL;
    for (int i = 0; i < n && !e; at += (int64_t)iov[i++].iov_len) e = full_io(s->fd, 1, iov[i].iov_base, iov[i].iov_len, at);
  }
  return e;
}

/* The same under a representation other than native: kept in the file's representation,
 * converted chunk by chunk, so the merge copies bytes as they are (PARIO_ACCESS_RAW). */
static int append_converted(pario_file *f, ind_state *s, const char *op, const pario_view *v, const void *buf,
                            MPI_Datatype type, const pario_typemap *tm, int64_t bytes) {
  pario_conv cv;
  int rc = pario_conv_init(&cv, v->rep, (void *)buf, type, tm, 0, op, f->filename);
  if (rc != MPI_SUCCESS) return rc;
  int64_t cap = PARIO_MAX(PARIO_MIN(bytes, CHUNK / 8), cv.maxitem);
  char *stage = malloc((size_t)cap);
  if (!stage) return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  for (int64_t done = 0; done < bytes && rc == MPI_SUCCESS;) {
    MPI_Offset len = pario_conv_chunk(&cv, PARIO_MIN(cap, bytes - done));
    rc = len > 0 ? pario_conv_pack(&cv, stage, len) : MPI_ERR_INTERN;
    int e = rc == MPI_SUCCESS ? full_io(s->fd, 1, stage, (size_t)len, s->dlen + done) : 0;
    if (e) rc = pario_err(pario_errno_class(e), op, f->filename, e, "cannot keep the data in %s", s->path);
    done += len;
  }
  free(stage);
  return rc;
}

static int ind_write(pario_file *f, void *state, const char *op, const void *buf, MPI_Count count,
                     MPI_Datatype type, MPI_Offset n) {
  ind_state *s = state;
  const pario_typemap *tm;
  ind_rec r = {pario_mono_ns(), 0, n};
  if (pario_typemap_get(type, &tm) != MPI_SUCCESS) return pario_err(MPI_ERR_TYPE, op, f->filename, 0, "invalid datatype");
  pario_snap sn; /* the view the data is kept for: a set_view merges them first */
  pario_snap_take(f, &sn);
  int64_t bytes = (int64_t)n * sn.view->esize; /* n etypes of the view, in its representation */
  pthread_mutex_lock(&s->lock);
  int e = 0, rc = MPI_SUCCESS;
  if (s->fd < 0 && (s->fd = open(s->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) e = errno;
  if (!e && s->nrec == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 1024;
    ind_rec *p = realloc(s->recs, cap * sizeof *p);
    if (p) s->recs = p, s->cap = cap;
    else e = ENOMEM;
  }
  if (!e && bytes > 0 && sn.view->rep) rc = append_converted(f, s, op, sn.view, buf, type, tm, bytes);
  else if (!e && bytes > 0) e = append(s, buf, tm, (int64_t)count * tm->size);
  if (!e && rc == MPI_SUCCESS) {
    r.off = s->dlen;
    s->recs[s->nrec++] = r;
    s->dlen += bytes;
    s->sum_n += n;
  }
  pthread_mutex_unlock(&s->lock);
  pario_snap_drop(&sn);
  if (rc != MPI_SUCCESS) return rc;
  return e ? pario_err(pario_errno_class(e), op, f->filename, e, "cannot keep the data in %s", s->path) : MPI_SUCCESS;
}

/* This rank's clock offset to rank 0 (collective; zero where one host holds every rank).
 * Measured once, at the first merge with kept writes: every rank is inside it. */
static int measure_clock(pario_file *f, ind_state *s, const char *op) {
  s->clock_done = 1;
  if (f->nodes == 1) return MPI_SUCCESS;
  int rc = pario_clock_offset(f->comm, 1, &s->clock_off, &s->clock_err);
  return rc == MPI_SUCCESS ? rc : pario_err(rc, op, f->filename, 0, "aligning the clocks of the nodes failed");
}

typedef struct key { int64_t ts; int rank; int64_t seq; } key;

static int by_time(const void *a, const void *b) {
  const key *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Rank 0: records (ts, n) of all ranks in rank order -> the place (etypes) of each. */
static void place_all(const int64_t *in, const int *cnt, const int *disp, int np, int64_t start,
                      key *k, int64_t *pos) {
  int64_t total = 0;
  for (int r = 0; r < np; r++)
    for (int q = 0; q < cnt[r]; q++, total++) {
      k[total].ts = in[2 * (disp[r] + q)];
      k[total].rank = r;
      k[total].seq = q;
    }
  qsort(k, (size_t)total, sizeof *k, by_time);
  for (int64_t i = 0; i < total; i++) {
    int64_t at = disp[k[i].rank] + k[i].seq;
    pos[at] = start;
    start += in[2 * at + 1];
  }
}

/* What one merge needs: this rank's records out and places back; on rank 0 everyone's. */
typedef struct merge_mem {
  int64_t *out, *pos;      /* 2 per own record; 1 per own record */
  int *cnt, *disp;         /* rank 0: per rank */
  int64_t *in, *all_pos;   /* rank 0: 2 per record; 1 per record */
  key *keys;               /* rank 0 */
} merge_mem;

static int mem_get(merge_mem *m, const pario_file *f, size_t mine, size_t total) {
  size_t np = (size_t)f->nprocs;
  memset(m, 0, sizeof *m);
  m->out = malloc(sizeof(int64_t) * 2 * (mine + 1));
  m->pos = malloc(sizeof(int64_t) * (mine + 1));
  if (f->rank == 0) {
    m->cnt = malloc(sizeof(int) * 2 * np);
    m->disp = m->cnt ? m->cnt + np : NULL;
    m->in = malloc(sizeof(int64_t) * 2 * total);
    m->all_pos = malloc(sizeof(int64_t) * total);
    m->keys = malloc(sizeof(key) * total);
  }
  return m->out && m->pos && (f->rank || (m->cnt && m->in && m->all_pos && m->keys));
}

static void mem_free(merge_mem *m) {
  free(m->out), free(m->pos), free(m->cnt), free(m->in), free(m->all_pos), free(m->keys);
}

/* Gather every rank's records on rank 0, order them, return each rank its places (m->pos). */
static void assign(pario_file *f, ind_state *s, merge_mem *m, MPI_Offset base) {
  int np = f->nprocs, n = (int)s->nrec;
  for (int i = 0; i < n; i++) {
    m->out[2 * i] = s->recs[i].ts + s->clock_off;
    m->out[2 * i + 1] = s->recs[i].n;
  }
  PMPI_Gather(&n, 1, MPI_INT, m->cnt, 1, MPI_INT, 0, f->comm);
  if (f->rank == 0)
    for (int r = 0, d = 0; r < np; r++) { /* in int64 units: two per record */
      m->disp[r] = 2 * d;
      d += m->cnt[r];
      m->cnt[r] *= 2;
    }
  PMPI_Gatherv(m->out, 2 * n, MPI_INT64_T, m->in, m->cnt, m->disp, MPI_INT64_T, 0, f->comm);
  if (f->rank == 0) {
    for (int r = 0; r < np; r++) m->cnt[r] /= 2, m->disp[r] /= 2;
    place_all(m->in, m->cnt, m->disp, np, base + s->value, m->keys, m->all_pos);
  }
  PMPI_Scatterv(m->all_pos, m->cnt, m->disp, MPI_INT64_T, m->pos, n, MPI_INT64_T, 0, f->comm);
}

/* Copy this rank's kept data to its places, coalescing records that stay adjacent. */
static int copy_out(pario_file *f, ind_state *s, const char *op, const int64_t *pos) {
  char *buf = malloc(CHUNK);
  int rc = buf ? MPI_SUCCESS : pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  pario_snap sn; /* merges are collective calls of the application's thread: the current view */
  pario_snap_take(f, &sn);
  MPI_Offset es = sn.view->esize;
  for (size_t i = 0; i < s->nrec && rc == MPI_SUCCESS;) {
    size_t j = i + 1;
    while (j < s->nrec && pos[j] == pos[j - 1] + s->recs[j - 1].n) j++;
    int64_t off = s->recs[i].off, len = (j < s->nrec ? s->recs[j].off : s->dlen) - off;
    for (int64_t done = 0; done < len && rc == MPI_SUCCESS; done += CHUNK) {
      size_t k = len - done < CHUNK ? (size_t)(len - done) : CHUNK;
      MPI_Count wrote = 0;
      int e = full_io(s->fd, 0, buf, k, off + done);
      if (e) rc = pario_err(pario_errno_class(e), op, f->filename, e, "cannot read back %s", s->path);
      else rc = pario_access_ex(f, &sn, op, PARIO_WRITE, pos[i] * es + done, buf, (MPI_Count)k, MPI_BYTE, &wrote,
                                PARIO_ACCESS_RAW, NULL); /* kept in the file's representation */
    }
    i = j;
  }
  pario_snap_drop(&sn);
  free(buf);
  return rc;
}

/* Place the kept writes of every rank (collective). One MPI_Allreduce when none are kept. */
static int ind_merge(pario_file *f, void *state, const char *op, MPI_Offset base) {
  ind_state *s = state;
  if (s) pthread_mutex_lock(&s->lock); /* this rank's writers wait for the merge */
  long long mine[3] = {s ? (long long)s->nrec : 0, s ? s->sum_n : 0, !s}, sum[3];
  PMPI_Allreduce(mine, sum, 3, MPI_LONG_LONG, MPI_SUM, f->comm);
  int rc = MPI_SUCCESS;
  merge_mem m;
  if (sum[2]) rc = pario_err(MPI_ERR_OTHER, op, f->filename, 0, "individual shared file pointer unavailable on some rank");
  else if (sum[0] > 0) {
    int ok = mem_get(&m, f, s->nrec, (size_t)sum[0]);
    rc = ok ? MPI_SUCCESS : pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory ordering %lld kept writes", sum[0]);
    int worst = pario_agree(f->comm, rc);
    if (worst == MPI_SUCCESS) {
      int crc = s->clock_done ? MPI_SUCCESS : measure_clock(f, s, op);
      assign(f, s, &m, base);
      rc = copy_out(f, s, op, m.pos);
      if (rc == MPI_SUCCESS) rc = crc; /* placed anyway, maybe out of time order */
      s->value += sum[1]; /* every rank: the sum of everyone's kept writes */
      s->nrec = 0;
      s->dlen = s->sum_n = 0;
      if (s->fd >= 0 && ftruncate(s->fd, 0) != 0) pario_log(1, "%s: cannot truncate %s", f->filename, s->path);
      worst = pario_agree(f->comm, rc);
    }
    if (worst != MPI_SUCCESS && rc == MPI_SUCCESS) rc = pario_err(worst, op, f->filename, 0, "merging kept writes failed on another rank");
    mem_free(&m);
  }
  if (s) pthread_mutex_unlock(&s->lock);
  return rc;
}

static int ind_fetch_add(void *state, int slot, MPI_Offset n, MPI_Offset *old) {
  ind_state *s = state;
  (void)slot; /* always 0 (sharedfp.h) */
  pthread_mutex_lock(&s->lock);
  *old = s->value;
  s->value += n;
  pthread_mutex_unlock(&s->lock);
  return 0;
}

/* Once measured: this rank's clock offset to rank 0 and its error bound, in ns (0 and 0 on
 * one host), so a user (and tests/multinode) can see how far apart time order is reliable. */
static void ind_get_info(void *state, MPI_Info info) {
  ind_state *s = state;
  char v[2][32];
  pthread_mutex_lock(&s->lock);
  int done = s->clock_done;
  snprintf(v[0], sizeof v[0], "%lld", s->clock_off);
  snprintf(v[1], sizeof v[1], "%lld", s->clock_err);
  pthread_mutex_unlock(&s->lock);
  if (!done) return;
  PMPI_Info_set(info, "pario_sharedfp_clock_offset_ns", v[0]);
  PMPI_Info_set(info, "pario_sharedfp_clock_error_ns", v[1]);
}

static void ind_detach(void *state) {
  ind_state *s = state;
  if (s->fd >= 0) {
    close(s->fd);
    unlink(s->path);
  }
  pthread_mutex_destroy(&s->lock);
  free(s->recs);
  free(s);
}

const pario_sharedfp_component pario_sharedfp_individual = {
    .name = "individual", .query = ind_query, .attach = ind_attach, .fetch_add = ind_fetch_add,
    .detach = ind_detach, .write = ind_write, .merge = ind_merge, .get_info = ind_get_info, .forced_only = 1};
