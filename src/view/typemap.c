/* Datatype flattening: any datatype into (offset, length) runs in typemap order, built on the
 * blocks of typewalk.c's decoder over the old types' cached maps, and the cache on the
 * datatype. */
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

static int pair_runs(MPI_Datatype t, runbuf *b) {
#define PAIR(T, S)                                            \
  if (t == T) {                                               \
    emit(b, (MPI_Offset)offsetof(S, a), sizeof(((S *)0)->a)); \
    emit(b, (MPI_Offset)offsetof(S, b), sizeof(int));         \
    return 1;                                                 \
  }
  PAIR(MPI_SHORT_INT, struct p_si)
  PAIR(MPI_FLOAT_INT, struct p_fi)
  PAIR(MPI_DOUBLE_INT, struct p_di)
  PAIR(MPI_LONG_INT, struct p_li)
  PAIR(MPI_LONG_DOUBLE_INT, struct p_ldi)
#undef PAIR
  return 0;
}

static int flatten_named(MPI_Datatype t, runbuf *b) {
  MPI_Count size, lb, extent;
  PMPI_Type_size_x(t, &size);
  PMPI_Type_get_extent_x(t, &lb, &extent);
  if (size != extent && pair_runs(t, b)) return MPI_SUCCESS;
  emit(b, lb, size);
  return MPI_SUCCESS;
}

/* ---- derived types: the copies of their old types' maps, block by block (typewalk.h) ---- */

static int child_map(MPI_Datatype t, const pario_typemap **out) { return pario_typemap_get(t, out); }

typedef struct walk {
  runbuf *b;
  const pario_typemap **maps; /* the old types' maps, by the decoded types' index */
} walk;

static int on_block(const pario_block *k, void *ctx) {
  walk *w = ctx;
  const pario_typemap *c = w->maps[k->child];
  emit_copies(w->b, c, k->units * c->extent + k->bytes, k->count, c->extent);
  return w->b->err;
}

static int flatten(MPI_Datatype t, runbuf *b);

static int flatten_derived(const pario_decoded *d, runbuf *b) {
  /* dup and resized are one copy of the old type at 0: its runs go straight in, with no map of
   * it cached beside this type's (a resized filetype's map is not kept twice) */
  if (d->comb == MPI_COMBINER_DUP || d->comb == MPI_COMBINER_RESIZED) return flatten(d->types[0], b);
  const pario_typemap **maps = malloc(sizeof *maps * (size_t)(d->nd + 1));
  if (!maps) return MPI_ERR_NO_MEM;
  int rc = MPI_SUCCESS;
  for (int i = 0; i < d->nd && rc == MPI_SUCCESS; i++) rc = child_map(d->types[i], &maps[i]);
  walk w = {b, maps};
  if (rc == MPI_SUCCESS) rc = pario_type_blocks(d, on_block, &w);
  free(maps);
  return rc;
}

static int flatten(MPI_Datatype t, runbuf *b) {
  pario_decoded d;
  int rc = pario_type_decode(t, &d);
  if (rc == MPI_SUCCESS)
    rc = pario_comb_is_leaf(d.comb) ? flatten_named(t, b) : flatten_derived(&d, b);
  pario_decoded_free(&d);
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
  int rc = flatten(type, &b);
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
