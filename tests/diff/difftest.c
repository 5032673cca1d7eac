/* difftest: replays a random but seed-determined sequence of MPI-IO calls (views built from
 * every datatype constructor, independent/collective/nonblocking/split reads and writes, seeks,
 * sizes, sync, atomicity, reopen) and logs every result, so that two MPI-IO implementations can
 * be compared byte for byte (the file) and line for line (the per-rank logs). --model checks a
 * run against a model built with MPI_Pack/MPI_Unpack; corners where a native MPI-IO is wrong
 * are avoided on that MPI (README.md lists them). Standard MPI only (and dladdr). */
#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "difftest.h"

/* ------------------------------------------------------------------------------------------ */
/* Random numbers: splitmix64. S is shared by all ranks (collective parameters), R is per rank. */

uint64_t mix64(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rnext(rng_t *r) { r->s += 0x9e3779b97f4a7c15ULL; return mix64(r->s); }

/* Uniform integer in [lo, hi] (hi >= lo). */
long rint_(rng_t *r, long lo, long hi)
{
  if (hi <= lo) return lo;
  return lo + (long)(rnext(r) % (uint64_t)(hi - lo + 1));
}

/* True with probability pct percent. */
int rpct(rng_t *r, int pct) { return (int)(rnext(r) % 100) < pct; }

/* Pick an index from a weight table. */
int rweighted(rng_t *r, const int *w, int n)
{
  long tot = 0;
  for (int i = 0; i < n; i++) tot += w[i];
  long x = rint_(r, 0, tot - 1);
  for (int i = 0; i < n; i++) {
    if (x < w[i]) return i;
    x -= w[i];
  }
  return n - 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Options and global state. */

opts_t O;
int me, np;
FILE *LOG;
rng_t S, R;          /* shared and per-rank streams */
int is_ompi;         /* host MPI is Open MPI: OMPIO as native */
int q_ompio, q_romio; /* avoid corners where OMPIO / ROMIO are wrong (see README) */
long cur_op;         /* for messages */

void logf_(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vfprintf(LOG, fmt, ap);
  va_end(ap);
  if (O.verbose) {
    va_start(ap, fmt);
    fprintf(stderr, "[%d] ", me);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
  }
}

/* Growing string for type descriptions. */
char *xsprintf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = malloc((size_t)n + 1);
  if (!s) DIE("out of memory");
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

/* A list of longs as "a,b,c" (for descriptions). */
char *list_str(const long *v, int n)
{
  char *s = xsprintf("%s", "");
  for (int i = 0; i < n; i++) {
    char *t = xsprintf("%s%s%ld", s, i ? "," : "", v[i]);
    free(s);
    s = t;
  }
  return s;
}

/* ------------------------------------------------------------------------------------------ */
/* Datatypes with their bounds, as queried from the host MPI. */


dt_t dt_wrap(MPI_Datatype t, int owned, char *desc)
{
  dt_t d;
  d.t = t;
  d.owned = owned;
  d.desc = desc;
  CHK(MPI_Type_get_extent(t, &d.lb, &d.ext));
  CHK(MPI_Type_get_true_extent(t, &d.tlb, &d.text));
  CHK(MPI_Type_size_x(t, &d.size));
  int ni, na, nd, comb;
  CHK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
  d.named = comb == MPI_COMBINER_NAMED;
  return d;
}

void dt_free(dt_t *d)
{
  if (d->owned) CHK(MPI_Type_free(&d->t));
  free(d->desc);
  d->desc = NULL;
  d->owned = 0;
}

MPI_Aint dt_tub(const dt_t *d) { return d->tlb + d->text; }

/* In portable mode, force the bounds the standard's constructors give without alignment
 * padding: Open MPI pads e.g. hindexed_block of doubles at odd byte displacements to a multiple
 * of 8, MPICH does not, and the random sequence must not depend on that. The description is
 * left alone so that logs of both hosts stay comparable. */
dt_t pin(dt_t d, MPI_Aint lb, MPI_Aint ub)
{
  if (!O.portable || (d.lb == lb && d.lb + d.ext == ub)) return d;
  MPI_Datatype t;
  CHK(MPI_Type_create_resized(d.t, lb, ub - lb, &t));
  char *desc = d.desc;
  d.desc = NULL;
  dt_free(&d);
  return dt_wrap(t, 1, desc);
}

/* ------------------------------------------------------------------------------------------ */
/* Random datatype generator. File mode: data at nonnegative, monotonically nondecreasing,
 * non-overlapping displacements, every copy inside [lb, lb+extent) so that tiling keeps these
 * properties. Memory mode additionally allows negative strides, permuted blocks and negative
 * lower bounds; 'overlap' (send buffers only) allows copies that overlap. */

dt_t leaf(const gen_t *g)
{
  dt_t d = *g->unit;
  d.owned = 0;
  d.desc = xsprintf("E");
  return d;
}

/* A type with lower bound 0 and data inside [0, extent): what subarray/darray expect of an
 * element type (their bounds ignore the old type's lower bound). */
dt_t shift0(dt_t c)
{
  if (c.lb == 0) return c;
  MPI_Aint d = -c.lb;
  MPI_Datatype t;
  CHK(MPI_Type_create_hindexed_block(1, 1, &d, c.t, &t));
  dt_t r = dt_wrap(t, 1, xsprintf("hidxblk(1,1,[%ld],%s)", (long)d, c.desc));
  r = pin(r, 0, c.ext);
  dt_free(&c);
  return r;
}

/* Random permutation of n block indices (memory types only; file types keep order). */
static void maybe_permute(const gen_t *g, int *perm, int n)
{
  for (int i = 0; i < n; i++) perm[i] = i;
  if (!g->mem || !rpct(g->r, 35)) return;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)rint_(g->r, 0, i);
    int t = perm[i]; perm[i] = perm[j]; perm[j] = t;
  }
}

static int dense(const dt_t *d) { return d->size == d->ext && d->tlb == d->lb && d->text == d->ext; }

/* MPICH 4.0's ROMIO flattens indexed/hindexed blocks with loops that step wrongly over the
 * zero-length lower/upper-bound entries it records for resized types (and for subarray and
 * darray, which it rebuilds with resized): blocks of such an old type land in the wrong places
 * (hindexed(2,[3,2],[14,57],resized(DOUBLE,0,14)), indexed(2,[1,1],[2,4],resized struct)).
 * Under MPICH indexed/hindexed take only old types free of those (the _block forms are fine). */
static int romio_marker_free(const gen_t *g, const dt_t *c)
{
  static const char *bad[] = {"resized", "subarray", "darray"};
  for (int i = 0; i < 3; i++) if (strstr(c->desc, bad[i])) return 0;
  return !(strstr(c->desc, "E") && strstr(g->unit->desc, "resized"));
}

static int predefined(const dt_t *d) { return d->named; }

/* Block lengths for n blocks, each 0..maxbl with at least one nonzero (zero-length blocks).
 * MPICH 4.0's ROMIO flattens a zero-length block of a noncontiguous old type as one copy
 * (struct blocks, the first block of indexed/hindexed), and what it deems contiguous is not
 * what the layout says (a packed struct is not): under MPICH zero-length blocks only over
 * predefined old types. */
static void blocklens(const gen_t *g, int *bl, int n, int maxbl, int zero_ok)
{
  int nz = 0;
  for (int i = 0; i < n; i++) {
    int z = rpct(g->r, 20);
    bl[i] = z && zero_ok ? 0 : (int)rint_(g->r, 1, maxbl);
    nz += bl[i] != 0;
  }
  if (!nz) bl[rint_(g->r, 0, n - 1)] = (int)rint_(g->r, 1, maxbl);
}

static dt_t g_contig(const gen_t *g, dt_t c, MPI_Aint budget)
{
  long maxn = budget / c.ext;
  int n = (int)rint_(g->r, 1, maxn < 4 ? maxn : 4);
  MPI_Datatype t;
  CHK(MPI_Type_contiguous(n, c.t, &t));
  dt_t r = pin(dt_wrap(t, 1, xsprintf("contig(%d,%s)", n, c.desc)), c.lb, c.lb + n * c.ext);
  dt_free(&c);
  return r;
}

/* vector and hvector: stride at least the block (no overlap), negative in memory mode. */
static dt_t g_vector(const gen_t *g, dt_t c, MPI_Aint budget, int bytes)
{
  int bl = (int)rint_(g->r, 1, 3), count = (int)rint_(g->r, 1, 4);
  MPI_Aint e = c.ext, gap = bytes ? rint_(g->r, 0, 2 * e) : e * rint_(g->r, 0, 3);
  MPI_Aint stride = bl * e + gap;
  if (g->overlap && rpct(g->r, 15)) stride = bytes ? rint_(g->r, 1, bl * e) : e * rint_(g->r, 1, bl);
  while (count > 1 && (count - 1) * stride + bl * e > budget) count--;
  /* Open MPI 4.1 reports a wrong true lower bound for negative strides (vector(4,1,-1,BYTE):
   * true_lb 0 instead of -3), and buffers are sized from it: negative strides on MPICH only */
  if (g->mem && !q_ompio && rpct(g->r, 30)) stride = -stride;
  MPI_Datatype t;
  if (bytes) CHK(MPI_Type_create_hvector(count, bl, stride, c.t, &t));
  else CHK(MPI_Type_vector(count, bl, (int)(stride / e), c.t, &t));
  dt_t r = dt_wrap(t, 1, xsprintf("%s(%d,%d,%ld,%s)", bytes ? "hvec" : "vec", count, bl,
                                  (long)(bytes ? stride : stride / e), c.desc));
  MPI_Aint span = (count - 1) * stride;
  r = pin(r, c.lb + (span < 0 ? span : 0), c.lb + (span > 0 ? span : 0) + bl * e);
  dt_free(&c);
  return r;
}

