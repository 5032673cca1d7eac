/* Datatype flattening: decode any datatype with MPI_Type_get_envelope/get_contents into
 * (offset, length) runs in typemap order, and cache the result on the datatype. */
#include "trace/trace.h"
#include "view/typemap.h"
#include "view/datarep.h"
#include "core/common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct runbuf {
  pario_run *r;
  size_t n, cap;
  int err;
} runbuf;

static void emit(runbuf *b, MPI_Offset off, MPI_Offset len) {
  if (len <= 0 || b->err) return;
  if (b->n && b->r[b->n - 1].off + b->r[b->n - 1].len == off) {
    b->r[b->n - 1].len += len;
    return;
  }
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 16;
    pario_run *r = realloc(b->r, cap * sizeof *r);
    if (!r) { b->err = MPI_ERR_NO_MEM; return; }
    b->r = r;
    b->cap = cap;
  }
  b->r[b->n].off = off;
  b->r[b->n].len = len;
  b->n++;
}

/* count copies of child placed at base + i*stride. */
static void emit_copies(runbuf *b, const pario_typemap *c, MPI_Offset base, MPI_Offset count,
                        MPI_Offset stride) {
  if (count <= 0 || c->size == 0) return;
  if (c->dense && stride == c->extent) {
    emit(b, base + c->runs[0].off, count * c->runs[0].len);
    return;
  }
  for (MPI_Offset i = 0; i < count && !b->err; i++)
    for (size_t j = 0; j < c->nruns; j++) emit(b, base + i * stride + c->runs[j].off, c->runs[j].len);
}

/* ---- named types ---- */

/* The MINLOC/MAXLOC pair types are named but may have holes between their members. */
struct p_si { short a; int b; };
struct p_fi { float a; int b; };
struct p_di { double a; int b; };
struct p_li { long a; int b; };
struct p_ldi { long double a; int b; };

static int pair_runs(MPI_Datatype t, runbuf *b, MPI_Offset base) {
#define PAIR(T, S)                                                    \
  if (t == T) {                                                       \
    emit(b, base + (MPI_Offset)offsetof(S, a), sizeof(((S *)0)->a)); \
    emit(b, base + (MPI_Offset)offsetof(S, b), sizeof(int));          \
    return 1;                                                         \
  }
  PAIR(MPI_SHORT_INT, struct p_si)
  PAIR(MPI_FLOAT_INT, struct p_fi)
  PAIR(MPI_DOUBLE_INT, struct p_di)
  PAIR(MPI_LONG_INT, struct p_li)
  PAIR(MPI_LONG_DOUBLE_INT, struct p_ldi)
#undef PAIR
  return 0;
}

static int flatten_named(MPI_Datatype t, MPI_Offset base, runbuf *b) {
  MPI_Count size, lb, extent;
  PMPI_Type_size_x(t, &size);
  PMPI_Type_get_extent_x(t, &lb, &extent);
  if (size != extent && pair_runs(t, b, base)) return MPI_SUCCESS;
  emit(b, base + lb, size);
  return MPI_SUCCESS;
}

/* ---- derived types ---- */

int pario_type_combiner(MPI_Datatype type) {
  int comb;
  MPI_Count ni, na, nc, nd;
  if (type == MPI_DATATYPE_NULL) return -1;
  if (pario_type_envelope(type, &ni, &na, &nc, &nd, &comb) != MPI_SUCCESS) return -1;
  return comb;
}

int pario_type_is_named(MPI_Datatype type) { return pario_type_combiner(type) == MPI_COMBINER_NAMED; }

static int child_map(MPI_Datatype t, const pario_typemap **out) { return pario_typemap_get(t, out); }

/* A datatype's constructor arguments in the layout of the MPI-3 (int) constructors, with
 * every integer widened, so types built with MPI-4 large-count constructors decode alike. */
typedef struct decoded {
  int comb, ni, na, nd;
  MPI_Offset *ints;
  MPI_Offset *addrs;
  MPI_Datatype *types;
} decoded;

