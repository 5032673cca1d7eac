/* Unit tests of datatype flattening and view arithmetic (no mpiexec; MPI singleton init).
 * Two oracles: hand-computed typemaps for small types, and for every constructor (nested,
 * with holes, zero-length blocks, lower bounds) the typemap recovered through MPI_Pack of a
 * buffer whose bytes encode their own addresses. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view/typemap.h"
#include "view/view.h"
#include "check.h"


/* Expand runs into one offset per data byte, in typemap order. */
static long *expand(const pario_typemap *tm) {
  long *o = malloc(sizeof(long) * (size_t)(tm->size + 1)), k = 0;
  for (size_t i = 0; i < tm->nruns; i++)
    for (MPI_Offset j = 0; j < tm->runs[i].len; j++) o[k++] = (long)(tm->runs[i].off + j);
  return o;
}

/* The MPI library's own typemap: pack a buffer whose byte at offset x encodes x. */
static long *oracle(MPI_Datatype t, long *nbytes) {
  MPI_Count lb, ext, tlb, text, size;
  MPI_Type_get_extent_x(t, &lb, &ext);
  MPI_Type_get_true_extent_x(t, &tlb, &text);
  MPI_Type_size_x(t, &size);
  *nbytes = (long)size;
  long span = (long)text + 1;
  unsigned char *mem = malloc((size_t)span), *packed = malloc((size_t)size + 1);
  long *off = calloc((size_t)size + 1, sizeof(long));
  for (int pass = 0; pass < 3; pass++) {
    for (long x = 0; x < span; x++) mem[x] = (unsigned char)(x >> (8 * pass));
    int pos = 0;
    MPI_Pack(mem - tlb, 1, t, packed, (int)size + 1, &pos, MPI_COMM_SELF);
    for (long k = 0; k < size; k++) off[k] |= (long)packed[k] << (8 * pass);
  }
  for (long k = 0; k < size; k++) off[k] += (long)tlb;
  free(mem);
  free(packed);
  return off;
}

static void check_type(const char *name, MPI_Datatype t) {
  pario_typemap *tm;
  MPI_Type_commit(&t);
  int rc = pario_typemap_build(t, &tm);
  CHECK(rc == MPI_SUCCESS, "%s: flattening failed (%d)", name, rc);
  if (rc != MPI_SUCCESS) return;
  long n, *want = oracle(t, &n), *got = expand(tm);
  CHECK(tm->size == n, "%s: size %lld, MPI says %ld", name, (long long)tm->size, n);
  long bad = -1;
  for (long k = 0; k < n && bad < 0; k++)
    if (want[k] != got[k]) bad = k;
  CHECK(bad < 0, "%s: data byte %ld at offset %ld, MPI says %ld", name, bad, bad >= 0 ? got[bad] : 0,
        bad >= 0 ? want[bad] : 0);
  /* Runs are merged: no two consecutive runs are adjacent. */
  for (size_t i = 1; i < tm->nruns; i++)
    CHECK(tm->runs[i - 1].off + tm->runs[i - 1].len != tm->runs[i].off, "%s: unmerged runs", name);
  free(want);
  free(got);
  pario_typemap_free(tm);
}

static void hand_computed(void) {
  MPI_Datatype v, s, r;
  pario_typemap *tm;
  /* vector(3, 2, 4, MPI_INT): runs (0,8) (16,8) (32,8), extent 40 */
  MPI_Type_vector(3, 2, 4, MPI_INT, &v);
  MPI_Type_commit(&v);
  pario_typemap_build(v, &tm);
  CHECK(tm->nruns == 3 && tm->runs[1].off == 16 && tm->runs[2].len == 8 && tm->extent == 40,
        "vector hand typemap");
  CHECK(tm->monotonic && tm->nonneg && !tm->dense, "vector flags");
  CHECK(pario_typemap_find(tm, 0) == 0 && pario_typemap_find(tm, 8) == 1 && pario_typemap_find(tm, 23) == 2,
        "find");
  pario_typemap_free(tm);
  /* resized(int, lb -4, extent 12): one run (0,4), lb -4, extent 12, not dense */
  MPI_Type_create_resized(MPI_INT, -4, 12, &r);
  MPI_Type_commit(&r);
  pario_typemap_build(r, &tm);
  CHECK(tm->nruns == 1 && tm->runs[0].off == 0 && tm->lb == -4 && tm->extent == 12 && !tm->dense, "resized");
  pario_typemap_free(tm);
  /* MPI_SHORT_INT has a hole between its members: (0,2) (4,4) */
  pario_typemap_build(MPI_SHORT_INT, &tm);
  CHECK(tm->nruns == 2 && tm->runs[0].len == 2 && tm->runs[1].off == 4, "short_int pair type");
  pario_typemap_free(tm);
  /* struct with decreasing displacements is legal in memory but not monotonic */
  int bl[2] = {1, 1};
  MPI_Aint d[2] = {8, 0};
  MPI_Datatype ts[2] = {MPI_INT, MPI_INT};
  MPI_Type_create_struct(2, bl, d, ts, &s);
  MPI_Type_commit(&s);
  pario_typemap_build(s, &tm);
  CHECK(tm->nruns == 2 && tm->runs[0].off == 8 && !tm->monotonic, "decreasing struct");
  pario_typemap_free(tm);
  MPI_Type_free(&v);
  MPI_Type_free(&r);
  MPI_Type_free(&s);
}