/* indexed, hindexed, indexed_block, hindexed_block. kind: 0 idx, 1 hidx, 2 idxblk, 3 hidxblk. */
static dt_t g_indexed(const gen_t *g, dt_t c, MPI_Aint budget, int kind)
{
  enum { MAXB = 5 };
  int n = (int)rint_(g->r, 1, MAXB), bl[MAXB], perm[MAXB], di[MAXB];
  MPI_Aint dh[MAXB], e = c.ext;
  int bytes = kind == 1 || kind == 3, block = kind >= 2;
  if (q_romio && !block && !romio_marker_free(g, &c)) {
    kind += 2;
    block = 1;
  }
  if (block) {
    int b = (int)rint_(g->r, 1, 3);
    for (int i = 0; i < n; i++) bl[i] = b;
  } else {
    blocklens(g, bl, n, 3, !q_romio || predefined(&c));
  }
  MPI_Aint cur = bytes ? rint_(g->r, 0, e) : e * rint_(g->r, 0, 2), pos[MAXB];
  for (int i = 0; i < n; i++) {
    pos[i] = cur;
    cur += bl[i] * e + (bytes ? rint_(g->r, 0, e) : e * rint_(g->r, 0, 2));
  }
  while (n > 1 && cur > budget) cur = pos[--n];   /* drop trailing blocks over budget */
  int nz = 0;
  for (int i = 0; i < n; i++) nz += bl[i] != 0;
  if (!nz) bl[0] = 1;
  maybe_permute(g, perm, n);
  long dl[MAXB], bll[MAXB];
  int bls[MAXB];
  for (int i = 0; i < n; i++) {
    bls[i] = bl[perm[i]];
    dh[i] = pos[perm[i]];
    di[i] = (int)(pos[perm[i]] / e);
    dl[i] = bytes ? (long)dh[i] : di[i];
    bll[i] = bls[i];
  }
  MPI_Datatype t;
  static const char *names[] = {"idx", "hidx", "idxblk", "hidxblk"};
  switch (kind) {
  case 0: CHK(MPI_Type_indexed(n, bls, di, c.t, &t)); break;
  case 1: CHK(MPI_Type_create_hindexed(n, bls, dh, c.t, &t)); break;
  case 2: CHK(MPI_Type_create_indexed_block(n, bls[0], di, c.t, &t)); break;
  default: CHK(MPI_Type_create_hindexed_block(n, bls[0], dh, c.t, &t)); break;
  }
  char *sb = list_str(bll, n), *sd = list_str(dl, n);
  dt_t r = dt_wrap(t, 1, xsprintf("%s(%d,[%s],[%s],%s)", names[kind], n, sb, sd, c.desc));
  MPI_Aint lo = 0, hi = 0;
  int first = 1;
  for (int i = 0; i < n; i++) {
    if (!bls[i]) continue;
    MPI_Aint b = (bytes ? dh[i] : (MPI_Aint)di[i] * e) + c.lb, end = b + bls[i] * e;
    if (first || b < lo) lo = b;
    if (first || end > hi) hi = end;
    first = 0;
  }
  r = pin(r, lo, hi);
  free(sb);
  free(sd);
  dt_free(&c);
  return r;
}

/* struct of up to 3 different random children, then resized to explicit bounds (a struct's
 * natural extent includes alignment padding, and Open MPI 4.1 gets the upper bound wrong for
 * some old types with nonzero lower bounds). */
static dt_t g_struct(const gen_t *g, int depth, MPI_Aint budget)
{
  enum { MAXB = 3 };
  int n = (int)rint_(g->r, 1, MAXB), bl[MAXB], perm[MAXB];
  dt_t ch[MAXB];
  for (int i = 0; i < n; i++) ch[i] = gen(g, depth - 1, budget / n / 2);
  int zero_ok = 1;
  if (q_romio) for (int i = 0; i < n; i++) zero_ok &= predefined(&ch[i]);
  blocklens(g, bl, n, 2, zero_ok);
  MPI_Aint cur = rint_(g->r, 0, 8), d[MAXB], lo = 0, hi = 0;
  int first = 1;
  for (int i = 0; i < n; i++) {
    d[i] = cur - ch[i].lb + rint_(g->r, 0, 8);
    if (bl[i]) {
      MPI_Aint b = d[i] + ch[i].lb, end = b + bl[i] * ch[i].ext;
      if (first || b < lo) lo = b;
      if (first || end > hi) hi = end;
      first = 0;
      cur = end;
    }
  }
  maybe_permute(g, perm, n);
  int bls[MAXB];
  MPI_Aint ds[MAXB];
  MPI_Datatype ts[MAXB];
  char *desc = xsprintf("%s", "");
  for (int i = 0; i < n; i++) {
    int k = perm[i];
    bls[i] = bl[k];
    ds[i] = d[k];
    ts[i] = ch[k].t;
    char *t = xsprintf("%s%s%d@%ld:%s", desc, i ? "," : "", bls[i], (long)ds[i], ch[k].desc);
    free(desc);
    desc = t;
  }
  MPI_Datatype st, t;
  CHK(MPI_Type_create_struct(n, bls, ds, ts, &st));
  if (q_romio) lo = 0;       /* see g_resized; lo >= 0 here */
  MPI_Aint ext = hi - lo + rint_(g->r, 0, 8);
  CHK(MPI_Type_create_resized(st, lo, ext, &t));
  CHK(MPI_Type_free(&st));
  dt_t r = dt_wrap(t, 1, xsprintf("resized(struct(%s),%ld,%ld)", desc, (long)lo, (long)ext));
  free(desc);
  for (int i = 0; i < n; i++) dt_free(&ch[i]);
  return r;
}

static dt_t g_subarray(const gen_t *g, dt_t c, MPI_Aint budget)
{
  c = shift0(c);
  int nd = (int)rint_(g->r, 1, 3), sz[3], sub[3], st[3];
  long maxel = budget / c.ext, prod = 1;
  for (int i = 0; i < nd; i++) {
    long m = maxel / prod;
    sz[i] = (int)rint_(g->r, 1, m < 4 ? (m < 1 ? 1 : m) : 4);
    prod *= sz[i];
    sub[i] = (int)rint_(g->r, 1, sz[i]);
    st[i] = (int)rint_(g->r, 0, sz[i] - sub[i]);
  }
  int order = rpct(g->r, 50) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
  MPI_Datatype t;
  CHK(MPI_Type_create_subarray(nd, sz, sub, st, order, c.t, &t));
  long a[3], b[3], s3[3];
  for (int i = 0; i < nd; i++) { a[i] = sz[i]; b[i] = sub[i]; s3[i] = st[i]; }
  char *sa = list_str(a, nd), *sb = list_str(b, nd), *ss = list_str(s3, nd);
  dt_t r = dt_wrap(t, 1, xsprintf("subarray([%s],[%s],[%s],%s,%s)", sa, sb, ss,
                                  order == MPI_ORDER_C ? "C" : "F", c.desc));
  r = pin(r, 0, prod * c.ext);
  free(sa); free(sb); free(ss);
  dt_free(&c);
  return r;
}

/* Pick a distribution for one dimension of psize processes such that every process gets at
 * least one element; returns the global size (at least minimal, budget permitting). */
static int darray_dim(rng_t *r, int p, int *distrib, int *darg)
{
  if (p == 1 && rpct(r, 40)) {
    *distrib = MPI_DISTRIBUTE_NONE;
    *darg = MPI_DISTRIBUTE_DFLT_DARG;
    return (int)rint_(r, 1, 4);
  }
  int k = (int)rint_(r, 1, 3), dflt = rpct(r, 50);
  *darg = dflt ? MPI_DISTRIBUTE_DFLT_DARG : k;
  if (rpct(r, 50)) {
    *distrib = MPI_DISTRIBUTE_BLOCK;
    if (dflt) return p * (int)rint_(r, 1, 3);
    return (int)rint_(r, (p - 1) * k + 1, p * k);
  }
  *distrib = MPI_DISTRIBUTE_CYCLIC;
  if (dflt) k = 1;
  return (int)rint_(r, (p - 1) * k + 1, p * k + 2 * k);
}

/* darray of 'size' processes seen from 'rank', over element type c (lower bound made 0). */
static dt_t g_darray_for(rng_t *r, dt_t c, int size, int rank, MPI_Aint budget)
{
  c = shift0(c);
  int nd = 1, ps[3] = {1, 1, 1}, gs[3] = {1, 1, 1}, dist[3] = {0}, darg[3] = {0};
  for (int attempt = 0; attempt < 8; attempt++) {
    nd = (int)rint_(r, 1, attempt < 4 ? 3 : 1);
    ps[0] = ps[1] = ps[2] = 1;
    int rem = size;
    for (int f = 2; rem > 1;) {      /* spread prime factors of size over the dimensions */
      if (rem % f) { f++; continue; }
      ps[rint_(r, 0, nd - 1)] *= f;
      rem /= f;
    }
    long prod = 1;
    for (int i = 0; i < nd; i++) prod *= gs[i] = darray_dim(r, ps[i], &dist[i], &darg[i]);
    if (prod * c.ext <= budget) break;
  }
  int order = rpct(r, 50) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
  MPI_Datatype t;
  CHK(MPI_Type_create_darray(size, rank, nd, gs, dist, darg, ps, order, c.t, &t));
  long a[3] = {0}, d3[3] = {0}, p3[3] = {0};
  char dn[4] = "";
  for (int i = 0; i < nd; i++) {
    a[i] = gs[i];
    dn[i] = dist[i] == MPI_DISTRIBUTE_BLOCK ? 'B' : dist[i] == MPI_DISTRIBUTE_CYCLIC ? 'C' : 'N';
    d3[i] = darg[i] == MPI_DISTRIBUTE_DFLT_DARG ? -1 : darg[i];
    p3[i] = ps[i];
  }
  dn[nd] = 0;
  char *sa = list_str(a, nd), *sd = list_str(d3, nd), *sp = list_str(p3, nd);
  dt_t res = dt_wrap(t, 1, xsprintf("darray(%d,%d,[%s],%s,[%s],[%s],%s,%s)", size, rank, sa,
                                    dn, sd, sp, order == MPI_ORDER_C ? "C" : "F", c.desc));
  long prod = 1;
  for (int i = 0; i < nd; i++) prod *= gs[i];
  res = pin(res, 0, prod * c.ext);
  free(sa); free(sd); free(sp);
  dt_free(&c);
  return res;
}

static dt_t g_dup(dt_t c)
{
  MPI_Datatype t;
  CHK(MPI_Type_dup(c.t, &t));
  dt_t r = dt_wrap(t, 1, xsprintf("dup(%s)", c.desc));
  dt_free(&c);
  return r;
}

/* MPICH 4.0's ROMIO flattens resized(T, lb, extent) with lb != 0 and a noncontiguous T as if
 * T's data were shifted by lb (checked against MPI_Unpack: resized(indexed_block(2,1,[1,3],
 * 7 bytes),7,21) read from a contiguous file lands 7 bytes off), in memory types and file
 * views alike. Under MPICH every resized type therefore keeps lb = 0; nonzero lower bounds
 * still come from displacements (indexed, hindexed, struct, negative strides). */
static dt_t g_resized(const gen_t *g, dt_t c)
{
  MPI_Aint e = c.ext, lb, ext;
  if (g->mem) lb = c.tlb - rint_(g->r, 0, 2 * e);
  else lb = rpct(g->r, 50) ? c.tlb : c.tlb - rint_(g->r, 0, c.tlb + e / 2);
  if (q_romio) {
    if (c.tlb < 0) return g_dup(c);
    lb = 0;
  }
  ext = dt_tub(&c) - lb + rint_(g->r, 0, e);
  MPI_Datatype t;
  CHK(MPI_Type_create_resized(c.t, lb, ext, &t));
  dt_t r = dt_wrap(t, 1, xsprintf("resized(%s,%ld,%ld)", c.desc, (long)lb, (long)ext));
  dt_free(&c);
  return r;
}


/* Check the generator's invariants through the host MPI's own bounds. */
static void check_inv(const gen_t *g, const dt_t *d)
{
  if (d->size <= 0) DIE("generated empty type %s", d->desc);
  if (g->overlap) return;
  if (d->ext <= 0 || d->tlb < d->lb || dt_tub(d) > d->lb + d->ext)
    DIE("generated type with data outside its bounds: %s (lb %ld ext %ld tlb %ld text %ld)",
        d->desc, (long)d->lb, (long)d->ext, (long)d->tlb, (long)d->text);
  if (!g->mem && d->tlb < 0) DIE("file type with negative displacement: %s", d->desc);
}