static int decoded_alloc(decoded *d, long ni, long na, long nd) {
  d->ni = (int)ni;
  d->na = (int)na;
  d->nd = (int)nd;
  d->ints = malloc(sizeof(MPI_Offset) * (size_t)(ni + 1));
  d->addrs = malloc(sizeof(MPI_Offset) * (size_t)(na + 1));
  d->types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
  return d->ints && d->addrs && d->types ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* Large-count constructors return their counts (and byte displacements) in large_counts:
 * put each back where the int constructor keeps it. in: ints, addrs; c: large counts. */
static void normalize(decoded *d, const int *in, MPI_Count ni, const MPI_Aint *ad, MPI_Count na,
                      const MPI_Count *c, MPI_Count nc) {
  MPI_Count k = 0, count = nc ? c[0] : 0;
  switch (d->comb) {
    case MPI_COMBINER_HVECTOR: /* count, blocklength | stride */
      d->ints[0] = c[0], d->ints[1] = c[1], d->addrs[0] = c[2];
      return;
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_STRUCT: /* count, blocklengths[] | displacements[] */
      for (k = 0; k <= count; k++) d->ints[k] = c[k];
      for (k = 0; k < count; k++) d->addrs[k] = c[1 + count + k];
      return;
    case MPI_COMBINER_HINDEXED_BLOCK: /* count, blocklength | displacements[] */
      d->ints[0] = c[0], d->ints[1] = c[1];
      for (k = 0; k < count; k++) d->addrs[k] = c[2 + k];
      return;
    case MPI_COMBINER_SUBARRAY: { /* ndims, [sizes, subsizes, starts], order */
      d->ints[0] = in[0];
      for (k = 0; k < nc; k++) d->ints[1 + k] = c[k];
      d->ints[1 + nc] = in[1];
      return;
    }
    case MPI_COMBINER_DARRAY: { /* size, rank, ndims, [gsizes], distribs, dargs, psizes, order */
      MPI_Count nd = in[2];
      d->ints[0] = in[0], d->ints[1] = in[1], d->ints[2] = nd;
      for (k = 0; k < nd; k++) {
        d->ints[3 + k] = c[k];                         /* gsizes: the only large counts */
        d->ints[3 + nd + k] = in[3 + k];               /* distribs */
        d->ints[3 + 2 * nd + k] = in[3 + nd + k];      /* dargs */
        d->ints[3 + 3 * nd + k] = in[3 + 2 * nd + k];  /* psizes */
      }
      d->ints[3 + 4 * nd] = in[3 + 3 * nd];            /* order */
      return;
    }
    case MPI_COMBINER_RESIZED:
      d->addrs[0] = c[0], d->addrs[1] = c[1];
      return;
    default: /* contiguous, vector, indexed, indexed_block: the same layout, widened */
      for (k = 0; k < nc; k++) d->ints[k] = c[k];
      (void)ni, (void)ad, (void)na;
  }
}

static int decode(MPI_Datatype t, decoded *d) {
  MPI_Count ni, na, nc, nd;
  memset(d, 0, sizeof *d);
  if (pario_type_envelope(t, &ni, &na, &nc, &nd, &d->comb) != MPI_SUCCESS) return MPI_ERR_TYPE;
  if (d->comb == MPI_COMBINER_NAMED) return MPI_SUCCESS;
  int *in = malloc(sizeof(int) * (size_t)(ni + 1));
  MPI_Aint *ad = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
  MPI_Count *c = malloc(sizeof(MPI_Count) * (size_t)(nc + 1));
  /* the int layout never has more entries than ints + large counts (+ addresses) */
  int rc = in && ad && c ? decoded_alloc(d, ni + nc + 1, na + nc + 2, nd) : MPI_ERR_NO_MEM;
  if (rc == MPI_SUCCESS && pario_type_contents(t, ni, na, nc, nd, in, ad, c, d->types) != MPI_SUCCESS)
    rc = MPI_ERR_TYPE;
  if (rc == MPI_SUCCESS && nc > 0) {
    normalize(d, in, ni, ad, na, c, nc);
  } else if (rc == MPI_SUCCESS) {
    for (MPI_Count k = 0; k < ni; k++) d->ints[k] = in[k];
    for (MPI_Count k = 0; k < na; k++) d->addrs[k] = ad[k];
  }
  if (rc != MPI_SUCCESS) d->nd = 0; /* nothing to free in types */
  free(in);
  free(ad);
  free(c);
  return rc;
}

static void decoded_free(decoded *d) {
  for (int i = 0; d->types && i < d->nd; i++)
    if (!pario_type_is_named(d->types[i])) PMPI_Type_free(&d->types[i]);
  free(d->ints);
  free(d->addrs);
  free(d->types);
}

/* Blocks of a multi-dimensional array access: per dimension a list of (start, length). */
typedef struct dimblocks {
  MPI_Offset *start, *len;
  int n;
} dimblocks;

static void emit_array(runbuf *b, const pario_typemap *old, MPI_Offset base, int d, int ndims,
                       const dimblocks *blk, const MPI_Offset *stride) {
  for (int k = 0; k < blk[d].n && !b->err; k++) {
    if (d == ndims - 1) {
      emit_copies(b, old, base + blk[d].start[k] * stride[d], blk[d].len[k], stride[d]);
      continue;
    }
    for (MPI_Offset i = 0; i < blk[d].len[k]; i++)
      emit_array(b, old, base + (blk[d].start[k] + i) * stride[d], d + 1, ndims, blk, stride);
  }
}

/* Lay out blocks over an array of dims sizes; fortran: first dimension fastest. */
static int emit_nd(runbuf *b, MPI_Datatype oldtype, MPI_Offset base, int ndims, const MPI_Offset *sizes,
                   dimblocks *blk, int fortran) {
  const pario_typemap *old;
  int rc = child_map(oldtype, &old);
  if (rc != MPI_SUCCESS || ndims <= 0) return rc;
  MPI_Offset *stride = malloc(sizeof(MPI_Offset) * (size_t)ndims);
  dimblocks *ord = malloc(sizeof(dimblocks) * (size_t)ndims);
  if (!stride || !ord) { free(stride); free(ord); return MPI_ERR_NO_MEM; }
  /* Reorder so that index 0 is the slowest dimension. */
  for (int i = 0; i < ndims; i++) ord[i] = blk[fortran ? ndims - 1 - i : i];
  MPI_Offset s = old->extent;
  for (int i = ndims - 1; i >= 0; i--) {
    stride[i] = s;
    s *= sizes[fortran ? ndims - 1 - i : i];
  }
  emit_array(b, old, base, 0, ndims, ord, stride);
  free(stride);
  free(ord);
  return MPI_SUCCESS;
}

static int dimblocks_alloc(dimblocks *blk, int ndims, const int *maxblocks) {
  for (int i = 0; i < ndims; i++) {
    blk[i].n = 0;
    blk[i].start = malloc(sizeof(MPI_Offset) * (size_t)(maxblocks[i] + 1));
    blk[i].len = malloc(sizeof(MPI_Offset) * (size_t)(maxblocks[i] + 1));
    if (!blk[i].start || !blk[i].len) return MPI_ERR_NO_MEM;
  }
  return MPI_SUCCESS;
}

static void dimblocks_free(dimblocks *blk, int ndims) {
  for (int i = 0; i < ndims; i++) {
    free(blk[i].start);
    free(blk[i].len);
  }
  free(blk);
}

static int flatten_subarray(const decoded *d, MPI_Offset base, runbuf *b) {
  int nd = (int)d->ints[0];
  const MPI_Offset *sizes = d->ints + 1, *subsizes = d->ints + 1 + nd, *starts = d->ints + 1 + 2 * nd;
  int order = (int)d->ints[1 + 3 * nd];
  dimblocks *blk = calloc((size_t)nd, sizeof *blk);
  int *one = calloc((size_t)nd, sizeof(int));
  if (!blk || !one) {
    free(blk);
    free(one);
    return MPI_ERR_NO_MEM;
  }
  for (int i = 0; i < nd; i++) one[i] = 1;
  int rc = dimblocks_alloc(blk, nd, one);
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++) {
    blk[i].start[0] = starts[i];
    blk[i].len[0] = subsizes[i];
    blk[i].n = 1;
  }
  if (rc == MPI_SUCCESS) rc = emit_nd(b, d->types[0], base, nd, sizes, blk, order == MPI_ORDER_FORTRAN);
  free(one);
  dimblocks_free(blk, nd);
  return rc;
}

