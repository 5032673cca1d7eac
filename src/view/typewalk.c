/* The one decoder of derived datatypes (typewalk.h): envelope and contents read into the int
 * constructors' layout, and each constructor's blocks (where the copies of its old types
 * go), which typemap.c and datarep.c both build on. */
#include "view/typewalk.h"
#include "core/common.h"

#include <stdlib.h>
#include <string.h>

int pario_type_combiner(MPI_Datatype type) {
  int comb;
  MPI_Count ni, na, nc, nd;
  if (type == MPI_DATATYPE_NULL) return -1;
  if (pario_type_envelope(type, &ni, &na, &nc, &nd, &comb) != MPI_SUCCESS) return -1;
  return comb;
}

int pario_type_is_named(MPI_Datatype type) { return pario_type_combiner(type) == MPI_COMBINER_NAMED; }

int pario_comb_is_leaf(int comb) {
  return comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX ||
         comb == MPI_COMBINER_F90_INTEGER;
}

/* ---- decoding ---- */

static int decoded_alloc(pario_decoded *d, long ni, long na, long nd) {
  d->ints = malloc(sizeof(MPI_Offset) * (size_t)(ni + 1));
  d->addrs = malloc(sizeof(MPI_Offset) * (size_t)(na + 1));
  d->types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
  return d->ints && d->addrs && d->types ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* Large-count constructors return their counts (and byte displacements) in large_counts:
 * put each back where the int constructor keeps it. in: ints; c: large counts. */
static void normalize(pario_decoded *d, const int *in, const MPI_Count *c, MPI_Count nc) {
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
    case MPI_COMBINER_SUBARRAY: /* ndims, [sizes, subsizes, starts], order */
      d->ints[0] = in[0];
      for (k = 0; k < nc; k++) d->ints[1 + k] = c[k];
      d->ints[1 + nc] = in[1];
      return;
    case MPI_COMBINER_DARRAY: { /* size, rank, ndims, [gsizes], distribs, dargs, psizes, order */
      MPI_Count nd = in[2];
      d->ints[0] = in[0], d->ints[1] = in[1], d->ints[2] = nd;
      for (k = 0; k < nd; k++) {
        d->ints[3 + k] = c[k];                        /* gsizes: the only large counts */
        d->ints[3 + nd + k] = in[3 + k];              /* distribs */
        d->ints[3 + 2 * nd + k] = in[3 + nd + k];     /* dargs */
        d->ints[3 + 3 * nd + k] = in[3 + 2 * nd + k]; /* psizes */
      }
      d->ints[3 + 4 * nd] = in[3 + 3 * nd]; /* order */
      return;
    }
    case MPI_COMBINER_RESIZED:
      d->addrs[0] = c[0], d->addrs[1] = c[1];
      return;
    default: /* contiguous, vector, indexed, indexed_block: the same layout, widened */
      for (k = 0; k < nc; k++) d->ints[k] = c[k];
  }
}

int pario_type_decode(MPI_Datatype t, pario_decoded *d) {
  MPI_Count ni, na, nc, nd;
  memset(d, 0, sizeof *d);
  if (t == MPI_DATATYPE_NULL || pario_type_envelope(t, &ni, &na, &nc, &nd, &d->comb) != MPI_SUCCESS)
    return MPI_ERR_TYPE;
  if (pario_comb_is_leaf(d->comb)) return MPI_SUCCESS;
  int *in = malloc(sizeof(int) * (size_t)(ni + 1));
  MPI_Aint *ad = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
  MPI_Count *c = malloc(sizeof(MPI_Count) * (size_t)(nc + 1));
  /* the int layout never has more entries than ints + large counts (+ addresses) */
  int rc = in && ad && c ? decoded_alloc(d, ni + nc + 1, na + nc + 2, nd) : MPI_ERR_NO_MEM;
  if (rc == MPI_SUCCESS && pario_type_contents(t, ni, na, nc, nd, in, ad, c, d->types) != MPI_SUCCESS)
    rc = MPI_ERR_TYPE;
  if (rc == MPI_SUCCESS) {
    d->ni = (int)ni, d->na = (int)na, d->nd = (int)nd; /* nd: the types to free */
    for (MPI_Count k = 0; k < ni; k++) d->ints[k] = in[k];
    for (MPI_Count k = 0; k < na; k++) d->addrs[k] = ad[k];
    if (nc > 0) normalize(d, in, c, nc);
  }
  free(in);
  free(ad);
  free(c);
  return rc;
}

void pario_decoded_free(pario_decoded *d) {
  for (int i = 0; d->types && i < d->nd; i++)
    if (!pario_comb_is_leaf(pario_type_combiner(d->types[i]))) PMPI_Type_free(&d->types[i]);
  free(d->ints);
  free(d->addrs);
  free(d->types);
  memset(d, 0, sizeof *d);
}