dt_t gen(const gen_t *g, int depth, MPI_Aint budget)
{
  if (depth <= 0 || budget < 4 * g->unit->ext || rpct(g->r, 15)) return leaf(g);
  static const int w[] = {6, 8, 8, 8, 8, 6, 6, 10, 8, 8, 8, 3};
  int k = rweighted(g->r, w, (int)(sizeof w / sizeof *w));
  dt_t r;
  if (k == 7) {
    r = g_struct(g, depth, budget);
  } else if (k == 9) {   /* darray of a random process grid, from a random rank's view */
    dt_t c = gen(g, depth - 1, budget / 8);
    int size = (int)rint_(g->r, 1, 4);
    r = g_darray_for(g->r, c, size, (int)rint_(g->r, 0, size - 1), budget);
  } else {
    dt_t c = gen(g, depth - 1, budget / 3);
    switch (k) {
    case 0: r = g_contig(g, c, budget); break;
    case 1: r = g_vector(g, c, budget, 0); break;
    case 2: r = g_vector(g, c, budget, 1); break;
    case 3: case 4: case 5: case 6: r = g_indexed(g, c, budget, k - 3); break;
    case 8: r = g_subarray(g, c, budget); break;
    case 10: r = g_resized(g, c); break;
    default: r = g_dup(c); break;
    }
  }
  check_inv(g, &r);
  return r;
}

/* ------------------------------------------------------------------------------------------ */
/* The file, the view, and logging of results. */

state_t F;

const char *errname(int rc)
{
  static const struct { int c; const char *n; } t[] = {
    {MPI_SUCCESS, "SUCCESS"}, {MPI_ERR_ARG, "ERR_ARG"}, {MPI_ERR_TYPE, "ERR_TYPE"},
    {MPI_ERR_COUNT, "ERR_COUNT"}, {MPI_ERR_FILE, "ERR_FILE"}, {MPI_ERR_IO, "ERR_IO"},
    {MPI_ERR_AMODE, "ERR_AMODE"}, {MPI_ERR_ACCESS, "ERR_ACCESS"},
    {MPI_ERR_NO_SUCH_FILE, "ERR_NO_SUCH_FILE"}, {MPI_ERR_UNSUPPORTED_OPERATION, "ERR_UNSUPP_OP"},
    {MPI_ERR_UNSUPPORTED_DATAREP, "ERR_UNSUPP_DATAREP"}, {MPI_ERR_READ_ONLY, "ERR_READ_ONLY"},
    {MPI_ERR_NO_SPACE, "ERR_NO_SPACE"}, {MPI_ERR_BAD_FILE, "ERR_BAD_FILE"},
    {MPI_ERR_NOT_SAME, "ERR_NOT_SAME"}, {MPI_ERR_REQUEST, "ERR_REQUEST"},
    {MPI_ERR_OTHER, "ERR_OTHER"}, {MPI_ERR_INTERN, "ERR_INTERN"},
  };
  if (rc == MPI_SUCCESS) return "SUCCESS";
  int cls = rc;
  MPI_Error_class(rc, &cls);
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (t[i].c == cls) return t[i].n;
  return "ERR_UNKNOWN";
}

uint64_t fnv(const unsigned char *p, size_t n)
{
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
  return h;
}

static void log_count(const char *what, int v)
{
  if (v == MPI_UNDEFINED) logf_(" %s=UNDEF", what);
  else logf_(" %s=%d", what, v);
}

/* Counts of a completed data access, through the host MPI's status queries. Elements are
 * asked only for whole etypes: for a partial basic element Open MPI answers MPI_UNDEFINED and
 * MPICH a rounded count (host behaviour, not MPI-IO), and MPICH 4.0's MPI_Get_elements
 * asserts (get_elements_x.c:268) on types that combine darray with struct (a heterogeneous
 * etype, or a struct around the darray): not asked for types with a darray. */
void log_status(int rc, MPI_Status *st, const dt_t *mt, MPI_Count esize)
{
  logf_(" -> %s", errname(rc));
  if (rc != MPI_SUCCESS) return;
  int c, e, b;
  MPI_Count ex;
  CHK(MPI_Get_count(st, MPI_BYTE, &b));   /* both hosts keep a byte count in the status */
  CHK(MPI_Get_count(st, mt->t, &c));
  log_count("count", c);
  if (b != MPI_UNDEFINED && b % esize == 0 && !strstr(mt->desc, "darray")) {
    CHK(MPI_Get_elements(st, mt->t, &e));
    CHK(MPI_Get_elements_x(st, mt->t, &ex));
    log_count("elements", e);
    if (ex == MPI_UNDEFINED) logf_(" elements_x=UNDEF");
    else logf_(" elements_x=%lld", (long long)ex);
  }
  log_count("bytes", b);
}

/* The pre-fill pattern: byte i of the fresh file. */
unsigned char pattern(uint64_t i)
{
  return (unsigned char)(mix64((i >> 3) ^ (O.seed * 0x100000001b3ULL)) >> ((i & 7) * 8));
}