static void constructors(void) {
  MPI_Datatype t, inner, inner2;
  MPI_Type_contiguous(5, MPI_DOUBLE, &t); check_type("contiguous", t);
  MPI_Type_vector(4, 3, -5, MPI_INT, &t); check_type("vector negative stride", t);
  MPI_Type_create_hvector(3, 2, 17, MPI_SHORT, &t); check_type("hvector odd stride", t);
  int bl[4] = {2, 0, 3, 1}, disp[4] = {5, 1, 9, 0};
  MPI_Type_indexed(4, bl, disp, MPI_INT, &t); check_type("indexed with zero block", t);
  MPI_Aint hd[4] = {40, 3, 100, 0};
  MPI_Type_create_hindexed(4, bl, hd, MPI_CHAR, &t); check_type("hindexed", t);
  MPI_Type_create_indexed_block(4, 2, disp, MPI_FLOAT, &t); check_type("indexed_block", t);
  MPI_Type_create_hindexed_block(4, 3, hd, MPI_SHORT, &t); check_type("hindexed_block", t);
  MPI_Type_vector(2, 1, 3, MPI_INT, &inner);
  MPI_Type_create_resized(inner, -8, 40, &inner2);
  MPI_Datatype ts[3] = {MPI_CHAR, inner2, MPI_DOUBLE_INT};
  int sbl[3] = {3, 2, 1};
  MPI_Aint sd[3] = {0, 16, 120};
  MPI_Type_create_struct(3, sbl, sd, ts, &t); check_type("struct nested resized lb", t);
  MPI_Type_contiguous(3, t, &inner);
  MPI_Type_dup(inner, &t); check_type("dup of contiguous of struct", t);
  int sizes[3] = {6, 5, 4}, sub[3] = {3, 2, 2}, st[3] = {1, 2, 1};
  MPI_Type_create_subarray(3, sizes, sub, st, MPI_ORDER_C, MPI_INT, &t); check_type("subarray C", t);
  MPI_Type_create_subarray(3, sizes, sub, st, MPI_ORDER_FORTRAN, MPI_DOUBLE, &t); check_type("subarray Fortran", t);
  int gs[2] = {10, 7}, ds[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
  int da[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 3};
  for (int rank = 0; rank < 6; rank++) {
    MPI_Type_create_darray(6, rank, 2, gs, ds, da, ps, MPI_ORDER_C, MPI_INT, &t); check_type("darray C", t);
    MPI_Type_create_darray(6, rank, 2, gs, ds, da, ps, MPI_ORDER_FORTRAN, MPI_INT, &t); check_type("darray F", t);
  }
  int ds3[3] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK}, da3[3] = {1, MPI_DISTRIBUTE_DFLT_DARG, 3};
  int gs3[3] = {5, 3, 8}, ps3[3] = {2, 1, 3};
  for (int rank = 0; rank < 6; rank++) {
    MPI_Type_create_darray(6, rank, 3, gs3, ds3, da3, ps3, MPI_ORDER_C, MPI_SHORT, &t); check_type("darray 3d", t);
  }
  MPI_Type_vector(3, 1, 2, inner, &t); check_type("vector of contiguous of struct", t);
}

