/* The two users of the datatype decoder (view/typewalk.c) agree: over a few thousand generated
 * types (every constructor, nested, large-count ones on MPI-4, holes, zero-length blocks,
 * negative strides, resized bounds, darrays of every distribution), the native runs of the
 * typed-run layout (view/datarep.c) equal the typemap's byte runs (view/typemap.c), bounds and
 * size too; and for types whose basic items have the same size and alignment in both
 * representations (4-byte ones), the external32 file layout is the native typemap itself.
 * The typemap itself is checked against the MPI library by test_typemap. No mpiexec. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "view/datarep.h"
#include "view/typemap.h"
#include "check.h"

static unsigned long long seed = 12345;
static int rnd(int n) { /* 0 .. n-1 */
  seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return (int)((seed >> 33) % (unsigned long long)n);
}

/* Basic types: every one 4 bytes in both representations (four), or a mix of sizes, a pair
 * type with a hole, and long double (mixed). */
static MPI_Datatype basic(int four) {
  static const MPI_Datatype f[] = {MPI_INT, MPI_FLOAT, MPI_UNSIGNED, MPI_INT32_T};
  const MPI_Datatype m[] = {MPI_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_DOUBLE, MPI_DOUBLE_INT, MPI_LONG_DOUBLE,
                            MPI_C_BOOL};
  return four ? f[rnd(4)] : m[rnd(8)];
}

static void free_type(MPI_Datatype *t) {
  if (!pario_type_is_named(*t)) MPI_Type_free(t);
}

/* Four mode (four 1, or 2 inside a struct): byte displacements are multiples of 4, so no
 * member of a struct needs padding; no block or type is empty, no type resized and no struct
 * member an array: where MPI's native bounds and external32's (the bounds of the blocks, see
 * datarep.h) part, MPI's being the library's choice (an empty block; in Open MPI, a struct
 * bounded by its members' explicit bounds alone, MPI-1's sticky markers, which subarray and
 * darray set too). */
static MPI_Count bytes(int four, int n) { return four ? 4 * (MPI_Count)rnd(n) : (MPI_Count)rnd(4 * n); }

static void darray(int large, MPI_Datatype old, MPI_Datatype *t) {
  int nd = 1 + rnd(2), ps[2], ds[2], da[2], size = 1;
  MPI_Count gs[2];
  int gi[2];
  for (int i = 0; i < nd; i++) {
    ps[i] = 1 + rnd(3);
    gs[i] = gi[i] = 1 + rnd(7);
    ds[i] = rnd(3) == 0 ? MPI_DISTRIBUTE_NONE : rnd(2) ? MPI_DISTRIBUTE_BLOCK : MPI_DISTRIBUTE_CYCLIC;
    if (ds[i] == MPI_DISTRIBUTE_NONE) ps[i] = 1;
    da[i] = MPI_DISTRIBUTE_DFLT_DARG;
    if (ds[i] == MPI_DISTRIBUTE_CYCLIC && rnd(2)) da[i] = 1 + rnd(3);
    if (ds[i] == MPI_DISTRIBUTE_BLOCK && rnd(2)) da[i] = (gi[i] + ps[i] - 1) / ps[i] + rnd(2);
    size *= ps[i];
  }
  int order = rnd(2) ? MPI_ORDER_C : MPI_ORDER_FORTRAN, rank = rnd(size);
#if PARIO_HAVE_LARGE_COUNT
  if (large) {
    MPI_Type_create_darray_c(size, rank, nd, gs, ds, da, ps, order, old, t);
    return;
  }
#endif
  (void)large, (void)gs;
  MPI_Type_create_darray(size, rank, nd, gi, ds, da, ps, order, old, t);
}

static void subarray(int large, MPI_Datatype old, MPI_Datatype *t) {
  int nd = 1 + rnd(3), si[3], su[3], st[3];
  MPI_Count sc[3], uc[3], tc[3];
  for (int i = 0; i < nd; i++) {
    sc[i] = si[i] = 1 + rnd(4);
    uc[i] = su[i] = 1 + rnd(si[i]);
    tc[i] = st[i] = rnd(si[i] - su[i] + 1);
  }
  int order = rnd(2) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
#if PARIO_HAVE_LARGE_COUNT
  if (large) {
    MPI_Type_create_subarray_c(nd, sc, uc, tc, order, old, t);
    return;
  }
#endif
  (void)large, (void)sc, (void)uc, (void)tc;
  MPI_Type_create_subarray(nd, si, su, st, order, old, t);
}