/* The index blocks of one darray dimension owned by process coordinate c. */
static int darray_dim(dimblocks *blk, MPI_Offset gsize, MPI_Offset distrib, MPI_Offset darg, MPI_Offset psize,
                      MPI_Offset c) {
  if (distrib == MPI_DISTRIBUTE_NONE) {
    blk->start[0] = 0;
    blk->len[0] = gsize;
    blk->n = 1;
  } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
    MPI_Offset bs = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
    MPI_Offset s = c * bs, e = PARIO_MIN((MPI_Offset)gsize, s + bs);
    blk->start[0] = s;
    blk->len[0] = e > s ? e - s : 0;
    blk->n = 1;
  } else if (distrib == MPI_DISTRIBUTE_CYCLIC) {
    MPI_Offset bs = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    blk->n = 0;
    for (MPI_Offset s = c * bs; s < gsize; s += bs * psize) {
      blk->start[blk->n] = s;
      blk->len[blk->n] = PARIO_MIN(bs, gsize - s);
      blk->n++;
    }
  } else {
    return MPI_ERR_TYPE;
  }
  return MPI_SUCCESS;
}

static int flatten_darray(const decoded *d, MPI_Offset base, runbuf *b) {
  int rank = (int)d->ints[1], nd = (int)d->ints[2];
  const MPI_Offset *gsizes = d->ints + 3, *distribs = d->ints + 3 + nd, *dargs = d->ints + 3 + 2 * nd,
                   *psizes = d->ints + 3 + 3 * nd;
  int order = (int)d->ints[3 + 4 * nd];
  dimblocks *blk = calloc((size_t)nd, sizeof *blk);
  int *maxb = malloc(sizeof(int) * (size_t)nd), *coord = malloc(sizeof(int) * (size_t)nd);
  int rc = (blk && maxb && coord) ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  /* The process grid is row-major whatever the array order. */
  for (int i = nd - 1, r = rank; rc == MPI_SUCCESS && i >= 0; i--) {
    coord[i] = r % psizes[i];
    r /= psizes[i];
  }
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++) {
    MPI_Offset bs = dargs[i] == MPI_DISTRIBUTE_DFLT_DARG || dargs[i] < 1 ? 1 : dargs[i];
    maxb[i] = distribs[i] == MPI_DISTRIBUTE_CYCLIC ? (int)(gsizes[i] / bs + 1) : 1;
  }
  if (rc == MPI_SUCCESS) rc = dimblocks_alloc(blk, nd, maxb);
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++)
    rc = darray_dim(&blk[i], gsizes[i], distribs[i], dargs[i], psizes[i], coord[i]);
  if (rc == MPI_SUCCESS) rc = emit_nd(b, d->types[0], base, nd, gsizes, blk, order == MPI_ORDER_FORTRAN);
  free(maxb);
  free(coord);
  if (blk) dimblocks_free(blk, nd);
  return rc;
}

