/* external32's derived types: the typed-run flattening of a derived type with its native and
 * external32 layouts (decoded with the envelope/contents queries), and the cursors that convert
 * a buffer's data through those runs a piece at a time (datarep.h says what and why). The
 * scalars' table and value conversion are ext32conv.c's. */
#include "view/datarep.h"
#include "core/common.h"
#include "view/ext32.h"
#include "view/typemap.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- derived types: typed runs ---- */

/* One type's runs and bounds while building. */
typedef struct node {
  pario_ext32_run *r;
  size_t n, cap;
  int err;                 /* first error: MPI class, or a pario code for unsupported types */
  int bounded;             /* elo/ehi hold something */
  MPI_Offset elo, ehi;     /* external32 bounds accumulated from the blocks */
  MPI_Offset nlb, nextent; /* native bounds (the MPI library's) */
  MPI_Offset elb, eextent;
  const pario_ext32_sizer *sz; /* file sizes of basic types other than external32's, or NULL */
} node;

static void add_run(node *b, MPI_Offset noff, MPI_Offset eoff, MPI_Offset count, const pario_ext32_run *proto) {
  if (count <= 0 || b->err) return;
  if (b->n) {
    pario_ext32_run *p = &b->r[b->n - 1];
    if (p->type == proto->type && !memcmp(&p->cv, &proto->cv, sizeof p->cv) &&
        p->noff + p->count * p->isize == noff && p->eoff + p->count * p->xsize == eoff) {
      p->count += count;
      return;
    }
  }
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 16;
    pario_ext32_run *r = realloc(b->r, cap * sizeof *r);
    if (!r) { b->err = MPI_ERR_NO_MEM; return; }
    b->r = r;
    b->cap = cap;
  }
  pario_ext32_run *r = &b->r[b->n++];
  *r = *proto;
  r->noff = noff;
  r->eoff = eoff;
  r->count = count;
}

/* cnt copies of child c, the first at (nd, ed), the next ones an extent further each. */
static void copies(node *b, const node *c, MPI_Offset nd, MPI_Offset ed, MPI_Offset cnt) {
  if (cnt <= 0 || b->err) return;
  MPI_Offset lo = ed + c->elb + (c->eextent < 0 ? (cnt - 1) * c->eextent : 0);
  MPI_Offset hi = ed + c->elb + c->eextent + (c->eextent > 0 ? (cnt - 1) * c->eextent : 0);
  if (!b->bounded || lo < b->elo) b->elo = lo;
  if (!b->bounded || hi > b->ehi) b->ehi = hi;
  b->bounded = 1;
  if (c->n == 1 && c->r[0].count * c->r[0].isize == c->nextent &&
      c->r[0].count * c->r[0].xsize == c->eextent) { /* copies adjacent in both layouts */
    add_run(b, nd + c->r[0].noff, ed + c->r[0].eoff, cnt * c->r[0].count, &c->r[0]);
    return;
  }
  for (MPI_Offset i = 0; i < cnt && !b->err; i++)
    for (size_t j = 0; j < c->n; j++)
      add_run(b, nd + i * c->nextent + c->r[j].noff, ed + i * c->eextent + c->r[j].eoff, c->r[j].count, &c->r[j]);
}

/* A datatype's constructor arguments in the layout of the MPI-3 constructors (widened), so
 * types from MPI-4 large-count constructors read alike. */
typedef struct args {
  int comb;
  MPI_Offset *I, *A;
  MPI_Datatype *T;
  int nt;
} args;

static void args_free(args *a) {
  for (int i = 0; a->T && i < a->nt; i++) {
    int comb = pario_type_combiner(a->T[i]);
    if (comb != MPI_COMBINER_NAMED && !pario_ext32_is_f90(comb)) PMPI_Type_free(&a->T[i]);
  }
  free(a->I);
  free(a->A);
  free(a->T);
}