void prefill(long size)
{
  if (me == 0) {
    unlink(O.file);
    int fd = open(O.file, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) DIE("cannot create %s: %s", O.file, strerror(errno));
    unsigned char *b = malloc((size_t)size + 1);
    for (long i = 0; i < size; i++) b[i] = pattern((uint64_t)i);
    if (write(fd, b, (size_t)size) != (ssize_t)size) DIE("prefill write failed");
    close(fd);
    free(b);
  }
  CHK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Random hints, the same on all ranks. Keys are the reserved ones and ROMIO's; each
 * implementation may ignore them, but the bytes must not change. */
char hints_desc[512];

void set_hint(MPI_Info info, const char *k, const char *v)
{
  CHK(MPI_Info_set(info, k, v));
  size_t l = strlen(hints_desc);
  snprintf(hints_desc + l, sizeof hints_desc - l, "%s%s=%s", l ? "," : "", k, v);
}

/* cb_buffer_size and cb_nodes only at open: MPICH 4.0's ROMIO sizes its collective buffer at
 * open and overruns the user buffer when set_view raises cb_buffer_size (4096 -> 65536). */
static MPI_Info random_info(int at_open)
{
  MPI_Info info;
  CHK(MPI_Info_create(&info));
  hints_desc[0] = 0;
  static const char *cbbuf[] = {"256", "4096", "65536"};
  static const char *ed[] = {"enable", "disable", "automatic"};
  static const char *sz[] = {"64", "512", "8192"};
  if (rpct(&S, 40) && at_open) {
    const char *v = cbbuf[rint_(&S, 0, 2)];
    set_hint(info, "cb_buffer_size", v);
  }
  if (rpct(&S, 30) && at_open) {
    char v[16];
    snprintf(v, sizeof v, "%ld", rint_(&S, 1, np));
    set_hint(info, "cb_nodes", v);
  }
  if (rpct(&S, 40)) set_hint(info, "romio_cb_write", ed[rint_(&S, 0, 2)]);
  if (rpct(&S, 40)) set_hint(info, "romio_cb_read", ed[rint_(&S, 0, 2)]);
  if (rpct(&S, 30)) set_hint(info, "romio_ds_write", ed[rint_(&S, 0, 2)]);
  if (rpct(&S, 30)) set_hint(info, "romio_ds_read", ed[rint_(&S, 0, 2)]);
  if (rpct(&S, 20)) set_hint(info, "ind_wr_buffer_size", sz[rint_(&S, 0, 2)]);
  if (rpct(&S, 20)) set_hint(info, "ind_rd_buffer_size", sz[rint_(&S, 0, 2)]);
  return info;
}

static void file_open(void) { file_open_with(random_info(1)); }

/* Open (info is freed) and log; the default view. */
void file_open_with(MPI_Info info)
{
  int rc = MPI_File_open(MPI_COMM_WORLD, O.file, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &F.fh);
  CHK(MPI_Info_free(&info));
  logf_("open hints={%s} -> %s\n", hints_desc, errname(rc));
  if (rc != MPI_SUCCESS) DIE("MPI_File_open(%s) failed: %s", O.file, errname(rc));
  F.open = 1;
  F.atomic = 0;
  /* default view: bytes, whole file, identical on all ranks, so read-only until set_view */
  F.disp = 0;
  F.writable = 0;
  F.per_ft = 1;
  F.maxpos = O.max_file;
  model_view(MPI_BYTE, &F.ftype);
  int amode;
  CHK(MPI_File_get_amode(F.fh, &amode));
  logf_("get_amode ok=%d\n", amode == (MPI_MODE_RDWR | MPI_MODE_CREATE));
}

/* sync-barrier-sync: makes every rank's writes visible to every rank (MPI consistency rules). */
void sync_point(const char *why)
{
  model_merge();
  int r1 = MPI_File_sync(F.fh);
  CHK(MPI_Barrier(MPI_COMM_WORLD));
  int r2 = MPI_File_sync(F.fh);
  logf_("sync_point(%s) -> %s %s\n", why, errname(r1), errname(r2));
  F.dirty = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Views. */

dt_t make_etype(int maxk)
{
  /* the etype with a hole: ROMIO mishandles it inside most derived types, Open MPI only */
  int k = (int)rint_(&S, 0, q_romio && maxk > 5 ? 5 : maxk);
  MPI_Datatype t, s;
  switch (k) {
  case 0: return dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  case 1: return dt_wrap(MPI_INT, 0, xsprintf("INT"));
  case 2: return dt_wrap(MPI_DOUBLE, 0, xsprintf("DOUBLE"));
  case 3: {
    int n = (int)rint_(&S, 2, 3);
    CHK(MPI_Type_contiguous(n, MPI_INT, &t));
    CHK(MPI_Type_commit(&t));
    return dt_wrap(t, 1, xsprintf("contig(%d,INT)", n));
  }
  case 4: case 5: {
    /* {int@0, double@4} and {char@0, short@1, int@3}: packed to 12 and 7 bytes with resized,
     * except under MPICH, where resized types are kept out of anything indexed (see
     * romio_marker_free) and the etype is everywhere: there the natural, padded extent (16, 8;
     * the same in both MPIs) */
    int bl[3] = {1, 1, 1};
    MPI_Aint d4[2] = {0, 4}, d5[3] = {0, 1, 3};
    MPI_Datatype t4[2] = {MPI_INT, MPI_DOUBLE}, t5[3] = {MPI_CHAR, MPI_SHORT, MPI_INT};
    if (k == 4) CHK(MPI_Type_create_struct(2, bl, d4, t4, &s));
    else CHK(MPI_Type_create_struct(3, bl, d5, t5, &s));
    if (q_romio) {
      t = s;
    } else {
      CHK(MPI_Type_create_resized(s, 0, k == 4 ? 12 : 7, &t));
      CHK(MPI_Type_free(&s));
    }
    CHK(MPI_Type_commit(&t));
    dt_t r = dt_wrap(t, 1, NULL);
    r.desc = xsprintf(k == 4 ? "struct{int@0,double@4}/%ld" : "struct{char@0,short@1,int@3}/%ld",
                      (long)r.ext);
    return r;
  }
  default: {  /* an etype with a hole: {int@0, int@8}, extent 12, size 8 */
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {0, 8};
    MPI_Datatype ts[2] = {MPI_INT, MPI_INT};
    CHK(MPI_Type_create_struct(2, bl, d, ts, &s));
    CHK(MPI_Type_create_resized(s, 0, 12, &t));
    CHK(MPI_Type_free(&s));
    CHK(MPI_Type_commit(&t));
    return dt_wrap(t, 1, xsprintf("struct{int@0,int@8}/12"));
  }
  }
}

/* Rank r's slot wrapper: tile T (data in [0, E)) placed at r*E of a P*E filetype extent, or
 * a subarray/darray of such slots owned by r. All ranks' filetypes are then disjoint. */
static dt_t wrap_for_rank(dt_t T, MPI_Aint E, int how, int *disp_shift)
{
  MPI_Datatype t, x;
  *disp_shift = 0;
  if (how == 0) {          /* hindexed/struct at r*E then resized to P*E, lb varied */
    MPI_Aint d = (MPI_Aint)me * E;
    int one = 1;
    if (rpct(&S, 50)) CHK(MPI_Type_create_struct(1, &one, &d, &T.t, &x));
    else CHK(MPI_Type_create_hindexed(1, &one, &d, T.t, &x));
    long lbc = rint_(&S, 0, 2);
    MPI_Aint lb = lbc == 0 ? 0 : lbc == 1 ? d + T.tlb : -(MPI_Aint)rint_(&S, 1, 64);
    if (q_romio) lb = 0;      /* see g_resized */
    CHK(MPI_Type_create_resized(x, lb, (MPI_Aint)np * E, &t));
    CHK(MPI_Type_free(&x));
    dt_t r = dt_wrap(t, 1, xsprintf("resized(at(%ld,%s),%ld,%ld)", (long)d, T.desc, (long)lb,
                                    (long)np * (long)E));
    dt_free(&T);
    return r;
  }
  if (how == 1) {          /* same tile, displacement shifted per rank */
    *disp_shift = 1;
    CHK(MPI_Type_create_resized(T.t, 0, (MPI_Aint)np * E, &t));
    dt_t r = dt_wrap(t, 1, xsprintf("resized(%s,0,%ld)", T.desc, (long)np * (long)E));
    dt_free(&T);
    return r;
  }
  /* element X = T resized to the slot size E */
  CHK(MPI_Type_create_resized(T.t, 0, E, &x));
  dt_t X = dt_wrap(x, 1, xsprintf("resized(%s,0,%ld)", T.desc, (long)E));
  dt_free(&T);
  if (how == 2) {          /* subarray: 1-D run of m slots or a 2-D column block */
    int nd = rpct(&S, 50) ? 1 : 2, m = (int)rint_(&S, 1, 3), a = (int)rint_(&S, 1, 3);
    int sz[2], sub[2], st[2];
    if (nd == 1) { sz[0] = np * m; sub[0] = m; st[0] = me * m; }
    else { sz[0] = a; sz[1] = np * m; sub[0] = a; sub[1] = m; st[0] = 0; st[1] = me * m; }
    CHK(MPI_Type_create_subarray(nd, sz, sub, st, MPI_ORDER_C, X.t, &t));
    long prod = nd == 1 ? sz[0] : (long)sz[0] * sz[1];
    dt_t r = dt_wrap(t, 1, xsprintf("subarray(%d,[%d,%d],[%d,%d],[%d,%d],C,%s)", nd, sz[0],
                                    nd > 1 ? sz[1] : 0, sub[0], nd > 1 ? sub[1] : 0, st[0],
                                    nd > 1 ? st[1] : 0, X.desc));
    r = pin(r, 0, prod * E);
    dt_free(&X);
    return r;
  }
  return g_darray_for(&S, X, np, me, O.max_file / 3);   /* darray over all ranks: a partition */
}

void log_view(const char *how)
{
  logf_("set_view(%s) disp=%lld etype=%s ftype=%s size=%lld lb=%ld ext=%ld tlb=%ld text=%ld",
        how, (long long)F.disp, F.etype.desc, F.ftype.desc, (long long)F.ftype.size,
        (long)F.ftype.lb, (long)F.ftype.ext, (long)F.ftype.tlb, (long)F.ftype.text);
}

void finish_view(int rc)
{
  logf_(" -> %s\n", errname(rc));
  if (rc != MPI_SUCCESS) DIE("set_view failed");
  F.per_ft = (long)(F.ftype.size / F.etype.size);
  MPI_Offset room = O.max_file - F.disp;
  long tiles = room > 0 ? (long)(room / F.ftype.ext) : 0;
  if (tiles < 1) tiles = 1;
  F.maxpos = tiles * F.per_ft;
  model_view(F.ftype.t, &F.ftype);
  /* the view keeps what it needs: freeing the filetype right away is legal */
  if (rpct(&S, 50) && F.ftype.owned) {   /* keep bounds and description, free the handle */
    CHK(MPI_Type_free(&F.ftype.t));
    F.ftype.owned = 0;
  }
}

void free_view(void)
{
  dt_free(&F.ftype);
  dt_free(&F.etype);
}

static void op_set_view(void)
{
  if (F.dirty) sync_point("view");
  free_view();
  F.etype = make_etype(6);
  F.disp = rint_(&S, 0, 1024);
  int shared = rpct(&S, 15);
  int depth = (int)rint_(&S, 0, 3);
  MPI_Aint budget = rint_(&S, 64, 1536);
  rng_t *tr = shared || rpct(&S, 50) ? &S : &R;     /* one tile for all, or one per rank */
  gen_t g = {tr, &F.etype, 0, 0};
  dt_t T;
  if (shared) {     /* identical views everywhere: overlapping, so this epoch only reads */
    F.ftype = gen(&g, depth, budget);
    F.writable = 0;
  } else {
    T = gen(&g, depth, budget);
    long ub = (long)dt_tub(&T), E;
    CHK(MPI_Allreduce(&ub, &E, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
    E += rint_(&S, 0, 16);
    int how = (int)rint_(&S, 0, 3), shift;
    F.ftype = wrap_for_rank(T, E, how, &shift);
    if (shift) F.disp += (MPI_Offset)me * E;
    F.writable = 1;
  }
  CHK(MPI_Type_commit(&F.ftype.t));
  MPI_Info info = random_info(0);
  log_view(shared ? "shared" : "disjoint");
  logf_(" hints={%s}", hints_desc);
  int rc = MPI_File_set_view(F.fh, F.disp, F.etype.t, F.ftype.t, "native", info);
  CHK(MPI_Info_free(&info));
  finish_view(rc);
}

/* ------------------------------------------------------------------------------------------ */
/* Data accesses. */

/* A random memory type and count moving about 'want' etypes (possibly 0). */
mbuf_t make_mbuf(long want, int for_write)
{
  mbuf_t m;
  gen_t g = {&R, &F.etype, 1, for_write};
  if (rpct(&R, 30)) m.mt = leaf(&g);
  else m.mt = gen(&g, (int)rint_(&R, 1, 3), rint_(&R, 64, 2048));
  CHK(MPI_Type_commit(&m.mt.t));
  long per = (long)(m.mt.size / F.etype.size);
  m.count = (int)(want / per);
  if (m.count == 0 && want > 0 && !for_write && rpct(&R, 70)) m.count = 1;
  if (m.count > 1 && (long)m.count * m.mt.ext > (1L << 20)) m.count = (int)((1L << 20) / m.mt.ext) + 1;
  mbuf_alloc(&m, for_write);
  return m;
}

/* The buffer of m->count copies of m->mt, with guards: random bytes to write, or a fill
 * pattern that reads must leave alone outside the data. */
void mbuf_alloc(mbuf_t *m0, int for_write)
{
  mbuf_t m = *m0;
  /* span of count copies: [tlb, (count-1)*ext + tub), extents are positive here */
  MPI_Aint lo = m.mt.tlb, hi = m.count ? (MPI_Aint)(m.count - 1) * m.mt.ext + dt_tub(&m.mt) : lo;
  if (m.mt.ext < 0) DIE("negative extent memory type");
  m.alen = (size_t)(hi - lo) + 2 * GUARD;
  m.alloc = malloc(m.alen);
  if (!m.alloc) DIE("out of memory");
  m.buf = m.alloc + GUARD - lo;
  if (for_write) for (size_t i = 0; i < m.alen; i++) m.alloc[i] = (unsigned char)rnext(&R);
  else for (size_t i = 0; i < m.alen; i++) m.alloc[i] = (unsigned char)(0xA5 ^ (i * 7));
  *m0 = m;
}

void free_mbuf(mbuf_t *m)
{
  free(m->alloc);
  dt_free(&m->mt);
}

/* ------------------------------------------------------------------------------------------ */
/* The model (--model): what every read must return and what the file must hold, computed with
 * the host MPI's datatype engine (MPI_Pack/MPI_Unpack) and no MPI-IO at all. It is the
 * referee when the two natives disagree; mismatches go to stderr, not to the log. */

model_t M;

static void model_fail(const char *fmt, ...)
{
  va_list ap;
  if (M.bad++ < 20) {
    fprintf(stderr, "difftest[%d]: MODEL MISMATCH at op #%ld: ", me, cur_op);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
  }
}

static void model_init(long size0)
{
  if (!M.on) return;
  M.cap = O.max_file + 4096;        /* writes never pass the end of file, which stays below */
  M.img = calloc((size_t)M.cap, 1);
  M.mine = calloc((size_t)M.cap, 1);
  if (!M.img || !M.mine) DIE("out of memory");
  for (long i = 0; i < size0; i++) M.img[i] = pattern((uint64_t)i);
  M.size = size0;
}

/* Flatten the filetype with the datatype engine (always: EOF decisions use it too): unpack the packed byte index (3 planes of
 * 8 bits) and a presence mask through the filetype, then read the positions back. */
void model_view(MPI_Datatype ft, const dt_t *d)
{
  long n = (long)d->size, span = (long)d->text;
  free(M.map);
  M.map = malloc(sizeof(long) * (size_t)n);
  M.mapn = n;
  M.ftext = d->ext;
  unsigned char *src = malloc((size_t)n), *pl[4];
  for (int p = 0; p < 4; p++) {
    pl[p] = calloc((size_t)span, 1);
    for (long i = 0; i < n; i++) src[i] = p == 3 ? 1 : (unsigned char)(i >> (8 * p));
    int pos = 0;
    CHK(MPI_Unpack(src, (int)n, &pos, pl[p] - d->tlb, 1, ft, MPI_COMM_SELF));
  }
  long seen = 0;
  for (long j = 0; j < span; j++) {
    if (!pl[3][j]) continue;
    long idx = pl[0][j] | (long)pl[1][j] << 8 | (long)pl[2][j] << 16;
    if (idx < n) { M.map[idx] = d->tlb + j; seen++; }
  }
  if (seen != n) DIE("model: filetype %s flattens to %ld of %ld bytes", d->desc, seen, n);
  for (int p = 0; p < 4; p++) free(pl[p]);
  free(src);
}

/* File offset of view data byte vb. */
static long model_pos(long vb)
{
  return (long)F.disp + (vb / M.mapn) * (long)M.ftext + M.map[vb % M.mapn];
}

unsigned char *pack_all(const mbuf_t *m, int *len)
{
  *len = (int)(m->count * m->mt.size);
  unsigned char *p = malloc((size_t)*len + 1);
  int pos = 0;
  CHK(MPI_Pack(m->buf, m->count, m->mt.t, p, *len, &pos, MPI_COMM_SELF));
  return p;
}

static void model_write(MPI_Offset off, const mbuf_t *m, int rc, int bytes)
{
  if (!M.on || rc != MPI_SUCCESS) return;
  int len;
  unsigned char *d = pack_all(m, &len);
  if (bytes != len) model_fail("write at %lld: %d bytes reported, %d given", (long long)off, bytes, len);
  for (long i = 0; i < len; i++) {
    long fb = model_pos((long)off * (long)F.etype.size + i);
    if (fb < 0 || fb >= M.cap) DIE("model: write outside the image (%ld)", fb);
    M.img[fb] = d[i];
    M.mine[fb] = 1;
    if (fb >= F.size) DIE("test bug: write reaches %ld, past end of file %lld", fb, (long long)F.size);
    if (fb + 1 > M.size) M.size = fb + 1;
  }
  free(d);
}

/* Check a completed read: count up to end of file, data, and untouched holes. */
static void model_read(MPI_Offset off, const mbuf_t *m, int rc, int bytes,
                       const unsigned char *packed, const unsigned char *mask)
{
  if (!M.on || rc != MPI_SUCCESS) return;
  long len = (long)(m->count * m->mt.size), want = 0;
  while (want < len && model_pos((long)off * (long)F.etype.size + want) < M.size) want++;
  if (bytes != want)
    model_fail("read at %lld: %d bytes read, model says %ld (file size %ld)", (long long)off,
               bytes, want, M.size);
  for (long i = 0; i < want && i < bytes; i++) {
    long fb = model_pos((long)off * (long)F.etype.size + i);
    if (packed[i] != M.img[fb]) {
      model_fail("read at %lld: data byte %ld (file offset %ld) is %d, model says %d",
                 (long long)off, i, fb, packed[i], M.img[fb]);
      break;
    }
  }
  for (size_t i = 0; i < m->alen; i++)
    if (mask[i] == 0xff && m->alloc[i] != (unsigned char)(0xA5 ^ (i * 7))) {
      model_fail("read at %lld: memory byte %ld outside the data was changed",
                 (long long)off, (long)i - (long)((unsigned char *)m->buf - m->alloc));
      break;
    }
}

/* At a sync point every rank learns the others' writes (disjoint, so OR merges them). */
void model_merge(void)
{
  if (!M.on) return;
  unsigned char *t = malloc((size_t)M.cap);
  for (long i = 0; i < M.cap; i++) t[i] = M.mine[i] ? M.img[i] : 0;
  CHK(MPI_Allreduce(MPI_IN_PLACE, t, (int)M.cap, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD));
  CHK(MPI_Allreduce(MPI_IN_PLACE, M.mine, (int)M.cap, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD));
  for (long i = 0; i < M.cap; i++) if (M.mine[i]) M.img[i] = t[i];
  memset(M.mine, 0, (size_t)M.cap);
  CHK(MPI_Allreduce(MPI_IN_PLACE, &M.size, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
  free(t);
}

static void model_resize(long size, int truncate)
{
  if (!M.on) return;
  if (truncate) {
    if (size < M.size) memset(M.img + size, 0, (size_t)(M.size - size));
    M.size = size;
  } else if (size > M.size) {
    M.size = size;
  }
}

static void model_byte_offset(MPI_Offset pos, MPI_Offset byte, int rc)
{
  if (!M.on || rc != MPI_SUCCESS) return;
  long want = model_pos((long)pos * (long)F.etype.size);
  if (want != byte) model_fail("get_byte_offset(%lld) = %lld, model says %ld", (long long)pos,
                               (long long)byte, want);
}

unsigned char *slurp(const char *path, long *n)
{
  FILE *f = fopen(path, "rb");
  if (!f) DIE("cannot reopen %s", path);
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  rewind(f);
  unsigned char *b = malloc((size_t)*n + 1);
  if (!b || fread(b, 1, (size_t)*n, f) != (size_t)*n) DIE("cannot read back %s", path);
  fclose(f);
  return b;
}

/* After every write step in model mode: sync, merge, and compare the file read with POSIX
 * calls, so that a wrong write is caught by the operation that made it. */
void model_check_file(const char *what)
{
  if (!M.on) return;
  int r1 = MPI_File_sync(F.fh);
  CHK(MPI_Barrier(MPI_COMM_WORLD));
  int r2 = MPI_File_sync(F.fh);
  (void)r1; (void)r2;
  model_merge();
  if (me == 0) {
    long n;
    unsigned char *b = slurp(O.file, &n);
    long bad = -1, nbad = 0;
    char ranges[256] = "";
    for (long i = 0; i < n && i < M.size; i++) {
      if (b[i] == M.img[i]) continue;
      if (bad < 0) bad = i;
      long j = i;
      while (j < n && j < M.size && b[j] != M.img[j]) j++;
      if (nbad++ < 6 && strlen(ranges) < 200)
        snprintf(ranges + strlen(ranges), sizeof ranges - strlen(ranges), " %ld+%ld", i, j - i);
      i = j;
    }
    if (n != M.size || bad >= 0)
      model_fail("after %s: file size %ld (model %ld), %ld wrong ranges:%s", what, n, M.size,
                 nbad, ranges);
    if (bad >= 0 && O.verbose) {
      for (long i = bad; i < bad + 24 && i < n; i++) fprintf(stderr, " %02x/%02x/%02x", b[i], M.img[i], pattern((uint64_t)i));
      fprintf(stderr, "  (file/model)\n");
    }
    free(b);
  }
  CHK(MPI_Barrier(MPI_COMM_WORLD));   /* nobody writes again before rank 0 has looked */
  F.dirty = 0;
}

/* Compare the file itself (rank 0, after close). */
static void model_final(const unsigned char *file, long n)
{
  if (!M.on) return;
  if (n != M.size) model_fail("final file size %ld, model says %ld", n, M.size);
  for (long i = 0; i < n && i < M.size; i++)
    if (file[i] != M.img[i]) {
      model_fail("final file byte %ld is %d, model says %d", i, file[i], M.img[i]);
      break;
    }
}

/* Writes never reach past the end of file: the bytes a write with holes leaves between the
 * old end of file and its data are not defined by the standard (ROMIO's data sieving fills
 * them with its buffer's garbage), so the file only grows through set_size and preallocate.
 * The view offset below which whole filetypes end before F.size: */
static long write_limit(void)
{
  long room = (long)(F.size - F.disp - dt_tub(&F.ftype));
  if (room < 0) return 0;
  return (room / (long)F.ftype.ext + 1) * F.per_ft;
}

/* Offset and etype count: writes below write_limit(), reads within the file budget and, if
 * past_eof, beyond. */
static void pick_range(rng_t *r, int write, int past_eof, MPI_Offset *off, long *n)
{
  long maxpos = write ? write_limit() : F.maxpos;
  if (past_eof) maxpos += maxpos / 2 + 2 * F.per_ft;
  if (maxpos <= 0) { *off = 0; *n = 0; return; }
  *off = rint_(r, 0, maxpos - 1);
  long room = maxpos - (long)*off, cap = 8192 / (long)F.etype.size + 1;
  if (room > cap) room = cap;
  *n = rpct(r, 5) ? 0 : rint_(r, 1, room);
}

const char *wnames[] = {"write", "write_at", "iwrite", "iwrite_at", "write_all",
                               "write_at_all", "iwrite_all", "iwrite_at_all",
                               "write_all_begin/end", "write_at_all_begin/end"};
const char *rnames[] = {"read", "read_at", "iread", "iread_at", "read_all",
                               "read_at_all", "iread_all", "iread_at_all",
                               "read_all_begin/end", "read_at_all_begin/end"};

/* Issue one access of the given variant; returns the error code, status filled. */
int do_access(int write, int v, MPI_Offset off, mbuf_t *m, MPI_Status *st)
{
  MPI_File fh = F.fh;
  MPI_Request rq;
  int rc;
  void *b = m->buf;
  MPI_Datatype t = m->mt.t;
  int c = m->count;
  switch (v) {
  case W_PTR: return write ? MPI_File_write(fh, b, c, t, st) : MPI_File_read(fh, b, c, t, st);
  case W_AT: return write ? MPI_File_write_at(fh, off, b, c, t, st)
                          : MPI_File_read_at(fh, off, b, c, t, st);
  case W_ALL: return write ? MPI_File_write_all(fh, b, c, t, st)
                           : MPI_File_read_all(fh, b, c, t, st);
  case W_AT_ALL: return write ? MPI_File_write_at_all(fh, off, b, c, t, st)
                              : MPI_File_read_at_all(fh, off, b, c, t, st);
  case W_BEGIN:
    rc = write ? MPI_File_write_all_begin(fh, b, c, t) : MPI_File_read_all_begin(fh, b, c, t);
    if (rc != MPI_SUCCESS) return rc;
    return write ? MPI_File_write_all_end(fh, b, st) : MPI_File_read_all_end(fh, b, st);
  case W_AT_BEGIN:
    rc = write ? MPI_File_write_at_all_begin(fh, off, b, c, t)
               : MPI_File_read_at_all_begin(fh, off, b, c, t);
    if (rc != MPI_SUCCESS) return rc;
    return write ? MPI_File_write_at_all_end(fh, b, st) : MPI_File_read_at_all_end(fh, b, st);
  case W_IPTR:
    rc = write ? MPI_File_iwrite(fh, b, c, t, &rq) : MPI_File_iread(fh, b, c, t, &rq);
    break;
  case W_IAT:
    rc = write ? MPI_File_iwrite_at(fh, off, b, c, t, &rq) : MPI_File_iread_at(fh, off, b, c, t, &rq);
    break;
  case W_IALL:
    rc = write ? MPI_File_iwrite_all(fh, b, c, t, &rq) : MPI_File_iread_all(fh, b, c, t, &rq);
    break;
  default:
    rc = write ? MPI_File_iwrite_at_all(fh, off, b, c, t, &rq)
               : MPI_File_iread_at_all(fh, off, b, c, t, &rq);
    break;
  }
  if (rc != MPI_SUCCESS) return rc;
  return MPI_Wait(&rq, st);
}

int uses_ptr(int v) { return v == W_PTR || v == W_IPTR || v == W_ALL || v == W_IALL || v == W_BEGIN; }

/* Does a read of n etypes at view offset off reach past end of file? Computed from the
 * flattened view and the known file size, without asking the implementation under test. */
int past_eof(MPI_Offset off, long n)
{
  if (n <= 0) return 0;
  return model_pos(((long)off + n) * (long)F.etype.size - 1) >= (long)F.size;
}


static int nonblocking(int v)
{
  return v == W_IPTR || v == W_IAT || v == W_IALL || v == W_IAT_ALL || v == W_BEGIN ||
         v == W_AT_BEGIN;
}

/* The blocking twin of a variant. */
static int blocking(int v)
{
  static const int b[] = {W_PTR, W_AT, W_PTR, W_AT, W_ALL, W_AT_ALL, W_ALL, W_AT_ALL, W_ALL,
                          W_AT_ALL};
  return b[v];
}

/* Contiguous as ROMIO sees it, for sure: a predefined type or a contiguous derived etype. */
static int simple_contig(const dt_t *d)
{
  return predefined(d) || (d->desc && !strcmp(d->desc, "E") && dense(d) && d->lb == 0 &&
                           !strstr(F.etype.desc, "struct"));
}

/* Reads that reach end of file, where a native oracle is wrong (both checked with small
 * programs against the standard: a read past EOF completes with the count actually read):
 * - Open MPI 4.1's OMPIO never completes a nonblocking read (iread*, and the split
 *   collectives built on them) that reaches EOF: its aio progress re-issues the short read
 *   forever. Under Open MPI those reads use the blocking variant.
 * - OMPIO's collective reads report the full requested count past EOF: read_all through a
 *   noncontiguous view (same 5-int example: 20 bytes instead of 12), and at 3 or more ranks,
 *   where another aggregation is chosen, read_at_all too, even contiguous. Dropped.
 * - MPICH 4.0's ROMIO reports the full requested count for a read past EOF unless both the
 *   memory type and the file view are contiguous (e.g. 5 ints through a view of one int
 *   every 8 bytes on a 22-byte file: 20 bytes instead of 12), and leaves garbage for the
 *   missing part; its collective and nonblocking reads do so even when everything is
 *   contiguous. Under MPICH such reads are dropped (count 0 for collectives).
 * --portable applies both, so that both natives run the same sequence. Returns the variant
 * to use; *drop set when the rank must not read. */
int eof_quirks(int v, MPI_Offset off, const mbuf_t *m, int *drop)
{
  int coll = v >= W_ALL;
  *drop = 0;
  if ((!q_ompio && !q_romio) || O.eof_strict) return v;
  int past = past_eof(off, (long)(m->count * (m->mt.size / F.etype.size)));
  if (q_romio && past && (coll || nonblocking(v) ||
                          !(simple_contig(&m->mt) && simple_contig(&F.ftype))))
    *drop = 1;
  if (q_ompio && past && coll) *drop = 1;
  if (q_ompio && nonblocking(v)) {
    int any = past && !*drop;
    if (coll) CHK(MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD));
    if (any) v = blocking(v);
  }
  return v;
}

/* Checksums of what a read delivered: the first 'bytes' bytes of the data in type order
 * (the rest of a short read is unspecified), and every byte of the buffer outside the data
 * (holes of the memory type and guards), which must be untouched. */
void log_read_sums(const mbuf_t *m, int bytes, MPI_Offset off, int rc)
{
  int total = (int)(m->count * m->mt.size), pos = 0;
  unsigned char *packed = malloc((size_t)total + 1), *mask = malloc(m->alen);
  unsigned char *zeros = calloc((size_t)total + 1, 1);
  if (!packed || !mask || !zeros) DIE("out of memory");
  CHK(MPI_Pack(m->buf, m->count, m->mt.t, packed, total, &pos, MPI_COMM_SELF));
  memset(mask, 0xff, m->alen);
  pos = 0;
  CHK(MPI_Unpack(zeros, total, &pos, mask + ((unsigned char *)m->buf - m->alloc), m->count,
                 m->mt.t, MPI_COMM_SELF));
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < m->alen; i++)
    if (mask[i] == 0xff) { h ^= m->alloc[i]; h *= 1099511628211ULL; }
  model_read(off, m, rc, bytes, packed, mask);
  if (bytes < 0 || bytes > total) bytes = total;
  logf_(" data=%016llx holes=%016llx", (unsigned long long)fnv(packed, (size_t)bytes),
        (unsigned long long)h);
  free(packed);
  free(mask);
  free(zeros);
}

/* One rank's part of an access step: choose, log, run, log results. */
static void access_one(long opno, int write, int v, int beyond)
{
  MPI_Offset off;
  long n;
  pick_range(&R, write, beyond, &off, &n);
  if (uses_ptr(v)) {      /* individual pointer: move it into range first when needed */
    MPI_Offset pos;
    long limit = write ? write_limit() : F.maxpos;
    CHK(MPI_File_get_position(F.fh, &pos));
    if (pos >= limit || rpct(&R, 30)) {
      int rc = MPI_File_seek(F.fh, off, MPI_SEEK_SET);
      logf_("#%ld seek(SET,%lld) -> %s\n", opno, (long long)off, errname(rc));
    } else {
      off = pos;
      long room = limit - (long)pos;
      if (n > room) n = room;
      /* MPICH 4.0's ROMIO keeps the pointer as a byte offset; after a nonblocking access
       * through a view with holes it can sit before the next etype's data, and the next
       * access then starts there (a write_all wrote 26 bytes over a hole and another rank's
       * data). Setting the pointer to where it already is avoids that under MPICH. */
      if (q_romio) CHK(MPI_File_seek(F.fh, pos, MPI_SEEK_SET));
    }
  }
  mbuf_t m = make_mbuf(n, write);
  access_run(opno, write, v, off, &m);
  free_mbuf(&m);
}

/* Run one access of variant v at view offset off with buffer m (the individual pointer, for
 * the variants that use it, already at off) and log it; returns the bytes moved (-1: dropped
 * or failed). Reads where the native MPI-IO is wrong are dropped (count 0 for collectives). */
int access_run(long opno, int write, int v, MPI_Offset off, mbuf_t *mp)
{
  mbuf_t m = *mp;
  int drop = 0;
  if (!write) v = eof_quirks(v, off, &m, &drop);
  if (drop && v < W_ALL) {
    logf_("#%ld %s off=%lld dropped: past EOF\n", opno, rnames[v], (long long)off);
    return -1;
  }
  if (drop) m.count = 0;
  logf_("#%ld %s off=%lld count=%d mem=%s", opno, (write ? wnames : rnames)[v], (long long)off,
        m.count, m.mt.desc);
  MPI_Status st;
  int rc = do_access(write, v, off, &m, &st);
  log_status(rc, &st, &m.mt, F.etype.size);
  int b = -1;
  if (rc == MPI_SUCCESS) CHK(MPI_Get_count(&st, MPI_BYTE, &b));
  if (write) model_write(off, &m, rc, b);
  else log_read_sums(&m, b, off, rc);
  MPI_Offset pos;
  long req = (long)(m.count * (m.mt.size / F.etype.size));
  if (!write && uses_ptr(v) && past_eof(off, req)) {
    /* Where the pointer ends after a read cut short by EOF is read differently by the natives:
     * ROMIO's blocking reads advance it by what was read, OMPIO's and ROMIO's nonblocking
     * ones by what was requested ("the next etype after the last one that will be accessed"
     * can mean either). Not compared: put it at the requested end explicitly. */
    int rc2 = MPI_File_seek(F.fh, off + req, MPI_SEEK_SET);
    logf_(" pos=(reset: %s)\n", errname(rc2));
  } else if (F.ftype.size == 0) {
    /* A view with no data: OMPIO reports position 0 after any access through it, ROMIO (and
     * pario) the etype the pointer was left at. Not compared. */
    CHK(MPI_File_get_position(F.fh, &pos));
    logf_(" pos=(zero-size view)\n");
  } else {
    CHK(MPI_File_get_position(F.fh, &pos));
    logf_(" pos=%lld\n", (long long)pos);
  }
  mp->count = m.count;
  return b;
}

static void op_write_ind(long opno)
{
  if (!F.writable) return;
  CHK(MPI_Barrier(MPI_COMM_WORLD));     /* no rank is still reading what this step changes */
  int v = (int)rint_(&S, 0, 3);
  int concurrent = F.atomic && !O.turns;
  for (int r = 0; r < np; r++) {
    if (r == me || concurrent) {
      if (rpct(&R, 85)) access_one(opno, 1, v, 0);
      else logf_("#%ld %s skipped\n", opno, wnames[v]);
      if (concurrent) break;
    }
    CHK(MPI_Barrier(MPI_COMM_WORLD));   /* one rank at a time: see README (data sieving) */
  }
  if (concurrent) CHK(MPI_Barrier(MPI_COMM_WORLD));
  F.dirty = 1;
  model_check_file(wnames[v]);
}

static void op_write_coll(long opno)
{
  if (!F.writable) return;
  CHK(MPI_Barrier(MPI_COMM_WORLD));
  int v = (int)rint_(&S, 4, 9);
  access_one(opno, 1, v, 0);
  F.dirty = 1;
  model_check_file(wnames[v]);
}

static void op_read(long opno, int coll)
{
  if (F.dirty) sync_point("read");
  int v = coll ? (int)rint_(&S, 4, 9) : (int)rint_(&S, 0, 3);
  int past = rpct(&S, 20);
  if (!coll && !rpct(&R, 85)) { logf_("#%ld %s skipped\n", opno, rnames[v]); return; }
  access_one(opno, 0, v, past);
}

/* ------------------------------------------------------------------------------------------ */
/* Pointer, size, sync, atomicity, view queries, reopen. */

static void op_seek(long opno)
{
  int how = (int)rint_(&R, 0, 2), rc;
  MPI_Offset off = 0, pos = -1, byte = -1;
  const char *hn = how == 0 ? "SET" : how == 1 ? "CUR" : "END";
  if (how == 0) {
    off = rint_(&R, 0, F.maxpos);
    rc = MPI_File_seek(F.fh, off, MPI_SEEK_SET);
  } else if (how == 1) {
    CHK(MPI_File_get_position(F.fh, &pos));
    off = rint_(&R, -(long)pos, F.maxpos / 4);
    rc = MPI_File_seek(F.fh, off, MPI_SEEK_CUR);
  } else {
    if (F.dirty) {      /* the end of file depends on other ranks' writes */
      logf_("#%ld seek(END) skipped: unsynced\n", opno);
      return;
    }
    /* Open MPI 4.1's OMPIO adds the file size in bytes to the offset as if it were in etypes
     * of the view (seek(END,7) gives position 9 where the view's end is at 4953); MPICH
     * 4.0's ROMIO returns MPI_ERR_ARG when the file ends before the view's displacement.
     * Both corners are left out on the MPI concerned. */
    if (q_ompio || (q_romio && F.size <= F.disp)) {
      logf_("#%ld seek(END) skipped: native MPI-IO wrong here\n", opno);
      return;
    }
    off = rint_(&R, 0, 8);
    rc = MPI_File_seek(F.fh, off, MPI_SEEK_END);
  }
  int rp = MPI_File_get_position(F.fh, &pos);
  int rb = MPI_File_get_byte_offset(F.fh, pos, &byte);
  if (how != 2) model_byte_offset(pos, byte, rb);
  logf_("#%ld seek(%s,%lld) -> %s position=%lld (%s) byte_offset=%lld (%s)\n", opno, hn,
        (long long)off, errname(rc), (long long)pos, errname(rp), (long long)byte, errname(rb));
  /* a random view offset's byte offset too */
  MPI_Offset v = rint_(&R, 0, F.maxpos);
  rb = MPI_File_get_byte_offset(F.fh, v, &byte);
  model_byte_offset(v, byte, rb);
  logf_("#%ld get_byte_offset(%lld) = %lld -> %s\n", opno, (long long)v, (long long)byte,
        errname(rb));
}

/* The file grows: set_size to a larger size, then a new view of blocks of B bytes dealt out
 * to the ranks in turn from the old end of file, and a collective write that covers all of the
 * new region (what set_size adds holds undefined data, so it is written over at once). */
static void op_grow(long opno)
{
  long B = rint_(&S, 1, 64), nb = rint_(&S, 1, 8), add = nb * np * B;
  if (F.size + add > O.max_file) {
    MPI_Offset want = O.max_file - add;
    int rc = MPI_File_set_size(F.fh, want);
    logf_("#%ld set_size(%lld) -> %s\n", opno, (long long)want, errname(rc));
    if (rc == MPI_SUCCESS) { model_resize((long)want, 1); F.size = want; }
    sync_point("set_size");
  }
  MPI_Offset old = F.size;
  int rc = MPI_File_set_size(F.fh, old + add);
  logf_("#%ld set_size(%lld) -> %s\n", opno, (long long)(old + add), errname(rc));
  sync_point("set_size");
  free_view();
  F.etype = dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  F.disp = old;
  MPI_Aint d = (MPI_Aint)me * B;
  MPI_Datatype x, t;
  CHK(MPI_Type_create_hindexed_block(1, (int)B, &d, MPI_BYTE, &x));
  CHK(MPI_Type_create_resized(x, 0, (MPI_Aint)np * B, &t));
  CHK(MPI_Type_free(&x));
  CHK(MPI_Type_commit(&t));
  F.ftype = dt_wrap(t, 1, xsprintf("resized(hidxblk(1,%ld,[%ld],BYTE),0,%ld)", B, (long)d, np * B));
  F.writable = 1;
  MPI_Info info = random_info(0);
  log_view("grow");
  logf_(" hints={%s}", hints_desc);
  rc = MPI_File_set_view(F.fh, F.disp, F.etype.t, F.ftype.t, "native", info);
  CHK(MPI_Info_free(&info));
  finish_view(rc);
  mbuf_t m;
  m.mt = dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  m.count = (int)(nb * B);
  m.alen = (size_t)m.count + 2 * GUARD;
  m.alloc = malloc(m.alen);
  m.buf = m.alloc + GUARD;
  for (size_t i = 0; i < m.alen; i++) m.alloc[i] = (unsigned char)rnext(&R);
  MPI_Status st;
  logf_("#%ld write_at_all off=0 count=%d mem=BYTE", opno, m.count);
  rc = MPI_File_write_at_all(F.fh, 0, m.buf, m.count, MPI_BYTE, &st);
  log_status(rc, &st, &m.mt, 1);
  logf_("\n");
  int b = -1;
  if (rc == MPI_SUCCESS) CHK(MPI_Get_count(&st, MPI_BYTE, &b));
  F.size = old + add;
  model_resize((long)F.size, 0);
  model_write(0, &m, rc, b);
  free_mbuf(&m);
  F.dirty = 1;
  model_check_file("grow");
}

/* Sizes: get_size; set_size to shrink; preallocate, whose new region (undefined data too) is
 * cut off again once the size has been checked; growth (op_grow). */
static void op_size(long opno)
{
  static const int w[] = {35, 25, 20, 20};
  int what = rweighted(&S, w, 4), rc;
  MPI_Offset sz = -1;
  if (F.dirty || what) sync_point("size");   /* also: nobody still reads the old size */
  if (what == 1) {
    MPI_Offset want = rint_(&S, 0, F.size);
    rc = MPI_File_set_size(F.fh, want);
    logf_("#%ld set_size(%lld) -> %s\n", opno, (long long)want, errname(rc));
    if (rc == MPI_SUCCESS) { model_resize((long)want, 1); F.size = want; }
    sync_point("set_size");
  } else if (what == 2) {
    MPI_Offset want = rint_(&S, 0, O.max_file);
    /* Open MPI 4.1's OMPIO: preallocate to exactly the current size doubles the file, and
     * after a preallocate that grew it, set_size fails on all ranks but the first
     * (MPI_ERR_OTHER) and the next collective deadlocks: only sizes below the current one */
    if (q_ompio && want >= F.size) want = F.size > 0 ? F.size - 1 : 0;
    rc = MPI_File_preallocate(F.fh, want);
    logf_("#%ld preallocate(%lld) -> %s\n", opno, (long long)want, errname(rc));
    sync_point("preallocate");
    rc = MPI_File_get_size(F.fh, &sz);
    MPI_Offset expect = want > F.size ? want : F.size;
    logf_("#%ld get_size = %lld -> %s\n", opno, (long long)sz, errname(rc));
    if (M.on && rc == MPI_SUCCESS && sz != expect)
      model_fail("get_size after preallocate = %lld, model says %lld", (long long)sz,
                 (long long)expect);
    CHK(MPI_Barrier(MPI_COMM_WORLD));
    if (want > F.size) {
      rc = MPI_File_set_size(F.fh, F.size);
      logf_("#%ld set_size(%lld) -> %s\n", opno, (long long)F.size, errname(rc));
      sync_point("set_size");
    }
  } else if (what == 3) {
    op_grow(opno);
    return;
  }
  rc = MPI_File_get_size(F.fh, &sz);
  logf_("#%ld get_size = %lld -> %s\n", opno, (long long)sz, errname(rc));
  if (M.on && rc == MPI_SUCCESS && sz != M.size)
    model_fail("get_size = %lld, model says %ld", (long long)sz, M.size);
}

static void op_atomicity(long opno)
{
  int flag = rpct(&S, 50), got = -1;
  if (F.dirty) sync_point("atomicity");
  int rc = MPI_File_set_atomicity(F.fh, flag);
  int rg = MPI_File_get_atomicity(F.fh, &got);
  logf_("#%ld set_atomicity(%d) -> %s get=%d (%s)\n", opno, flag, errname(rc), got, errname(rg));
  if (rc == MPI_SUCCESS) F.atomic = flag;
}

static void op_sync(long opno)
{
  int rc = MPI_File_sync(F.fh);
  logf_("#%ld sync -> %s\n", opno, errname(rc));
}

static void describe_returned(const char *what, MPI_Datatype t)
{
  int ni, na, nd, comb;
  MPI_Aint lb, ext, tlb, text;
  MPI_Count sz;
  CHK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
  CHK(MPI_Type_get_extent(t, &lb, &ext));
  CHK(MPI_Type_get_true_extent(t, &tlb, &text));
  CHK(MPI_Type_size_x(t, &sz));
  logf_(" %s(size=%lld lb=%ld ext=%ld tlb=%ld text=%ld)", what, (long long)sz, (long)lb,
        (long)ext, (long)tlb, (long)text);
  if (comb != MPI_COMBINER_NAMED) CHK(MPI_Type_free(&t));
}

static void op_get_view(long opno)
{
  MPI_Offset disp;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING + 1];
  int rc = MPI_File_get_view(F.fh, &disp, &et, &ft, rep);
  logf_("#%ld get_view -> %s", opno, errname(rc));
  if (rc == MPI_SUCCESS) {
    logf_(" disp=%lld datarep=%s", (long long)disp, rep);
    describe_returned("etype", et);
    describe_returned("filetype", ft);
  }
  MPI_Aint ext;
  rc = MPI_File_get_type_extent(F.fh, F.etype.t, &ext);
  logf_(" type_extent(etype)=%ld (%s)\n", (long)ext, errname(rc));
}

static void op_reopen(long opno)
{
  if (F.dirty) sync_point("close");
  int rc = MPI_File_close(&F.fh);
  logf_("#%ld close -> %s null=%d\n", opno, errname(rc), F.fh == MPI_FILE_NULL);
  F.open = 0;
  free_view();
  F.etype = dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  F.ftype = dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  file_open();
}

/* ------------------------------------------------------------------------------------------ */


/* ------------------------------------------------------------------------------------------ */
/* --probe N: check the MPI-IO implementation's handling of N random memory types and N random
 * filetypes, one at a time, against the datatype engine (MPI_Unpack and the flattened view).
 * A tool for finding which generated corners a native implementation gets wrong; not used by
 * the differential runs. Prints the failing types. */

static int probe_memtype(MPI_File fh, long i)
{
  mbuf_t m = make_mbuf(rint_(&R, 1, 64), 0);
  int len = (int)(m.count * m.mt.size), pos = 0, bad = 0;
  unsigned char *src = malloc((size_t)len + 1), *ref = malloc(m.alen);
  for (int k = 0; k < len; k++) src[k] = pattern((uint64_t)k);
  memcpy(ref, m.alloc, m.alen);
  CHK(MPI_Unpack(src, len, &pos, ref + ((unsigned char *)m.buf - m.alloc), m.count, m.mt.t,
                 MPI_COMM_SELF));
  MPI_Status st;
  MPI_Request rq;
  if (O.verbose) { fprintf(stderr, "memtype %ld: %s count=%d\n", i, m.mt.desc, m.count); }
  int rv = (int)rint_(&R, 0, 3), rc;
  if (rv == 0) rc = MPI_File_read_at(fh, 0, m.buf, m.count, m.mt.t, &st);
  else if (rv == 1) rc = MPI_File_read_at_all(fh, 0, m.buf, m.count, m.mt.t, &st);
  else {
    rc = rv == 2 ? MPI_File_iread_at(fh, 0, m.buf, m.count, m.mt.t, &rq)
                 : MPI_File_iread_at_all(fh, 0, m.buf, m.count, m.mt.t, &rq);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&rq, &st);
  }
  for (size_t k = 0; k < m.alen; k++) bad += m.alloc[k] != ref[k];
  if (rc != MPI_SUCCESS || bad)
    printf("memtype %ld: %s count=%d etype=%s %s: %d bytes differ (%s)\n", i, m.mt.desc, m.count,
           F.etype.desc, rnames[rv == 0 ? W_AT : rv == 1 ? W_AT_ALL : rv == 2 ? W_IAT : W_IAT_ALL],
           bad, errname(rc));
  fflush(stdout);
  free(src);
  free(ref);
  free_mbuf(&m);
  return bad != 0;
}

/* Write through a view: a random access variant, memory type and count; check the bytes in
 * the file; read them back through the view with another random variant and memory type. */
static int probe_access(MPI_File fh, int write, mbuf_t *m, int *variant)
{
  MPI_Status st;
  int v = (int)rint_(&R, 0, 9);
  *variant = v;
  if (uses_ptr(v)) CHK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
  MPI_File keep = F.fh;
  F.fh = fh;
  int rc = do_access(write, v, 0, m, &st);
  F.fh = keep;
  return rc;
}

static int probe_filetype(MPI_File fh, long i)
{
  gen_t g = {&R, &F.etype, 0, 0};
  F.ftype = gen(&g, (int)rint_(&R, 1, 4), rint_(&R, 64, 1536));
  CHK(MPI_Type_commit(&F.ftype.t));
  F.disp = rint_(&R, 0, 64);
  int rc = MPI_File_set_view(fh, F.disp, F.etype.t, F.ftype.t, "native", MPI_INFO_NULL);
  model_view(F.ftype.t, &F.ftype);
  long want = rint_(&R, 1, 3) * (long)(F.ftype.size / F.etype.size), end = 0, bad = 0, n;
  mbuf_t m = make_mbuf(want, 1);
  int len, wv, rv;
  unsigned char *src = pack_all(&m, &len), *img;
  int rw = probe_access(fh, 1, &m, &wv);
  CHK(MPI_File_sync(fh));
  img = slurp(O.file, &n);
  for (long k = 0; k < len; k++) {
    long fb = model_pos(k);
    if (fb >= n || img[fb] != src[k]) bad++;
    if (fb + 1 > end) end = fb + 1;
  }
  for (long k = 0; k < n; k++) if (k >= end && img[k] != 0) { bad++; break; }
  if (rc != MPI_SUCCESS || rw != MPI_SUCCESS || bad)
    printf("filetype %ld: disp=%lld %s etype=%s %s count=%d mem=%s: %ld bytes wrong (%s %s)\n",
           i, (long long)F.disp, F.ftype.desc, F.etype.desc, wnames[wv], m.count, m.mt.desc,
           bad, errname(rc), errname(rw));
  mbuf_t b = make_mbuf(len / (long)F.etype.size, 0);
  long badr = 0;
  int blen, rr = probe_access(fh, 0, &b, &rv);
  unsigned char *back = pack_all(&b, &blen);
  for (long k = 0; k < blen && k < len; k++) badr += back[k] != src[k];
  if (rr != MPI_SUCCESS || badr)
    printf("filetype %ld: disp=%lld %s etype=%s %s count=%d mem=%s: %ld bytes read back wrong "
           "(%s)\n", i, (long long)F.disp, F.ftype.desc, F.etype.desc, rnames[rv], b.count,
           b.mt.desc, badr, errname(rr));
  fflush(stdout);
  CHK(MPI_File_set_size(fh, 0));
  free(back);
  free(img);
  free(src);
  free_mbuf(&m);
  free_mbuf(&b);
  dt_free(&F.ftype);
  return bad + badr != 0 || rc != MPI_SUCCESS || rw != MPI_SUCCESS || rr != MPI_SUCCESS;
}

static void probe(long n)
{
  MPI_File fh;
  long badm = 0, badf = 0;
  unlink(O.file);
  MPI_Info info;                /* collective buffering forced: two-phase even on one rank */
  CHK(MPI_Info_create(&info));
  CHK(MPI_Info_set(info, "romio_cb_write", "enable"));
  CHK(MPI_Info_set(info, "romio_cb_read", "enable"));
  CHK(MPI_File_open(MPI_COMM_SELF, O.file, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh));
  CHK(MPI_Info_free(&info));
  for (long i = 0; i < n; i++) {
    F.etype = make_etype(6);
    unsigned char buf[65536];
    for (int k = 0; k < (int)sizeof buf; k++) buf[k] = pattern((uint64_t)k);
    MPI_Status st;
    CHK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    CHK(MPI_File_write_at(fh, 0, buf, (int)sizeof buf, MPI_BYTE, &st));
    badm += probe_memtype(fh, i);
    CHK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    CHK(MPI_File_set_size(fh, 0));
    badf += probe_filetype(fh, i);
    dt_free(&F.etype);
  }
  CHK(MPI_File_close(&fh));
  printf("probe: %ld of %ld memory types and %ld of %ld filetypes handled wrongly\n", badm, n,
         badf, n);
}

static void usage(void)
{
  if (me == 0)
    fprintf(stderr,
      "usage: difftest --seed S --ops N --file PATH --log PATH [--max-file BYTES] [--model]\n"
      "                [--portable] [--turns] [--expect-pario|--expect-native] [--verbose]\n"
      "                [--pattern coll [--zero-size-views] [--root-header] [--revisit]] [--eof-strict]\n"
      "       difftest --probe N --file PATH [--seed S] [--portable]   (one rank)\n"
      "Replays a seed-determined random sequence of N MPI-IO calls on PATH (pre-filled with a\n"
      "known pattern) and writes every result to the logs PATH.<rank> (log PATH), for\n"
      "differential tests (tests/diff/run-diff.sh).\n"
      "  --max-file   bytes the file stays below (default 98304)\n"
      "  --model      also check every read, byte offset, size and, after every write step,\n"
      "               the file against a model built with MPI_Pack/MPI_Unpack only\n"
      "               (mismatches on stderr, exit status 4)\n"
      "  --portable   avoid the corners where either native MPI-IO is wrong, not only this\n"
      "               MPI's, so that Open MPI and MPICH replay the same sequence\n"
      "  --turns      independent writes one rank at a time even in atomic mode\n"
      "  --expect-*   fail unless MPI_File_open is served by pario / by the MPI library\n"
      "  --verbose    echo the log on stderr\n"
      "  --probe N    check N random memory types and N filetypes, one at a time, against the\n"
      "               datatype engine, and print the ones this MPI-IO handles wrongly\n"
      "  --pattern coll  N epochs of collective patterns instead (HPIO, subarray, darray,\n"
      "               interleaved, blocks; empty ranks; collective-buffering hints), each\n"
      "               written, read back and checked by the run itself (exit status 4)\n"
      "  --zero-size-views  ranks with empty accesses may use zero-size filetypes (a darray\n"
      "               that leaves them nothing)\n"
      "  --root-header  one rank's view may start with a header, PnetCDF's rank-0 view: a struct\n"
      "               of the header and its filetype at displacement 0, whose copies interleave\n"
      "  --revisit    each epoch returns twice to its pattern's view, built afresh (a view cache)\n"
      "  --eof-strict never drop reads past end of file where a native MPI-IO is wrong there\n"
      "               (for runs judged by --model alone)\n");
}

static void parse(int argc, char **argv)
{
  O.max_file = 96 * 1024;
  O.ops = 200;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--seed") && v) { O.seed = strtoull(v, NULL, 0); i++; }
    else if (!strcmp(a, "--ops") && v) { O.ops = atol(v); i++; }
    else if (!strcmp(a, "--file") && v) { O.file = v; i++; }
    else if (!strcmp(a, "--log") && v) { O.log = v; i++; }
    else if (!strcmp(a, "--max-file") && v) { O.max_file = atol(v); i++; }
    else if (!strcmp(a, "--portable")) O.portable = 1;
    else if (!strcmp(a, "--turns")) O.turns = 1;
    else if (!strcmp(a, "--expect-pario")) O.expect = 1;
    else if (!strcmp(a, "--expect-native")) O.expect = 2;
    else if (!strcmp(a, "--verbose")) O.verbose = 1;
    else if (!strcmp(a, "--model")) M.on = 1;
    else if (!strcmp(a, "--probe") && v) { O.probe = atol(v); i++; }
    else if (!strcmp(a, "--pattern") && v && !strcmp(v, "coll")) { O.coll = 1; i++; }
    else if (!strcmp(a, "--eof-strict")) O.eof_strict = 1;
    else if (!strcmp(a, "--zero-size-views")) O.zero_views = 1;
    else if (!strcmp(a, "--root-header")) O.root_header = 1;
    else if (!strcmp(a, "--revisit")) O.revisit = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(); MPI_Finalize(); exit(0); }
    else { usage(); MPI_Abort(MPI_COMM_WORLD, 2); }
  }
  if (!O.file || (!O.log && !O.probe)) { usage(); MPI_Abort(MPI_COMM_WORLD, 2); }
  if (O.max_file < 4096) O.max_file = 4096;
}