/* count blocks of bl[i] copies of type at disp[i] (disp in bytes). */
static int emit_blocks(runbuf *b, MPI_Datatype type, MPI_Offset base, MPI_Offset count, const MPI_Offset *bl,
                       int bl_stride, const MPI_Offset *disp) {
  const pario_typemap *c;
  int rc = child_map(type, &c);
  if (rc != MPI_SUCCESS) return rc;
  for (MPI_Offset i = 0; i < count && !b->err; i++) emit_copies(b, c, base + disp[i], bl[i * bl_stride], c->extent);
  return MPI_SUCCESS;
}

static int flatten_blocks(const decoded *d, MPI_Offset base, runbuf *b) {
  const pario_typemap *old;
  int rc = child_map(d->types[0], &old);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Offset count = d->ints[0];
  MPI_Offset *disp = malloc(sizeof(MPI_Offset) * (size_t)(count + 1));
  if (!disp) return MPI_ERR_NO_MEM;
  const MPI_Offset *bl = d->ints + 1;
  int bls = 1;
  for (MPI_Offset i = 0; i < count; i++) {
    switch (d->comb) {
      case MPI_COMBINER_VECTOR: disp[i] = (MPI_Offset)i * d->ints[2] * old->extent; bl = d->ints + 1; bls = 0; break;
      case MPI_COMBINER_HVECTOR: disp[i] = (MPI_Offset)i * d->addrs[0]; bl = d->ints + 1; bls = 0; break;
      case MPI_COMBINER_INDEXED: disp[i] = (MPI_Offset)d->ints[1 + count + i] * old->extent; break;
      case MPI_COMBINER_HINDEXED: disp[i] = d->addrs[i]; break;
      case MPI_COMBINER_INDEXED_BLOCK: disp[i] = (MPI_Offset)d->ints[2 + i] * old->extent; bls = 0; break;
      case MPI_COMBINER_HINDEXED_BLOCK: disp[i] = d->addrs[i]; bls = 0; break;
      default: break;
    }
  }
  rc = emit_blocks(b, d->types[0], base, count, bl, bls, disp);
  free(disp);
  return rc;
}