static MPI_Datatype gen(int depth, int four);

/* count blocks of lengths bl[] at displacements d[] (in extents, or bytes for h*), or a struct
 * of member types ts[]. */
static void blocks(int kind, int large, MPI_Datatype old, int four, int depth, MPI_Datatype *t) {
  int n = 1 + rnd(3), bi[3], di[3];
  MPI_Count bl[3], d[3];
  MPI_Aint ad[3];
  MPI_Datatype ts[3];
  for (int i = 0; i < n; i++) {
    bl[i] = bi[i] = four + rnd(3 - four);
    d[i] = di[i] = rnd(7) - 1;
    ad[i] = (MPI_Aint)bytes(four, 8);
    ts[i] = kind == 3 ? gen(depth - 1, four ? 2 : 0) : old;
  }
#if PARIO_HAVE_LARGE_COUNT
  MPI_Count hd[3] = {ad[0], ad[1], ad[2]};
  if (large) {
    if (kind == 0) MPI_Type_indexed_c(n, bl, d, old, t);
    if (kind == 1) MPI_Type_create_hindexed_c(n, bl, hd, old, t);
    if (kind == 2) MPI_Type_create_indexed_block_c(n, bl[0], d, old, t);
    if (kind == 3) MPI_Type_create_struct_c(n, bl, hd, ts, t);
    if (kind == 4) MPI_Type_create_hindexed_block_c(n, bl[0], hd, old, t);
  }
#endif
  (void)bl, (void)d;
  if (!large) {
    if (kind == 0) MPI_Type_indexed(n, bi, di, old, t);
    if (kind == 1) MPI_Type_create_hindexed(n, bi, ad, old, t);
    if (kind == 2) MPI_Type_create_indexed_block(n, bi[0], di, old, t);
    if (kind == 3) MPI_Type_create_struct(n, bi, ad, ts, t);
    if (kind == 4) MPI_Type_create_hindexed_block(n, bi[0], ad, old, t);
  }
  for (int i = 0; kind == 3 && i < n; i++) free_type(&ts[i]);
}

/* A random type of nesting depth at most depth (committed by the caller). */
static MPI_Datatype gen(int depth, int four) {
  if (depth == 0 || rnd(5) == 0) return basic(four);
  int c = rnd(12), large = 0;
  if (four && c == 10) c = 11; /* four mode: no resized; a struct's members no arrays */
  if (four == 2 && (c == 8 || c == 9)) c = 0;
#if PARIO_HAVE_LARGE_COUNT
  large = rnd(3) == 0;
#endif
  MPI_Datatype old = c == 7 ? MPI_DATATYPE_NULL : gen(depth - 1, four), t = MPI_DATATYPE_NULL;
  MPI_Count n = four + rnd(4 - four), bl = four + rnd(3 - four), stride = rnd(6) - 2, lb, ext;
  if (old != MPI_DATATYPE_NULL) MPI_Type_get_extent_x(old, &lb, &ext);
  /* arrays of elements with no extent are not types; Open MPI refuses darrays of a type
   * whose lower bound is not 0 */
  if ((c == 8 || c == 9) && (ext <= 0 || (c == 9 && lb != 0))) {
    free_type(&old);
    old = basic(four);
  }
  switch (c) {
    case 0: MPI_Type_contiguous((int)n, old, &t); break;
    case 1: MPI_Type_vector((int)n, (int)bl, (int)stride, old, &t); break;
    case 2: MPI_Type_create_hvector((int)n, (int)bl, (MPI_Aint)(bytes(four, 8) - 8), old, &t); break;
    case 3: blocks(0, large, old, four, depth, &t); break;
    case 4: blocks(1, large, old, four, depth, &t); break;
    case 5: blocks(2, large, old, four, depth, &t); break;
    case 6: blocks(4, large, old, four, depth, &t); break;
    case 7: blocks(3, large, old, four, depth, &t); break;
    case 8: subarray(large, old, &t); break;
    case 9: darray(large, old, &t); break;
    case 10:
      MPI_Type_create_resized(old, (MPI_Aint)(lb + bytes(four, 3) - 4), (MPI_Aint)(ext + bytes(four, 3)), &t);
      break;
    default: MPI_Type_dup(old, &t);
  }
#if PARIO_HAVE_LARGE_COUNT
  if (large && c == 0) free_type(&t), MPI_Type_contiguous_c(n, old, &t);
  if (large && c == 1) free_type(&t), MPI_Type_vector_c(n, bl, stride, old, &t);
#endif
  if (old != MPI_DATATYPE_NULL) free_type(&old);
  MPI_Type_size_x(t, &n);
  if (four && n == 0) { /* an empty darray part: its native bounds are the library's choice */
    free_type(&t);
    t = basic(four);
  }
  return t;
}