/* Who serves MPI_File_open in this process: pario (preloaded or linked) or the host MPI. */
void check_provider(void)
{
  Dl_info info;
  int (*fp)(MPI_Comm, const char *, int, MPI_Info, MPI_File *) = MPI_File_open;
  void *addr;
  memcpy(&addr, &fp, sizeof addr);
  const char *obj = dladdr(addr, &info) && info.dli_fname ? info.dli_fname : "?";
  int pario = strstr(obj, "pario") != NULL;
  if (me == 0) fprintf(stderr, "difftest: MPI_File_open served by %s\n", obj);
  if ((O.expect == 1 && !pario) || (O.expect == 2 && pario))
    DIE("MPI_File_open is served by %s, expected %s", obj, O.expect == 1 ? "pario" : "the host MPI");
}

void open_log(void)
{
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", O.log, me);
  LOG = fopen(path, "w");
  if (!LOG) DIE("cannot open log %s: %s", path, strerror(errno));
  logf_("difftest seed=%llu ops=%ld np=%d rank=%d max_file=%ld portable=%d\n", O.seed, O.ops,
        np, me, O.max_file, O.portable);
}

void final_report(void)
{
  CHK(MPI_Barrier(MPI_COMM_WORLD));
  if (me != 0) return;
  long n;
  unsigned char *b = slurp(O.file, &n);
  logf_("final file size=%ld fnv=%016llx\n", n, (unsigned long long)fnv(b, (size_t)n));
  model_final(b, n);
  free(b);
}