/* ---- blocks ---- */

/* Element blocks per dimension of a subarray or darray: block k of a dimension is elements
 * [start[k], start[k] + len[k]) of it. */
typedef struct dims {
  MPI_Offset *start, *len;
  MPI_Offset n;
} dims;

typedef struct visit {
  pario_block_fn fn;
  void *ctx;
} visit;

static int block(const visit *v, int child, MPI_Offset units, MPI_Offset bytes, MPI_Offset count) {
  pario_block b = {child, units, bytes, count};
  return v->fn(&b, v->ctx);
}

/* The blocks of dimensions d.. (ord[0] the slowest) at element index base. */
static int nd_blocks(const visit *v, const dims *dm, const int *ord, int nd, const MPI_Offset *stride, int d,
                     MPI_Offset base) {
  const dims *x = &dm[ord[d]];
  int rc = MPI_SUCCESS;
  for (MPI_Offset k = 0; k < x->n && rc == MPI_SUCCESS; k++) {
    if (d == nd - 1) {
      rc = block(v, 0, base + x->start[k] * stride[d], 0, x->len[k]);
      continue;
    }
    for (MPI_Offset i = 0; i < x->len[k] && rc == MPI_SUCCESS; i++)
      rc = nd_blocks(v, dm, ord, nd, stride, d + 1, base + (x->start[k] + i) * stride[d]);
  }
  return rc;
}

/* Subarray and darray: blocks over an array of sizes[] elements, C or Fortran order. */
static int nd_array(const visit *v, int nd, const MPI_Offset *sizes, const dims *dm, int fortran) {
  if (nd <= 0) return MPI_SUCCESS;
  int *ord = malloc(sizeof(int) * (size_t)nd);
  MPI_Offset *stride = malloc(sizeof(MPI_Offset) * (size_t)nd);
  int rc = ord && stride ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  MPI_Offset s = 1;
  for (int i = nd - 1; rc == MPI_SUCCESS && i >= 0; i--) {
    ord[i] = fortran ? nd - 1 - i : i;
    stride[i] = s;
    s *= sizes[ord[i]];
  }
  if (rc == MPI_SUCCESS) rc = nd_blocks(v, dm, ord, nd, stride, 0, 0);
  free(ord);
  free(stride);
  return rc;
}

/* Room for maxn[i] blocks in dimension i (one block each when maxn is NULL). */
static int dims_alloc(dims *dm, int nd, const MPI_Offset *maxn) {
  for (int i = 0; i < nd; i++) {
    size_t room = (size_t)(maxn ? maxn[i] : 1) + 1;
    dm[i].n = 0;
    dm[i].start = malloc(sizeof(MPI_Offset) * room);
    dm[i].len = malloc(sizeof(MPI_Offset) * room);
    if (!dm[i].start || !dm[i].len) return MPI_ERR_NO_MEM;
  }
  return MPI_SUCCESS;
}

static void dims_free(dims *dm, int nd) {
  for (int i = 0; dm && i < nd; i++) {
    free(dm[i].start);
    free(dm[i].len);
  }
  free(dm);
}

/* ints: ndims, sizes[], subsizes[], starts[], order */
static int subarray(const visit *v, const MPI_Offset *I) {
  int nd = (int)I[0];
  const MPI_Offset *sizes = I + 1, *sub = I + 1 + nd, *st = I + 1 + 2 * nd;
  dims *dm = calloc((size_t)(nd > 0 ? nd : 1), sizeof *dm);
  int rc = dm ? dims_alloc(dm, nd, NULL) : MPI_ERR_NO_MEM;
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++) {
    dm[i].start[0] = st[i];
    dm[i].len[0] = sub[i];
    dm[i].n = 1;
  }
  if (rc == MPI_SUCCESS) rc = nd_array(v, nd, sizes, dm, I[1 + 3 * nd] == MPI_ORDER_FORTRAN);
  dims_free(dm, nd);
  return rc;
}

/* The index blocks of one darray dimension owned by process coordinate c. */
static int darray_dim(dims *x, MPI_Offset gsize, MPI_Offset distrib, MPI_Offset darg, MPI_Offset psize,
                      MPI_Offset c) {
  if (distrib == MPI_DISTRIBUTE_NONE) {
    x->start[0] = 0, x->len[0] = gsize, x->n = 1;
  } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
    MPI_Offset bs = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
    MPI_Offset s = c * bs, e = PARIO_MIN(gsize, s + bs);
    x->start[0] = s, x->len[0] = e > s ? e - s : 0, x->n = 1;
  } else if (distrib == MPI_DISTRIBUTE_CYCLIC) {
    MPI_Offset bs = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    for (MPI_Offset s = c * bs; s < gsize; s += bs * psize) {
      x->start[x->n] = s;
      x->len[x->n++] = PARIO_MIN(bs, gsize - s);
    }
  } else {
    return MPI_ERR_TYPE;
  }
  return MPI_SUCCESS;
}