static int args_get(MPI_Datatype t, args *a) {
  memset(a, 0, sizeof *a);
  MPI_Count ni, na, nc, nd;
  if (pario_type_envelope(t, &ni, &na, &nc, &nd, &a->comb) != MPI_SUCCESS) return MPI_ERR_TYPE;
  if (a->comb == MPI_COMBINER_NAMED || pario_ext32_is_f90(a->comb)) return MPI_SUCCESS;
  int *in = malloc(sizeof(int) * (size_t)(ni + 1));
  MPI_Aint *ad = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
  MPI_Count *c = malloc(sizeof(MPI_Count) * (size_t)(nc + 1));
  a->I = malloc(sizeof(MPI_Offset) * (size_t)(ni + nc + 1));
  a->A = malloc(sizeof(MPI_Offset) * (size_t)(na + nc + 1));
  a->T = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
  int rc = in && ad && c && a->I && a->A && a->T ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  if (rc == MPI_SUCCESS && pario_type_contents(t, ni, na, nc, nd, in, ad, c, a->T) != MPI_SUCCESS)
    rc = MPI_ERR_TYPE;
  if (rc == MPI_SUCCESS) {
    a->nt = (int)nd;
    for (MPI_Count k = 0; k < ni; k++) a->I[k] = in[k];
    for (MPI_Count k = 0; k < na; k++) a->A[k] = ad[k];
  }
  if (rc == MPI_SUCCESS && nc > 0) { /* large-count constructor: counts come in c */
    MPI_Count n0 = c[0], k;
    switch (a->comb) {
      case MPI_COMBINER_HVECTOR: a->I[0] = c[0], a->I[1] = c[1], a->A[0] = c[2]; break;
      case MPI_COMBINER_HINDEXED:
      case MPI_COMBINER_STRUCT:
        for (k = 0; k <= n0; k++) a->I[k] = c[k];
        for (k = 0; k < n0; k++) a->A[k] = c[1 + n0 + k];
        break;
      case MPI_COMBINER_HINDEXED_BLOCK:
        a->I[0] = c[0], a->I[1] = c[1];
        for (k = 0; k < n0; k++) a->A[k] = c[2 + k];
        break;
      case MPI_COMBINER_SUBARRAY: /* ints: ndims, order; counts: sizes, subsizes, starts */
        a->I[0] = in[0];
        for (k = 0; k < nc; k++) a->I[1 + k] = c[k];
        a->I[1 + nc] = in[1];
        break;
      case MPI_COMBINER_DARRAY: { /* ints: size, rank, ndims, distribs, dargs, psizes, order */
        MPI_Count nd3 = in[2];
        for (k = 0; k < nd3; k++) {
          a->I[3 + k] = c[k];
          a->I[3 + nd3 + k] = in[3 + k];
          a->I[3 + 2 * nd3 + k] = in[3 + nd3 + k];
          a->I[3 + 3 * nd3 + k] = in[3 + 2 * nd3 + k];
        }
        a->I[3 + 4 * nd3] = in[3 + 3 * nd3];
        break;
      }
      case MPI_COMBINER_RESIZED: a->A[0] = c[0], a->A[1] = c[1]; break;
      default: /* contiguous, vector, indexed, indexed_block */
        for (k = 0; k < nc; k++) a->I[k] = c[k];
    }
  }
  free(in);
  free(ad);
  free(c);
  return rc;
}

static void walk(MPI_Datatype t, node *b);

/* An unsupported basic type: a code whose message names it. */
static int unsupported(MPI_Datatype t) {
  char name[MPI_MAX_OBJECT_NAME] = "";
  int len = 0;
  PMPI_Type_get_name(t, name, &len);
  return pario_err(MPI_ERR_UNSUPPORTED_DATAREP, "external32", NULL, 0,
                   "datatype %s has no external32 representation", len ? name : "(unnamed)");
}

/* A basic type under a sizer: the file size its callback gives, the native size from the
 * MPI library when external32 has no conversion for it (the sizer's owner converts). */
static int sized_leaf(MPI_Datatype t, const node *b, pario_ext32_conv *cv, unsigned *xsize) {
  MPI_Offset fx = 0;
  int size = 0, rc = b->sz->size(t, &fx, b->sz->ctx);
  if (rc != MPI_SUCCESS) return rc;
  if (fx < 0 || fx > UINT_MAX) return MPI_ERR_CONVERSION;
  if (cv->kind == K_NONE || cv->nsize == 0) {
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS || size <= 0 || size > 255) return MPI_ERR_TYPE;
    *cv = (pario_ext32_conv){K_COPY, (unsigned char)size, (unsigned char)size, 1};
  }
  *xsize = (unsigned)fx;
  return MPI_SUCCESS;
}