static void run_ops(void);

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  parse(argc, argv);
  char ver[MPI_MAX_LIBRARY_VERSION_STRING];
  int vl;
  MPI_Get_library_version(ver, &vl);
  is_ompi = strstr(ver, "Open MPI") != NULL;
  q_ompio = is_ompi || O.portable;
  q_romio = !is_ompi || O.portable;
  check_provider();
  if (O.probe) {
    S.s = mix64(O.seed ^ 0x5eedULL);
    R.s = mix64(O.seed + 1);
    if (me == 0) probe(O.probe);
    MPI_Finalize();
    return 0;
  }
  S.s = mix64(O.seed ^ 0x5eedULL);
  R.s = mix64(O.seed + (uint64_t)me * 0x9e3779b97f4a7c15ULL + 1);
  open_log();

  long size0 = rint_(&S, O.max_file / 4, O.max_file);
  prefill(size0);
  model_init(size0);
  F.size = size0;
  F.etype = dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  F.ftype = dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  if (O.coll) coll_run();
  else run_ops();
  int rc = MPI_File_close(&F.fh);
  logf_("close -> %s\n", errname(rc));
  free_view();
  final_report();
  fclose(LOG);
  long bad = M.bad;
  if (M.on || O.coll) {
    CHK(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (me == 0 && bad) fprintf(stderr, "difftest: %ld mismatches\n", bad);
  }
  MPI_Finalize();
  return bad ? 4 : 0;
}

/* The random call sequence: O.ops operations. */
static void run_ops(void)
{
  file_open();
  static const int w[] = {8, 20, 14, 14, 12, 8, 5, 3, 4, 2, 2};
  for (long i = 0; i < O.ops; i++) {
    int k = rweighted(&S, w, (int)(sizeof w / sizeof *w));
    cur_op = i;
    switch (k) {
    case 0: op_set_view(); break;
    case 1: op_write_ind(i); break;
    case 2: op_write_coll(i); break;
    case 3: op_read(i, 0); break;
    case 4: op_read(i, 1); break;
    case 5: op_seek(i); break;
    case 6: op_size(i); break;
    case 7: op_sync(i); break;
    case 8: op_atomicity(i); break;
    case 9: op_get_view(i); break;
    default: op_reopen(i); break;
    }
    fflush(LOG);
  }
  if (F.dirty) sync_point("end");
}