/* The runs of a map's layout, adjacent ones merged: native (file 0) or external32 (file 1). */
static size_t merged(const pario_ext32_map *m, int file, pario_run *out) {
  size_t n = 0;
  for (size_t i = 0; i < m->nruns; i++) {
    const pario_ext32_run *r = &m->runs[i];
    MPI_Offset off = file ? r->eoff : r->noff, len = r->count * (file ? (MPI_Offset)r->xsize : r->isize);
    if (len == 0) continue;
    if (n && out[n - 1].off + out[n - 1].len == off) out[n - 1].len += len;
    else out[n].off = off, out[n++].len = len;
  }
  return n;
}

/* The index of the first run that differs (the shorter list's length if one is a prefix of
 * the other), or -1 when the lists are equal. */
static long differ(const pario_run *a, size_t na, const pario_run *b, size_t nb) {
  size_t i = 0;
  while (i < na && i < nb && a[i].off == b[i].off && a[i].len == b[i].len) i++;
  return i == na && i == nb ? -1 : (long)i;
}

/* One type: the typemap and the typed-run layout from the same decoder agree. */
static void agree(int k, MPI_Datatype t, int four) {
  pario_typemap *tm = NULL;
  pario_ext32_map *m = NULL;
  int rt = pario_typemap_build(t, &tm), rm = pario_ext32_map_build(t, &m);
  CHECK(rt == MPI_SUCCESS && rm == MPI_SUCCESS, "type %d: typemap %d, typed runs %d", k, rt, rm);
  if (rt == MPI_SUCCESS && rm == MPI_SUCCESS) {
    pario_run *nat = malloc(sizeof *nat * (m->nruns + 1));
    size_t n = merged(m, 0, nat);
    long i = differ(nat, n, tm->runs, tm->nruns);
    CHECK(i < 0, "type %d: the typed layout's native run %ld of %zu is not the typemap's (of %zu)", k, i, n, tm->nruns);
    CHECK(m->nsize == tm->size && m->nlb == tm->lb && m->nextent == tm->extent,
          "type %d: size/lb/extent %lld/%lld/%lld, typemap %lld/%lld/%lld", k, (long long)m->nsize,
          (long long)m->nlb, (long long)m->nextent, (long long)tm->size, (long long)tm->lb, (long long)tm->extent);
    if (four) { /* the same sizes and no padding: the file layout is the native one */
      n = merged(m, 1, nat);
      i = differ(nat, n, tm->runs, tm->nruns);
      CHECK(i < 0 && m->esize == tm->size, "type %d: external32 run %ld of %zu is not the native one (of %zu)", k, i, n,
            tm->nruns);
      CHECK(m->elb == tm->lb && m->eextent == tm->extent, "type %d: external32 lb %lld, extent %lld, native %lld, %lld",
            k, (long long)m->elb, (long long)m->eextent, (long long)tm->lb, (long long)tm->extent);
    }
    free(nat);
  }
  pario_typemap_free(tm);
  pario_ext32_map_free(m);
}

/* Generated types, the constructors nested to depth 3. */
static int generated(int count, int four) {
  int darrays = 0;
  for (int k = 0; k < count; k++) {
    MPI_Datatype t = gen(3, four);
    darrays += pario_type_combiner(t) == MPI_COMBINER_DARRAY;
    MPI_Type_commit(&t);
    agree(k, t, four);
    free_type(&t);
  }
  return darrays;
}

#ifndef TYPEWALK_NO_MAIN
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int darrays = generated(2000, 1) + generated(2000, 0);
  CHECK(darrays > 50, "only %d darrays generated at the top", darrays);
  printf("%d checks, %d failures\n", checks, failures);
  MPI_Finalize();
  return failures != 0 || checks == 0;
}
#endif