static void leaf(MPI_Datatype t, node *b) {
  pario_ext32_conv cv;
  const pario_ext32_pair *p;
  memset(&cv, 0, sizeof cv);
  int rc = pario_ext32_resolve(t, &cv, &p);
  if (rc == MPI_ERR_UNSUPPORTED_DATAREP && b->sz && !p) rc = MPI_SUCCESS, cv.kind = K_NONE;
  if (rc != MPI_SUCCESS) {
    b->err = rc == MPI_ERR_UNSUPPORTED_DATAREP ? unsupported(t) : rc;
    return;
  }
  pario_ext32_run proto;
  memset(&proto, 0, sizeof proto);
  MPI_Offset eoff = 0;
  for (int m = 0; m < (p ? 2 : 1); m++) {
    MPI_Datatype bt = p ? (m ? p->b : p->a) : t;
    if (p) {
      const pario_ext32_pair *unused;
      pario_ext32_resolve(bt, &cv, &unused);
    }
    proto.type = bt;
    proto.cv = cv;
    proto.isize = (unsigned char)(cv.nsize * cv.nper);
    proto.xsize = (unsigned)(cv.esize * cv.nper);
    if (b->sz) {
      if ((rc = sized_leaf(bt, b, &proto.cv, &proto.xsize)) != MPI_SUCCESS) {
        b->err = rc;
        return;
      }
      proto.isize = (unsigned char)(proto.cv.nsize * proto.cv.nper);
    }
    add_run(b, p && m ? p->off : 0, eoff, 1, &proto);
    eoff += proto.xsize;
  }
  b->elb = 0;
  b->eextent = eoff;
}

/* Element blocks per dimension of a subarray or darray: block k of dimension d is elements
 * [start[k], start[k] + len[k]) of that dimension. */
typedef struct dims {
  MPI_Offset *start, *len;
  MPI_Offset n;
} dims;

/* Emit the blocks of dimensions d.. (ord[0] slowest) at element index base. */
static void nd_emit(node *b, const node *c, const dims *dm, const int *ord, int nd, const MPI_Offset *stride,
                    int d, MPI_Offset base) {
  const dims *x = &dm[ord[d]];
  for (MPI_Offset k = 0; k < x->n && !b->err; k++) {
    if (d == nd - 1) {
      MPI_Offset i0 = base + x->start[k] * stride[d];
      copies(b, c, i0 * c->nextent, i0 * c->eextent, x->len[k]);
      continue;
    }
    for (MPI_Offset i = 0; i < x->len[k] && !b->err; i++)
      nd_emit(b, c, dm, ord, nd, stride, d + 1, base + (x->start[k] + i) * stride[d]);
  }
}

/* Subarray and darray: blocks over an array of sizes[] elements of c, C or Fortran order;
 * the result's bounds are the array's, scaled to external32. */
static void nd_array(node *b, const node *c, int nd, const MPI_Offset *sizes, const dims *dm, int fortran) {
  int *ord = malloc(sizeof(int) * (size_t)nd);
  MPI_Offset *stride = malloc(sizeof(MPI_Offset) * (size_t)nd);
  if (!ord || !stride) {
    b->err = MPI_ERR_NO_MEM;
  } else {
    MPI_Offset s = 1;
    for (int i = nd - 1; i >= 0; i--) {
      ord[i] = fortran ? nd - 1 - i : i;
      stride[i] = s;
      s *= sizes[ord[i]];
    }
    nd_emit(b, c, dm, ord, nd, stride, 0, 0);
  }
  free(ord);
  free(stride);
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

static void subarray(node *b, const node *c, const MPI_Offset *I) {
  int nd = (int)I[0];
  const MPI_Offset *sizes = I + 1, *sub = I + 1 + nd, *st = I + 1 + 2 * nd;
  dims *dm = calloc((size_t)nd, sizeof *dm);
  int rc = dm ? dims_alloc(dm, nd, NULL) : MPI_ERR_NO_MEM;
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++) {
    dm[i].start[0] = st[i];
    dm[i].len[0] = sub[i];
    dm[i].n = 1;
  }
  if (rc == MPI_SUCCESS) nd_array(b, c, nd, sizes, dm, I[1 + 3 * nd] == MPI_ORDER_FORTRAN);
  else b->err = rc;
  dims_free(dm, nd);
}