static int flatten(MPI_Datatype t, MPI_Offset base, runbuf *b);

static int flatten_struct(const decoded *d, MPI_Offset base, runbuf *b) {
  MPI_Offset count = d->ints[0];
  int rc = MPI_SUCCESS;
  for (MPI_Offset i = 0; i < count && rc == MPI_SUCCESS; i++) {
    MPI_Offset disp = d->addrs[i];
    rc = emit_blocks(b, d->types[i], base, 1, d->ints + 1 + i, 1, &disp);
  }
  return rc;
}

static int flatten_decoded(MPI_Datatype t, const decoded *d, MPI_Offset base, runbuf *b) {
  switch (d->comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED: return flatten(d->types[0], base, b);
    case MPI_COMBINER_CONTIGUOUS: {
      const pario_typemap *c;
      int rc = child_map(d->types[0], &c);
      if (rc == MPI_SUCCESS) emit_copies(b, c, base, d->ints[0], c->extent);
      return rc;
    }
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK: return flatten_blocks(d, base, b);
    case MPI_COMBINER_STRUCT: return flatten_struct(d, base, b);
    case MPI_COMBINER_SUBARRAY: return flatten_subarray(d, base, b);
    case MPI_COMBINER_DARRAY: return flatten_darray(d, base, b);
    case MPI_COMBINER_F90_REAL:
    case MPI_COMBINER_F90_COMPLEX:
    case MPI_COMBINER_F90_INTEGER: return flatten_named(t, base, b);
    default: return MPI_ERR_TYPE;
  }
}

static int flatten(MPI_Datatype t, MPI_Offset base, runbuf *b) {
  decoded d;
  int rc = decode(t, &d);
  if (rc == MPI_SUCCESS)
    rc = d.comb == MPI_COMBINER_NAMED ? flatten_named(t, base, b) : flatten_decoded(t, &d, base, b);
  decoded_free(&d);
  return rc != MPI_SUCCESS ? rc : b->err;
}