#if MPI_VERSION >= 4
/* MPI-4 large-count constructors: their arguments come back in large_counts. */
static void large_count_constructors(void) {
  MPI_Datatype t, inner;
  MPI_Type_contiguous_c(7, MPI_SHORT, &t); check_type("contiguous_c", t);
  MPI_Type_vector_c(4, 3, -5, MPI_INT, &t); check_type("vector_c", t);
  MPI_Type_create_hvector_c(3, 2, 17, MPI_SHORT, &t); check_type("hvector_c", t);
  MPI_Count bl[4] = {2, 0, 3, 1}, disp[4] = {5, 1, 9, 0}, hd[4] = {40, 3, 100, 0};
  MPI_Type_indexed_c(4, bl, disp, MPI_INT, &t); check_type("indexed_c", t);
  MPI_Type_create_hindexed_c(4, bl, hd, MPI_CHAR, &t); check_type("hindexed_c", t);
  MPI_Type_create_indexed_block_c(4, 2, disp, MPI_FLOAT, &t); check_type("indexed_block_c", t);
  MPI_Type_create_hindexed_block_c(4, 3, hd, MPI_SHORT, &t); check_type("hindexed_block_c", t);
  MPI_Type_create_resized_c(MPI_INT, -8, 40, &inner);
  MPI_Datatype ts[3] = {MPI_CHAR, inner, MPI_DOUBLE_INT};
  MPI_Count sbl[3] = {3, 2, 1}, sd[3] = {0, 16, 120};
  MPI_Type_create_struct_c(3, sbl, sd, ts, &t); check_type("struct_c with resized_c", t);
  MPI_Count sizes[3] = {6, 5, 4}, sub[3] = {3, 2, 2}, st[3] = {1, 2, 1};
  MPI_Type_create_subarray_c(3, sizes, sub, st, MPI_ORDER_C, MPI_INT, &t); check_type("subarray_c", t);
  MPI_Type_create_subarray_c(3, sizes, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t); check_type("subarray_c F", t);
  MPI_Count gs[2] = {10, 7};
  int ds[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, da[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 3};
  for (int rank = 0; rank < 6; rank++) {
    MPI_Type_create_darray_c(6, rank, 2, gs, ds, da, ps, MPI_ORDER_C, MPI_INT, &t); check_type("darray_c", t);
  }
}
#endif

/* View arithmetic on vector(3, 2, 4, MPI_INT) tiled from disp 100. */
static void view_math(void) {
  MPI_Datatype v;
  MPI_Type_vector(3, 2, 4, MPI_INT, &v);
  MPI_Type_commit(&v);
  pario_view view;
  memset(&view, 0, sizeof view);
  view.disp = 100;
  pario_typemap_get(v, &view.ftm);
  view.esize = 4;
  CHECK(pario_view_file_offset(&view, 0) == 100, "first byte");
  CHECK(pario_view_file_offset(&view, 8) == 116, "second run");
  CHECK(pario_view_file_offset(&view, 24) == 140, "second tile (extent 40)");
  CHECK(pario_view_file_offset(&view, 30) == 146, "inside second tile");
  CHECK(pario_view_data_before(&view, 100) == 0 && pario_view_data_before(&view, 110) == 8, "data before");
  CHECK(pario_view_data_before(&view, 117) == 9 && pario_view_data_before(&view, 140) == 24, "data before 2");
  MPI_Offset first, last;
  pario_view_extent_of(&view, 4, 24, &first, &last);
  CHECK(first == 104 && last == 144, "extent of access: %lld..%lld", (long long)first, (long long)last);
  pario_fcursor c;
  MPI_Offset off, n;
  pario_fcursor_init(&c, &view, 6);
  n = pario_fcursor_next(&c, 100, &off);
  CHECK(off == 106 && n == 2, "cursor mid-run");
  n = pario_fcursor_next(&c, 100, &off);
  CHECK(off == 116 && n == 8, "cursor next run");
  pario_fcursor_next(&c, 100, &off);
  n = pario_fcursor_next(&c, 3, &off);
  CHECK(off == 140 && n == 3, "cursor wraps to next tile, bounded by max");
  /* memory cursor over 2 copies of the vector: pieces of 8 bytes at 0,16,32,40,56,72 */
  int buf[20];
  pario_mcursor mc;
  struct iovec iov[8];
  int cnt;
  pario_mcursor_init(&mc, buf, view.ftm);
  MPI_Offset got = pario_mcursor_iov(&mc, 48, iov, 8, &cnt);
  CHECK(got == 48 && cnt == 5, "memory iovecs: got %lld in %d", (long long)got, cnt);
  CHECK((char *)iov[2].iov_base == (char *)buf + 32 && iov[2].iov_len == 16, "adjacent pieces merged across copies");
  MPI_Type_free(&v);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  hand_computed();
  constructors();
#if MPI_VERSION >= 4
  large_count_constructors();
#endif
  view_math();
  printf("%d checks, %d failures\n", checks, failures);
  MPI_Finalize();
  return failures != 0;
}