static void darray(node *b, const node *c, const MPI_Offset *I) {
  int rank = (int)I[1], nd = (int)I[2];
  const MPI_Offset *gs = I + 3, *dist = I + 3 + nd, *darg = I + 3 + 2 * nd, *ps = I + 3 + 3 * nd;
  dims *dm = calloc((size_t)nd, sizeof *dm);
  MPI_Offset *maxn = malloc(sizeof(MPI_Offset) * (size_t)nd), *coord = malloc(sizeof(MPI_Offset) * (size_t)nd);
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
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++) {
    dims *x = &dm[i];
    if (dist[i] == MPI_DISTRIBUTE_NONE) {
      x->start[0] = 0, x->len[0] = gs[i], x->n = 1;
    } else if (dist[i] == MPI_DISTRIBUTE_BLOCK) {
      MPI_Offset bs = darg[i] == MPI_DISTRIBUTE_DFLT_DARG ? (gs[i] + ps[i] - 1) / ps[i] : darg[i];
      MPI_Offset s = coord[i] * bs, e = PARIO_MIN(gs[i], s + bs);
      x->start[0] = s, x->len[0] = e > s ? e - s : 0, x->n = 1;
    } else if (dist[i] == MPI_DISTRIBUTE_CYCLIC) {
      MPI_Offset bs = darg[i] == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg[i];
      for (MPI_Offset s = coord[i] * bs; s < gs[i]; s += bs * ps[i]) {
        x->start[x->n] = s;
        x->len[x->n++] = PARIO_MIN(bs, gs[i] - s);
      }
    } else {
      rc = MPI_ERR_TYPE;
    }
  }
  if (rc == MPI_SUCCESS) nd_array(b, c, nd, gs, dm, I[3 + 4 * nd] == MPI_ORDER_FORTRAN);
  else b->err = rc;
  free(maxn);
  free(coord);
  dims_free(dm, nd);
}

static void node_free(node *c) { free(c->r); }

static void derived(const args *a, node *b) {
  const MPI_Offset *I = a->I, *A = a->A;
  node c;
  int nchild = a->comb == MPI_COMBINER_STRUCT ? 0 : 1;
  memset(&c, 0, sizeof c);
  c.sz = b->sz;
  if (nchild) {
    walk(a->T[0], &c);
    if (c.err) {
      b->err = c.err;
      node_free(&c);
      return;
    }
  }
  MPI_Offset n = a->comb == MPI_COMBINER_DUP || a->comb == MPI_COMBINER_RESIZED ? 0 : I[0];
  switch (a->comb) {
    case MPI_COMBINER_DUP:
      copies(b, &c, 0, 0, 1);
      break;
    case MPI_COMBINER_RESIZED: /* bounds in bytes, as given */
      copies(b, &c, 0, 0, 1);
      b->bounded = 1, b->elo = A[0], b->ehi = A[0] + A[1];
      break;
    case MPI_COMBINER_CONTIGUOUS:
      copies(b, &c, 0, 0, n);
      break;
    case MPI_COMBINER_VECTOR: /* count, blocklength, stride in extents */
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, i * I[2] * c.nextent, i * I[2] * c.eextent, I[1]);
      break;
    case MPI_COMBINER_HVECTOR: /* stride in bytes */
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, i * A[0], i * A[0], I[1]);
      break;
    case MPI_COMBINER_INDEXED: /* count, blocklengths[], displacements[] in extents */
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, I[1 + n + i] * c.nextent, I[1 + n + i] * c.eextent, I[1 + i]);
      break;
    case MPI_COMBINER_HINDEXED:
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, A[i], A[i], I[1 + i]);
      break;
    case MPI_COMBINER_INDEXED_BLOCK: /* count, blocklength, displacements[] in extents */
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, I[2 + i] * c.nextent, I[2 + i] * c.eextent, I[1]);
      break;
    case MPI_COMBINER_HINDEXED_BLOCK:
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, A[i], A[i], I[1]);
      break;
    case MPI_COMBINER_STRUCT: /* count, blocklengths[] | displacements[] in bytes | types[] */
      for (MPI_Offset i = 0; i < n && !b->err; i++) {
        node s;
        memset(&s, 0, sizeof s);
        s.sz = b->sz;
        walk(a->T[i], &s);
        if (s.err) b->err = s.err;
        else copies(b, &s, A[i], A[i], I[1 + i]);
        node_free(&s);
      }
      break;
    case MPI_COMBINER_SUBARRAY:
      subarray(b, &c, I);
      break;
    case MPI_COMBINER_DARRAY:
      darray(b, &c, I);
      break;
    default:
      b->err = MPI_ERR_TYPE;
  }
  if (!b->err && (a->comb == MPI_COMBINER_SUBARRAY || a->comb == MPI_COMBINER_DARRAY)) {
    /* The array's bounds, a whole number of old-type extents: scale them. */
    if (c.nextent == 0 || b->nlb % c.nextent || b->nextent % c.nextent) {
      b->err = MPI_ERR_TYPE;
    } else {
      b->bounded = 1;
      b->elo = b->nlb / c.nextent * c.eextent;
      b->ehi = b->elo + b->nextent / c.nextent * c.eextent;
    }
  }
  if (a->comb == MPI_COMBINER_DUP) b->bounded = 1, b->elo = c.elb, b->ehi = c.elb + c.eextent;
  b->elb = b->bounded ? b->elo : 0;
  b->eextent = b->bounded ? b->ehi - b->elo : 0;
  node_free(&c);
}