static int finish(MPI_Datatype t, runbuf *b, pario_typemap **out) {
  pario_typemap *tm = calloc(1, sizeof *tm);
  MPI_Count size, lb, extent;
  if (!tm) return MPI_ERR_NO_MEM;
  PMPI_Type_size_x(t, &size);
  PMPI_Type_get_extent_x(t, &lb, &extent);
  tm->runs = b->r;
  tm->nruns = b->n;
  tm->size = size;
  tm->lb = lb;
  tm->extent = extent;
  tm->cum = malloc(sizeof(MPI_Offset) * (b->n + 1));
  if (!tm->cum) { pario_typemap_free(tm); return MPI_ERR_NO_MEM; }
  tm->monotonic = tm->ordered = tm->nonneg = 1;
  tm->cum[0] = 0;
  for (size_t i = 0; i < b->n; i++) {
    tm->cum[i + 1] = tm->cum[i] + b->r[i].len;
    if (b->r[i].off < 0) tm->nonneg = 0;
    if (i && b->r[i].off < b->r[i - 1].off + b->r[i - 1].len) tm->monotonic = 0;
    if (i && b->r[i].off < b->r[i - 1].off) tm->ordered = 0;
  }
  tm->dense = b->n == 1 && b->r[0].off == lb && b->r[0].len == extent;
  if (tm->cum[b->n] != size) { /* decoding disagrees with the MPI library: refuse the type */
    pario_typemap_free(tm);
    return MPI_ERR_TYPE;
  }
  *out = tm;
  return MPI_SUCCESS;
}

int pario_typemap_build(MPI_Datatype type, pario_typemap **out) {
  runbuf b = {0};
  if (type == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
  int rc = flatten(type, 0, &b);
  if (rc != MPI_SUCCESS) {
    free(b.r);
    return rc;
  }
  return finish(type, &b, out);
}

void pario_typemap_free(pario_typemap *tm) {
  if (!tm) return;
  pario_ext32_map_free(tm->x32);
  for (pario_ext32_keyed *k = tm->xuser, *next; k; k = next) {
    next = k->next;
    pario_ext32_map_free(k->m);
    free(k);
  }
  free(tm->runs);
  free(tm->cum);
  free(tm);
}

size_t pario_typemap_find(const pario_typemap *tm, MPI_Offset pos) {
  size_t lo = 0, hi = tm->nruns; /* invariant: cum[lo] <= pos < cum[hi] */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (tm->cum[mid] <= pos) lo = mid; else hi = mid;
  }
  return lo;
}

/* ---- caching ---- */

static pthread_mutex_t cache_lock;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_keyval = MPI_KEYVAL_INVALID;

/* Named types have no attributes: their maps live in a table that grows as needed and is
 * freed by pario_typemap_finalize. */
static struct named_entry { MPI_Datatype type; pario_typemap *tm; } *named;
static int nnamed, named_cap;

/* A dup has the same typemap: share it (under cache_lock, which MPI calls back into). */
static int copy_cb(MPI_Datatype t, int kv, void *extra, void *in, void *out, int *flag) {
  (void)t; (void)kv; (void)extra;
  pario_typemap *tm = in;
  pthread_mutex_lock(&cache_lock);
  tm->refs++;
  pthread_mutex_unlock(&cache_lock);
  *(void **)out = tm;
  *flag = 1;
  return MPI_SUCCESS;
}

static int delete_cb(MPI_Datatype t, int kv, void *val, void *extra) {
  (void)t; (void)kv; (void)extra;
  pario_typemap *tm = val;
  pthread_mutex_lock(&cache_lock);
  int last = --tm->refs == 0;
  pthread_mutex_unlock(&cache_lock);
  if (last) pario_typemap_free(tm);
  return MPI_SUCCESS;
}

static void cache_init(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE); /* building recurses into children */
  pthread_mutex_init(&cache_lock, &a);
  pthread_mutexattr_destroy(&a);
}

static int get_named(MPI_Datatype type, const pario_typemap **out) {
  for (int i = 0; i < nnamed; i++)
    if (named[i].type == type) { *out = named[i].tm; return MPI_SUCCESS; }
  if (nnamed == named_cap) {
    int cap = named_cap ? 2 * named_cap : 32;
    struct named_entry *n = realloc(named, (size_t)cap * sizeof *n);
    if (!n) return MPI_ERR_NO_MEM;
    named = n;
    named_cap = cap;
  }
  pario_typemap *tm;
  int rc = pario_typemap_build(type, &tm);
  if (rc != MPI_SUCCESS) return rc;
  tm->committed = 1;
  named[nnamed].type = type;
  named[nnamed++].tm = tm;
  *out = tm;
  return MPI_SUCCESS;
}

/* Derived types: the map hangs on the type as an attribute. Built outside the lock (building
 * recurses into the children and may take long); the lock only guards the lookup and the
 * attach, and a map another thread attached meanwhile wins. */