/* ints: size, rank, ndims, gsizes[], distribs[], dargs[], psizes[], order */
static int darray(const visit *v, const MPI_Offset *I) {
  int rank = (int)I[1], nd = (int)I[2];
  const MPI_Offset *gs = I + 3, *dist = I + 3 + nd, *darg = I + 3 + 2 * nd, *ps = I + 3 + 3 * nd;
  size_t n = (size_t)(nd > 0 ? nd : 1);
  dims *dm = calloc(n, sizeof *dm);
  MPI_Offset *maxn = malloc(sizeof(MPI_Offset) * n), *coord = malloc(sizeof(MPI_Offset) * n);
  int rc = dm && maxn && coord ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  /* process coordinates: the grid is row-major whatever the array order */
  for (int i = nd - 1, r = rank; rc == MPI_SUCCESS && i >= 0; i--) {
    coord[i] = r % ps[i];
    r /= (int)ps[i];
  }
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++) {
    MPI_Offset bs = darg[i] == MPI_DISTRIBUTE_DFLT_DARG || darg[i] < 1 ? 1 : darg[i];
    maxn[i] = dist[i] == MPI_DISTRIBUTE_CYCLIC ? gs[i] / bs + 1 : 1;
  }
  if (rc == MPI_SUCCESS) rc = dims_alloc(dm, nd, maxn);
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++) rc = darray_dim(&dm[i], gs[i], dist[i], darg[i], ps[i], coord[i]);
  if (rc == MPI_SUCCESS) rc = nd_array(v, nd, gs, dm, I[3 + 4 * nd] == MPI_ORDER_FORTRAN);
  free(maxn);
  free(coord);
  dims_free(dm, nd);
  return rc;
}

int pario_type_blocks(const pario_decoded *d, pario_block_fn fn, void *ctx) {
  const visit v = {fn, ctx};
  const MPI_Offset *I = d->ints, *A = d->addrs;
  if (!I || !A) return MPI_ERR_TYPE; /* a leaf, or not decoded */
  MPI_Offset n = d->comb == MPI_COMBINER_DUP || d->comb == MPI_COMBINER_RESIZED ? 0 : I[0];
  int rc = MPI_SUCCESS;
  switch (d->comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED: /* the new bounds are the consumer's: MPI's, or given in bytes */
      return block(&v, 0, 0, 0, 1);
    case MPI_COMBINER_CONTIGUOUS:
      return block(&v, 0, 0, 0, n);
    case MPI_COMBINER_VECTOR: /* count, blocklength, stride in extents */
      for (MPI_Offset i = 0; i < n && rc == MPI_SUCCESS; i++) rc = block(&v, 0, i * I[2], 0, I[1]);
      return rc;
    case MPI_COMBINER_HVECTOR: /* count, blocklength | stride in bytes */
      for (MPI_Offset i = 0; i < n && rc == MPI_SUCCESS; i++) rc = block(&v, 0, 0, i * A[0], I[1]);
      return rc;
    case MPI_COMBINER_INDEXED: /* count, blocklengths[], displacements[] in extents */
      for (MPI_Offset i = 0; i < n && rc == MPI_SUCCESS; i++) rc = block(&v, 0, I[1 + n + i], 0, I[1 + i]);
      return rc;
    case MPI_COMBINER_HINDEXED: /* count, blocklengths[] | displacements[] in bytes */
      for (MPI_Offset i = 0; i < n && rc == MPI_SUCCESS; i++) rc = block(&v, 0, 0, A[i], I[1 + i]);
      return rc;
    case MPI_COMBINER_INDEXED_BLOCK: /* count, blocklength, displacements[] in extents */
      for (MPI_Offset i = 0; i < n && rc == MPI_SUCCESS; i++) rc = block(&v, 0, I[2 + i], 0, I[1]);
      return rc;
    case MPI_COMBINER_HINDEXED_BLOCK: /* count, blocklength | displacements[] in bytes */
      for (MPI_Offset i = 0; i < n && rc == MPI_SUCCESS; i++) rc = block(&v, 0, 0, A[i], I[1]);
      return rc;
    case MPI_COMBINER_STRUCT: /* count, blocklengths[] | displacements[] in bytes | types[] */
      for (MPI_Offset i = 0; i < n && rc == MPI_SUCCESS; i++) rc = block(&v, (int)i, 0, A[i], I[1 + i]);
      return rc;
    case MPI_COMBINER_SUBARRAY:
      return subarray(&v, I);
    case MPI_COMBINER_DARRAY:
      return darray(&v, I);
    default:
      return MPI_ERR_TYPE;
  }
}