static void walk(MPI_Datatype t, node *b) {
  MPI_Count lb, extent;
  if (PMPI_Type_get_extent_x(t, &lb, &extent) != MPI_SUCCESS) {
    b->err = MPI_ERR_TYPE;
    return;
  }
  b->nlb = lb;
  b->nextent = extent;
  args a;
  int rc = args_get(t, &a);
  if (rc != MPI_SUCCESS) b->err = rc;
  else if (a.comb == MPI_COMBINER_NAMED || pario_ext32_is_f90(a.comb)) leaf(t, b);
  else derived(&a, b);
  args_free(&a);
}

void pario_ext32_map_free(pario_ext32_map *m) {
  if (!m) return;
  free(m->runs);
  free(m->ecum);
  free(m);
}

int pario_ext32_map_build(MPI_Datatype type, pario_ext32_map **out) {
  return pario_ext32_map_build_sized(type, NULL, out);
}

int pario_ext32_map_build_sized(MPI_Datatype type, const pario_ext32_sizer *sz, pario_ext32_map **out) {
  node b;
  memset(&b, 0, sizeof b);
  b.sz = sz;
  *out = NULL;
  if (type == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
  walk(type, &b);
  if (b.err) {
    node_free(&b);
    return b.err;
  }
  pario_ext32_map *m = calloc(1, sizeof *m);
  MPI_Count size;
  if (!m || !(m->ecum = malloc(sizeof(MPI_Offset) * (b.n + 1)))) {
    free(m);
    node_free(&b);
    return MPI_ERR_NO_MEM;
  }
  m->runs = b.r;
  m->nruns = b.n;
  m->ecum[0] = 0;
  for (size_t i = 0; i < b.n; i++) {
    m->ecum[i + 1] = m->ecum[i] + b.r[i].count * b.r[i].xsize;
    m->nsize += b.r[i].count * b.r[i].isize;
  }
  m->esize = m->ecum[b.n];
  m->nlb = b.nlb;
  m->nextent = b.nextent;
  m->elb = b.elb;
  m->eextent = b.eextent;
  m->nstream = b.n == 1 && b.r[0].count * b.r[0].isize == b.nextent;
  PMPI_Type_size_x(type, &size);
  if (m->nsize != size) { /* the walk disagrees with the MPI library: refuse the type */
    pario_ext32_map_free(m);
    return MPI_ERR_TYPE;
  }
  *out = m;
  return MPI_SUCCESS;
}

int pario_ext32_typemap(const pario_ext32_map *m, pario_typemap **out) {
  pario_typemap *tm = calloc(1, sizeof *tm);
  *out = NULL;
  if (!tm || !(tm->runs = malloc(sizeof(pario_run) * (m->nruns + 1))) ||
      !(tm->cum = malloc(sizeof(MPI_Offset) * (m->nruns + 1)))) {
    pario_typemap_free(tm);
    return MPI_ERR_NO_MEM;
  }
  size_t n = 0;
  for (size_t i = 0; i < m->nruns; i++) {
    MPI_Offset off = m->runs[i].eoff, len = m->runs[i].count * m->runs[i].xsize;
    if (n && tm->runs[n - 1].off + tm->runs[n - 1].len == off) {
      tm->runs[n - 1].len += len;
    } else {
      tm->runs[n].off = off;
      tm->runs[n++].len = len;
    }
  }
  tm->nruns = n;
  tm->size = m->esize;
  tm->lb = m->elb;
  tm->extent = m->eextent;
  tm->monotonic = tm->ordered = tm->nonneg = tm->committed = 1;
  tm->cum[0] = 0;
  for (size_t i = 0; i < n; i++) {
    tm->cum[i + 1] = tm->cum[i] + tm->runs[i].len;
    if (tm->runs[i].off < 0) tm->nonneg = 0;
    if (i && tm->runs[i].off < tm->runs[i - 1].off + tm->runs[i - 1].len) tm->monotonic = 0;
    if (i && tm->runs[i].off < tm->runs[i - 1].off) tm->ordered = 0;
  }
  tm->dense = n == 1 && tm->runs[0].off == tm->lb && tm->runs[0].len == tm->extent;
  *out = tm;
  return MPI_SUCCESS;
}

/* ---- cursors ---- */

/* Native address of item k of the current run of the current copy. */
static inline unsigned char *item_at(const pario_ext32_cursor *c, MPI_Offset k) {
  const pario_ext32_run *r = &c->m->runs[c->run];
  return (unsigned char *)c->buf + c->copy * c->m->nextent + r->noff + k * r->isize;
}

/* n items of a run. Runs of a few plain values (same size both sides, byte reversal or copy:
 * most of a struct's members) are converted inline; a call chain per value costs more than
 * the value. */
static inline size_t run_items(const pario_ext32_run *r, const unsigned char *from, unsigned char *to, size_t n,
                               int enc) {
  const pario_ext32_conv *cv = &r->cv;
  size_t ns = n * cv->nper;
  if (HOST_LE && ns <= 4 && cv->nsize <= 8 && !(cv->nsize & (cv->nsize - 1)) && cv->nsize == cv->esize &&
      cv->kind != K_BOOL && cv->kind != K_X87) {
    for (size_t i = 0; i < ns; i++) {
      switch (cv->nsize) {
        case 1: to[i] = from[i]; break;
        case 2: { uint16_t v; memcpy(&v, from + 2 * i, 2); v = __builtin_bswap16(v); memcpy(to + 2 * i, &v, 2); break; }
        case 4: { uint32_t v; memcpy(&v, from + 4 * i, 4); v = __builtin_bswap32(v); memcpy(to + 4 * i, &v, 4); break; }
        default: { uint64_t v; memcpy(&v, from + 8 * i, 8); v = __builtin_bswap64(v); memcpy(to + 8 * i, &v, 8); break; }
      }
    }
    return 0;
  }
  return enc ? pario_ext32_encode_items(cv, from, to, n) : pario_ext32_decode_items(cv, from, to, n);
}

void pario_ext32_cursor_init(pario_ext32_cursor *c, const pario_ext32_map *m, const void *buf, MPI_Offset pos) {
  memset(c, 0, sizeof *c);
  c->m = m;
  c->buf = (char *)buf;
  c->pos = pos;
  if (m->esize == 0 || m->nruns == 0) return;
  if (m->nstream) { /* one run, copies adjacent: the stream is that run, endless */
    c->into = pos;
  } else {
    c->copy = pos / m->esize;
    MPI_Offset rem = pos % m->esize;
    size_t lo = 0, hi = m->nruns; /* ecum[lo] <= rem < ecum[hi] */
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      if (m->ecum[mid] <= rem) lo = mid; else hi = mid;
    }
    c->run = lo;
    c->into = rem - m->ecum[lo];
  }
  const pario_ext32_run *r = &m->runs[c->run];
  c->npart = (int)(c->into % r->xsize);
  if (c->npart) /* mid-item: its first bytes are the value in memory, encoded */
    c->narrowed += run_items(r, item_at(c, c->into / r->xsize), c->part, 1, 1);
}