static int get_derived(MPI_Datatype type, const pario_typemap **out) {
  void *val;
  int flag = 0;
  pthread_mutex_lock(&cache_lock);
  int rc = MPI_SUCCESS;
  if (cache_keyval == MPI_KEYVAL_INVALID &&
      PMPI_Type_create_keyval(copy_cb, delete_cb, &cache_keyval, NULL) != MPI_SUCCESS)
    rc = MPI_ERR_INTERN;
  else
    PMPI_Type_get_attr(type, cache_keyval, &val, &flag);
  pthread_mutex_unlock(&cache_lock);
  if (rc != MPI_SUCCESS) return rc;
  if (flag) { *out = val; return MPI_SUCCESS; }
  pario_typemap *tm;
  uint64_t t0 = PARIO_TRACE_T0();
  rc = pario_typemap_build(type, &tm);
  if (rc != MPI_SUCCESS) return rc;
  PARIO_TRACE_SPAN(PARIO_TC_VIEW, "flatten", t0, PARIO_TA("runs", tm->nruns), PARIO_TA("size", tm->size),
                   PARIO_TA("extent", tm->extent));
  tm->refs = 1;
  pthread_mutex_lock(&cache_lock);
  PMPI_Type_get_attr(type, cache_keyval, &val, &flag);
  if (flag) {
    *out = val;
  } else if (PMPI_Type_set_attr(type, cache_keyval, tm) == MPI_SUCCESS) {
    *out = tm;
    tm = NULL;
  } else {
    rc = MPI_ERR_INTERN;
  }
  pthread_mutex_unlock(&cache_lock);
  pario_typemap_free(tm);
  return rc;
}

int pario_typemap_get(MPI_Datatype type, const pario_typemap **out) {
  int comb = pario_type_combiner(type);
  if (comb < 0) return MPI_ERR_TYPE;
  pthread_once(&cache_once, cache_init);
  if (comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_REAL ||
      comb == MPI_COMBINER_F90_COMPLEX || comb == MPI_COMBINER_F90_INTEGER) {
    pthread_mutex_lock(&cache_lock);
    int rc = get_named(type, out);
    pthread_mutex_unlock(&cache_lock);
    return rc;
  }
  return get_derived(type, out);
}

static MPI_Comm probe_comm = MPI_COMM_NULL;

static int probe_pack(MPI_Datatype type) {
  pthread_mutex_lock(&cache_lock);
  if (probe_comm == MPI_COMM_NULL && PMPI_Comm_dup(MPI_COMM_SELF, &probe_comm) == MPI_SUCCESS)
    PMPI_Comm_set_errhandler(probe_comm, MPI_ERRORS_RETURN);
  MPI_Comm comm = probe_comm;
  pthread_mutex_unlock(&cache_lock);
  if (comm == MPI_COMM_NULL) return 1; /* cannot tell: do not refuse a good type */
  char out[1];
  int pos = 0;
  return PMPI_Pack(NULL, 0, type, out, 0, &pos, comm) == MPI_SUCCESS;
}

int pario_type_committed(MPI_Datatype type, const pario_typemap *tm) {
  if (__atomic_load_n(&tm->committed, __ATOMIC_RELAXED) || pario_type_is_named(type)) return 1;
  if (!probe_pack(type)) return 0;
  __atomic_store_n((int *)&tm->committed, 1, __ATOMIC_RELAXED);
  return 1;
}

void pario_typemap_finalize(void) {
  pthread_once(&cache_once, cache_init);
  pthread_mutex_lock(&cache_lock);
  for (int i = 0; i < nnamed; i++) pario_typemap_free(named[i].tm);
  free(named);
  named = NULL;
  nnamed = named_cap = 0;
  if (cache_keyval != MPI_KEYVAL_INVALID) PMPI_Type_free_keyval(&cache_keyval);
  if (probe_comm != MPI_COMM_NULL) PMPI_Comm_free(&probe_comm);
  pthread_mutex_unlock(&cache_lock);
}