static void advance(pario_ext32_cursor *c, MPI_Offset n) {
  const pario_ext32_map *m = c->m;
  c->pos += n;
  c->into += n;
  if (!m->nstream && c->into == m->runs[c->run].count * m->runs[c->run].xsize) {
    c->into = 0;
    if (++c->run == m->nruns) {
      c->run = 0;
      c->copy++;
    }
  }
}

static int stream(pario_ext32_cursor *c, unsigned char *ext, MPI_Offset n, int enc) {
  const pario_ext32_map *m = c->m;
  if (n <= 0) return MPI_SUCCESS;
  if (m->esize == 0 || m->nruns == 0) return MPI_ERR_ARG;
  while (n > 0) {
    const pario_ext32_run *r = &m->runs[c->run];
    MPI_Offset xs = r->xsize;
    if (c->into == 0 && !m->nstream && n >= r->count * xs) { /* a whole run: no division */
      MPI_Offset take = r->count * xs;
      if (enc) c->narrowed += run_items(r, item_at(c, 0), ext, (size_t)r->count, 1);
      else c->narrowed += run_items(r, ext, item_at(c, 0), (size_t)r->count, 0);
      ext += take;
      n -= take;
      c->pos += take;
      if (++c->run == m->nruns) {
        c->run = 0;
        c->copy++;
      }
      continue;
    }
    MPI_Offset k = c->into / xs, part = c->into % xs;
    MPI_Offset avail = m->nstream ? n : r->count * xs - c->into;
    MPI_Offset take = PARIO_MIN(avail, n);
    if (part || take < xs) { /* a piece of one item */
      unsigned char tmp[PARIO_EXT32_MAXITEM];
      take = PARIO_MIN(take, xs - part);
      if (enc) {
        c->narrowed += run_items(r, item_at(c, k), tmp, 1, 1);
        memcpy(ext, tmp + part, (size_t)take);
      } else {
        memcpy(c->part + part, ext, (size_t)take);
        if (part + take == xs) c->narrowed += run_items(r, c->part, item_at(c, k), 1, 0);
      }
      c->npart = (int)((part + take) % xs);
    } else {
      MPI_Offset items = take / xs;
      take = items * xs;
      if (enc) c->narrowed += run_items(r, item_at(c, k), ext, (size_t)items, 1);
      else c->narrowed += run_items(r, ext, item_at(c, k), (size_t)items, 0);
    }
    ext += take;
    n -= take;
    advance(c, take);
  }
  return MPI_SUCCESS;
}

int pario_ext32_pack(pario_ext32_cursor *c, void *out, MPI_Offset n) { return stream(c, out, n, 1); }

int pario_ext32_unpack(pario_ext32_cursor *c, const void *in, MPI_Offset n) {
  return stream(c, (unsigned char *)(uintptr_t)in, n, 0);
}

/* A piece that ended inside an item: the item's other bytes are those of the value in memory,
 * encoded, so the item can be stored now and a later piece (another cursor) completes it. */
int pario_ext32_flush(pario_ext32_cursor *c) {
  if (!c->npart || c->m->esize == 0) return MPI_SUCCESS;
  const pario_ext32_run *r = &c->m->runs[c->run];
  unsigned char tmp[PARIO_EXT32_MAXITEM];
  MPI_Offset k = c->into / r->xsize;
  c->narrowed += run_items(r, item_at(c, k), tmp, 1, 1);
  memcpy(c->part + c->npart, tmp + c->npart, r->xsize - (size_t)c->npart);
  c->narrowed += run_items(r, c->part, item_at(c, k), 1, 0);
  return MPI_SUCCESS;
}

void pario_ext32_locate(const pario_ext32_map *m, MPI_Offset epos, MPI_Offset *native, MPI_Offset *items) {
  MPI_Offset nat = 0, it = 0, copy = m->esize ? epos / m->esize : 0, rem = m->esize ? epos % m->esize : 0;
  MPI_Offset per = 0; /* items of one copy */
  for (size_t i = 0; i < m->nruns; i++) per += m->runs[i].count;
  nat = copy * m->nsize;
  it = copy * per;
  for (size_t i = 0; i < m->nruns && rem > 0; i++) {
    const pario_ext32_run *r = &m->runs[i];
    MPI_Offset len = r->count * r->xsize, whole = PARIO_MIN(rem, len) / r->xsize;
    nat += whole * r->isize;
    it += whole;
    rem -= len;
  }
  *native = nat;
  if (items) *items = it;
}
