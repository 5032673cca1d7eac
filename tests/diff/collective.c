/* collective.c: difftest --pattern coll, the access patterns a two-phase collective layer must
 * get right (HPIO strided regions, fine-grained interleaving, 2-D/3-D subarray and darray
 * decompositions with uneven sizes, large per-rank blocks, ranks with empty accesses), written
 * collectively or independently under random collective-buffering and sieving hints, read
 * back and checked by the run itself, read across ranks and past end of file; logged in
 * difftest.c's format so that run-diff.sh compares it with the native MPI-IO. */
#include "difftest.h"
#include <string.h>

enum { P_HPIO, P_INTERLEAVED, P_SUBARRAY, P_DARRAY, P_BLOCKS, P_KINDS };
static const char *pnames[] = {"hpio", "interleaved", "subarray", "darray", "blocks"};
enum { MAXNP = 64 };

/* One epoch's pattern, drawn from the shared stream: every rank can build every rank's part. */
typedef struct {
  int kind;
  MPI_Offset disp;            /* where the pattern starts */
  long span;                  /* bytes from disp it covers */
  int empty[MAXNP];           /* ranks with an empty access */
  int zero_ft;                /* empty ranks: a zero-size filetype (else count 0) */
  long rb, gap, rc[MAXNP];    /* hpio: region k of rank r at (k*np + r) * (rb*ext + gap) */
  int vec_form;               /* hpio: one hvector per rank instead of a tiled slot */
  int nd, gs[3], ps[3], order, cut[3][MAXNP + 1];   /* subarray/darray: grid and cuts */
  int dist[3], darg[3];       /* darray */
  long len[MAXNP], pre[MAXNP]; /* blocks: lengths and starts (etypes) */
  int shared_view;            /* blocks: one view for all, explicit offsets */
  long hdr;                   /* --root-header: etypes of header before hdr_rank's part */
  int hdr_rank;
} pat_t;

/* One rank's part of a pattern. */
typedef struct {
  dt_t ft;
  MPI_Offset disp, off;       /* view displacement; view offset where the data starts */
  long n;                     /* etypes accessed */
  int sub[3];                 /* subarray: local block, for a memory layout with ghost cells */
} part_t;

static dt_t E;                /* the epoch's etype: the pattern's element too */
static long cbs;              /* cb_buffer_size in effect (0: the default) */
static long self_bad;

/* ------------------------------------------------------------------------------------------ */
/* Hints: at open every collective-buffering and sieving key; later (set_info, set_view) only
 * those MPICH 4.0's ROMIO takes after open (it sizes the collective buffer at open and
 * overruns it when cb_buffer_size grows later, see README.md). */

static void pick_hint(MPI_Info info, int pct, const char *key, const char *const *vals, int n)
{
  if (rpct(&S, pct)) set_hint(info, key, vals[rint_(&S, 0, n - 1)]);
}

static MPI_Info coll_info(int at_open)
{
  static const char *ed[] = {"enable", "disable", "automatic"};
  static const char *sieve[] = {"64", "256", "1024"};
  static const char *cbsz[] = {"64", "256", "4096"};
  static const char *unit[] = {"64", "100", "4096"};
  static const char *block[] = {"64", "512"};
  MPI_Info info;
  CHK(MPI_Info_create(&info));
  hints_desc[0] = 0;
  if (at_open) {
    cbs = 0;
    if (rpct(&S, 70)) {
      const char *v = cbsz[rint_(&S, 0, 2)];
      set_hint(info, "cb_buffer_size", v);
      cbs = atol(v);
    }
    if (rpct(&S, 60)) {
      char v[16];
      snprintf(v, sizeof v, "%ld", rint_(&S, 1, np));
      set_hint(info, "cb_nodes", v);
    }
    pick_hint(info, 25, "striping_unit", unit, 3);
    pick_hint(info, 20, "cb_block_size", block, 2);
  }
  pick_hint(info, 60, "romio_cb_write", ed, 3);
  pick_hint(info, 60, "romio_cb_read", ed, 3);
  pick_hint(info, 40, "romio_ds_write", ed, 3);
  pick_hint(info, 40, "romio_ds_read", ed, 3);
  pick_hint(info, 40, "ind_wr_buffer_size", sieve, 3);
  pick_hint(info, 40, "ind_rd_buffer_size", sieve, 3);
  return info;
}

static void coll_reopen(void)
{
  if (F.dirty) sync_point("close");
  int rc = MPI_File_close(&F.fh);
  logf_("close -> %s\n", errname(rc));
  free_view();
  F.etype = dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  F.ftype = dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  file_open_with(coll_info(1));
}

/* ------------------------------------------------------------------------------------------ */
/* Drawing a pattern. Sizes are kept to what the file holds and, with a small cb_buffer_size,
 * to some 64 rounds of one aggregator, so that 8 oversubscribed ranks stay quick. */

static long budget_bytes(void)
{
  long b = (long)F.size - 64;
  if (cbs && 64 * cbs < b) b = 64 * cbs;
  return b;
}

static void draw_empty(pat_t *P)
{
  memset(P->empty, 0, sizeof P->empty);
  P->zero_ft = rpct(&S, 50);
  if (!rpct(&S, 30)) return;
  for (int r = 0; r < np; r++) P->empty[r] = rpct(&S, 35);
}

/* Uneven counts around base: each rank base +- base/2, empty ranks 0. */
static void uneven(const pat_t *P, long base, long *v)
{
  for (int r = 0; r < np; r++) {
    v[r] = P->empty[r] ? 0 : base + rint_(&S, -base / 2, base / 2);
    if (v[r] < 0) v[r] = 0;
  }
}

static long lmax(const long *v, int n)
{
  long m = 0;
  for (int i = 0; i < n; i++) if (v[i] > m) m = v[i];
  return m;
}

static void draw_hpio(pat_t *P, long budget, int fine)
{
  long e = (long)E.ext;
  P->rb = fine ? rint_(&S, 1, 2) : rint_(&S, 1, rpct(&S, 50) ? 4 : 64);
  P->gap = fine ? 0 : rint_(&S, 0, 2 * P->rb * e);
  P->vec_form = rpct(&S, 50);
  long slot = P->rb * e + P->gap, cmax = budget / ((long)np * slot);
  if (cmax < 1) { P->rb = 1; P->gap = 0; slot = e; cmax = budget / ((long)np * e); }
  long base = rint_(&S, 1, cmax > 2 ? cmax * 2 / 3 : 1);
  uneven(P, base, P->rc);
  for (int r = 0; r < np; r++) if (P->rc[r] > cmax) P->rc[r] = cmax;
  P->span = (long)np * slot * lmax(P->rc, np);
}

/* A process grid and global sizes of at most 'budget' bytes, uneven: not multiples of the
 * grid, and possibly smaller than it (ranks with nothing). */
static void draw_grid(pat_t *P, long budget, int nd)
{
  P->nd = nd;
  memset(P->ps, 0, sizeof P->ps);
  CHK(MPI_Dims_create(np, nd, P->ps));
  long maxel = budget / (long)E.ext, prod = 1;
  for (int d = 0; d < nd; d++) {
    P->gs[d] = (int)rint_(&S, P->ps[d] > 1 ? P->ps[d] - 1 : 1, 3 * P->ps[d] + 12);
    prod *= P->gs[d];
  }
  for (int d = 0; prod > maxel; d = (d + 1) % nd) {
    if (P->gs[d] == 1) continue;
    prod /= P->gs[d];
    P->gs[d] = (P->gs[d] + 1) / 2;
    prod *= P->gs[d];
  }
  P->span = prod * (long)E.ext;
  P->order = rpct(&S, 50) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
}

static void draw_subarray(pat_t *P, long budget)
{
  draw_grid(P, budget, (int)rint_(&S, 2, 3));
  for (int d = 0; d < P->nd; d++) {
    int p = P->ps[d], g = P->gs[d], *c = P->cut[d], even = rpct(&S, 50);
    c[0] = 0;
    c[p] = g;
    for (int i = 1; i < p; i++)   /* block with remainder, or random sorted cut points */
      c[i] = even ? (int)((long)i * g / p) : (int)rint_(&S, c[i - 1], g);
  }
}

static void draw_darray(pat_t *P, long budget)
{
  draw_grid(P, budget, (int)rint_(&S, 1, 3));
  for (int d = 0; d < P->nd; d++) {
    int p = P->ps[d], g = P->gs[d], k = (int)rint_(&S, 1, 3);
    int w = (int)rint_(&S, 0, p == 1 ? 4 : 3);
    P->darg[d] = MPI_DISTRIBUTE_DFLT_DARG;
    if (w <= 1) {
      P->dist[d] = MPI_DISTRIBUTE_BLOCK;
      if (w == 1) P->darg[d] = (g + p - 1) / p + (int)rint_(&S, 0, 2);   /* k * p >= g */
    } else if (w <= 3) {
      P->dist[d] = MPI_DISTRIBUTE_CYCLIC;
      if (w == 3) P->darg[d] = k;
    } else {
      P->dist[d] = MPI_DISTRIBUTE_NONE;
    }
  }
}

static void draw_blocks(pat_t *P, long budget)
{
  long maxel = budget / (long)E.ext, per = maxel / np - 16;
  if (per < 1) per = 1;
  uneven(P, rint_(&S, 1, per * 2 / 3 + 1), P->len);
  long at = 0;
  for (int r = 0; r < np; r++) {
    if (P->len[r] > per) P->len[r] = per;
    P->pre[r] = at;
    at += P->len[r] + rint_(&S, 0, 16);      /* gaps between blocks keep the pre-fill */
  }
  P->shared_view = rpct(&S, 50);
  P->span = at * (long)E.ext;
}

static void draw(pat_t *P)
{
  static const int w[] = {25, 15, 25, 20, 15};
  memset(P, 0, sizeof *P);
  P->kind = rweighted(&S, w, P_KINDS);
  long budget = budget_bytes();
  draw_empty(P);
  switch (P->kind) {
  case P_HPIO: draw_hpio(P, budget, 0); break;
  case P_INTERLEAVED: draw_hpio(P, budget, 1); break;
  case P_SUBARRAY: draw_subarray(P, budget); break;
  case P_DARRAY: draw_darray(P, budget); break;
  default: draw_blocks(P, budget); break;
  }
  long room = (long)F.size - P->span;
  P->disp = rpct(&S, 25) ? room : rint_(&S, 0, room);   /* often right up to end of file */
  if (O.root_header && P->disp >= (long)E.ext && rpct(&S, 70)) {
    P->hdr = rint_(&S, 1, P->disp / (long)E.size);
    P->hdr_rank = (int)rint_(&S, 0, np - 1);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Building rank r's part. */

/* The filetype of an empty access: zero size, extent one element (OMPIO divides by extents). */
static dt_t zero_type(void)
{
  MPI_Datatype x, t;
  CHK(MPI_Type_contiguous(0, E.t, &x));
  CHK(MPI_Type_create_resized(x, 0, E.ext, &t));
  CHK(MPI_Type_free(&x));
  return dt_wrap(t, 1, xsprintf("resized(contig(0,E),0,%ld)", (long)E.ext));
}

static void part_hpio(const pat_t *P, int r, part_t *p)
{
  MPI_Aint slot = P->rb * E.ext + P->gap, at = (MPI_Aint)r * slot;
  MPI_Datatype x, t;
  p->n = P->rc[r] * P->rb;
  if (P->vec_form) {
    int c = P->rc[r] ? (int)P->rc[r] : 1;
    CHK(MPI_Type_create_hvector(c, (int)P->rb, (MPI_Aint)np * slot, E.t, &t));
    p->ft = dt_wrap(t, 1, xsprintf("hvec(%d,%ld,%ld,E)", c, P->rb, (long)(np * slot)));
    p->ft = pin(p->ft, 0, (c - 1) * np * slot + P->rb * E.ext);   /* Open MPI pads it */
    p->disp += at;
    return;
  }
  CHK(MPI_Type_create_hindexed_block(1, (int)P->rb, &at, E.t, &x));
  CHK(MPI_Type_create_resized(x, 0, (MPI_Aint)np * slot, &t));
  CHK(MPI_Type_free(&x));
  p->ft = dt_wrap(t, 1, xsprintf("resized(hidxblk(1,%ld,[%ld],E),0,%ld)", P->rb, (long)at,
                                 (long)(np * slot)));
}

/* Grid coordinates of rank r, row-major. */
static void coords(const pat_t *P, int r, int *c)
{
  for (int d = P->nd - 1; d >= 0; d--) {
    c[d] = r % P->ps[d];
    r /= P->ps[d];
  }
}

static char *dims_str(const int *v, int n)
{
  long l[3];
  for (int i = 0; i < n; i++) l[i] = v[i];
  return list_str(l, n);
}

static void part_subarray(const pat_t *P, int r, part_t *p)
{
  int c[3], st[3];
  coords(P, r, c);
  p->n = 1;
  for (int d = 0; d < P->nd; d++) {
    st[d] = P->cut[d][c[d]];
    p->sub[d] = P->cut[d][c[d] + 1] - st[d];
    p->n *= p->sub[d];
  }
  if (p->n == 0) return;       /* no legal subarray: an empty part */
  MPI_Datatype t;
  CHK(MPI_Type_create_subarray(P->nd, P->gs, p->sub, st, P->order, E.t, &t));
  char *a = dims_str(P->gs, P->nd), *b = dims_str(p->sub, P->nd), *s = dims_str(st, P->nd);
  p->ft = dt_wrap(t, 1, xsprintf("subarray([%s],[%s],[%s],%s,E)", a, b, s,
                                 P->order == MPI_ORDER_C ? "C" : "F"));
  free(a); free(b); free(s);
}

static void part_darray(const pat_t *P, int r, part_t *p)
{
  MPI_Datatype t;
  CHK(MPI_Type_create_darray(np, r, P->nd, P->gs, P->dist, P->darg, P->ps, P->order, E.t, &t));
  char dn[4] = "";
  int dg[3];
  for (int d = 0; d < P->nd; d++) {
    dn[d] = P->dist[d] == MPI_DISTRIBUTE_BLOCK ? 'B' : P->dist[d] == MPI_DISTRIBUTE_CYCLIC ? 'C' : 'N';
    dg[d] = P->darg[d] == MPI_DISTRIBUTE_DFLT_DARG ? -1 : P->darg[d];
  }
  dn[P->nd] = 0;
  char *a = dims_str(P->gs, P->nd), *g = dims_str(dg, P->nd), *s = dims_str(P->ps, P->nd);
  p->ft = dt_wrap(t, 1, xsprintf("darray(%d,%d,[%s],%s,[%s],[%s],%s,E)", np, r, a, dn, g, s,
                                 P->order == MPI_ORDER_C ? "C" : "F"));
  free(a); free(g); free(s);
  p->n = (long)(p->ft.size / E.size);
}

static void part_blocks(const pat_t *P, int r, part_t *p)
{
  p->n = P->len[r];
  p->ft = leaf(&(gen_t){&S, &E, 0, 0});
  if (P->shared_view) p->off = P->pre[r];
  else p->disp += P->pre[r] * E.ext;
}

/* PnetCDF's view on its rank 0 (ncmpio_file_set_view): the file's header, then the part's
 * filetype at the part's displacement, in one struct at displacement 0, accessed from just
 * after the header. The struct keeps the part's bounds (a subarray's or darray's sticky lb
 * and ub), so its data reaches far past lb + extent and its copies interleave; only the
 * first copy is accessed. Done for parts that are exactly one filetype from its start. */
static void root_header(const pat_t *P, part_t *p)
{
  if (p->off != 0 || p->n == 0 || (MPI_Count)p->n * E.size != p->ft.size) return;
  MPI_Datatype h, t;
  CHK(MPI_Type_contiguous((int)(P->hdr * E.size), MPI_BYTE, &h));   /* no bounds of its own */
  int bl[2] = {1, 1};
  MPI_Aint d[2] = {0, (MPI_Aint)p->disp};
  MPI_Datatype ts[2] = {h, p->ft.t};
  CHK(MPI_Type_create_struct(2, bl, d, ts, &t));
  CHK(MPI_Type_free(&h));
  char *desc = xsprintf("struct([contig(%ld,BYTE)@0,%s@%lld])", (long)(P->hdr * E.size), p->ft.desc,
                        (long long)p->disp);
  dt_free(&p->ft);
  p->ft = dt_wrap(t, 1, desc);
  p->disp = 0;
  p->off = P->hdr;
}

/* Rank r's part; an empty one (chosen, or a decomposition that leaves r nothing) accesses
 * nothing, through a zero-size filetype or with count 0. */
static part_t part_for(const pat_t *P, int r)
{
  part_t p;
  memset(&p, 0, sizeof p);
  p.disp = P->disp;
  p.ft.t = MPI_DATATYPE_NULL;
  switch (P->kind) {
  case P_HPIO: case P_INTERLEAVED: part_hpio(P, r, &p); break;
  case P_SUBARRAY: part_subarray(P, r, &p); break;
  case P_DARRAY: part_darray(P, r, &p); break;
  default: part_blocks(P, r, &p); break;
  }
  if (p.ft.t == MPI_DATATYPE_NULL) p.ft = zero_type();
  else if (p.n == 0 && P->zero_ft && P->kind != P_DARRAY) { dt_free(&p.ft); p.ft = zero_type(); }
  if (p.ft.size == 0 && !O.zero_views) {   /* pario refuses them (README.md): count 0 */
    dt_free(&p.ft);
    p.ft = leaf(&(gen_t){&S, &E, 0, 0});
  }
  if (p.ft.size == 0) p.ft.tlb = p.ft.text = 0;   /* the hosts' true bounds of nothing differ */
  if (P->hdr && r == P->hdr_rank) root_header(P, &p);
  return p;
}

/* ------------------------------------------------------------------------------------------ */
/* Views, memory layouts, accesses. */

static void coll_set_view(const char *how, const part_t *p)
{
  if (F.dirty) sync_point("view");
  free_view();
  F.etype = E;
  F.etype.owned = 0;
  F.etype.desc = xsprintf("%s", E.desc);
  F.ftype = p->ft;
  F.disp = p->disp;
  F.writable = 1;
  CHK(MPI_Type_commit(&F.ftype.t));
  MPI_Info info = coll_info(0);
  log_view(how);
  logf_(" hints={%s}", hints_desc);
  int rc = MPI_File_set_view(F.fh, F.disp, F.etype.t, F.ftype.t, "native", info);
  CHK(MPI_Info_free(&info));
  finish_view(rc);
}

/* A buffer moving n etypes: contiguous, strided, the local block inside ghost cells
 * (subarray), or a random memory type from the generator (which may move a few less). */
static mbuf_t mem_for(const part_t *p, long n, int write)
{
  mbuf_t m;
  int k = n == 0 ? 0 : (int)rint_(&R, 0, 3);
  if (k == 2 && !(p->sub[0] && n == p->n)) k = 1;
  if (k == 3) return make_mbuf(n, write);
  MPI_Datatype t;
  m.count = 1;
  if (k == 0) {
    m.mt = leaf(&(gen_t){&R, &E, 1, 0});
    m.count = (int)n;
  } else if (k == 1) {
    MPI_Aint stride = E.ext + rint_(&R, 1, 2 * E.ext);
    CHK(MPI_Type_create_hvector((int)n, 1, stride, E.t, &t));
    m.mt = dt_wrap(t, 1, xsprintf("hvec(%ld,1,%ld,E)", n, (long)stride));
  } else {
    int nd = p->sub[2] ? 3 : 2, h = (int)rint_(&R, 1, 2), big[3], st[3];
    for (int d = 0; d < nd; d++) { big[d] = p->sub[d] + 2 * h; st[d] = h; }
    CHK(MPI_Type_create_subarray(nd, big, p->sub, st, rpct(&R, 50) ? MPI_ORDER_C :
                                 MPI_ORDER_FORTRAN, E.t, &t));
    m.mt = dt_wrap(t, 1, xsprintf("ghost%d(%d,E)", nd, h));
  }
  if (m.mt.owned) CHK(MPI_Type_commit(&m.mt.t));
  mbuf_alloc(&m, write);
  return m;
}

static void seek_to(long opno, int v, MPI_Offset off)
{
  if (!uses_ptr(v)) return;
  int rc = MPI_File_seek(F.fh, off, MPI_SEEK_SET);
  logf_("#%ld seek(SET,%lld) -> %s\n", opno, (long long)off, errname(rc));
}

/* A read of n etypes from p->off through the current view; returns the bytes read and the
 * packed data (caller frees) if asked. */
static int read_part(long opno, int v, const part_t *p, long n, unsigned char **data)
{
  mbuf_t m = mem_for(p, n, 0);
  seek_to(opno, v, p->off);
  int b = access_run(opno, 0, v, p->off, &m);
  if (data) {
    int len;
    *data = pack_all(&m, &len);
  }
  free_mbuf(&m);
  return b;
}

static int read_variant(void)
{
  return rpct(&S, 80) ? (int)rint_(&S, W_ALL, W_AT_BEGIN) : (int)rint_(&S, W_PTR, W_IAT);
}

static void self_fail(long opno, const char *fmt, long a, long b)
{
  if (self_bad++ < 20) {
    fprintf(stderr, "difftest[%d]: SELF-CHECK MISMATCH at epoch %ld: ", me, opno);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
  }
}

/* rank 0 logs the whole file's checksum after a write step (everything synced): a byte
 * outside every view that changed shows up at the step that changed it */
static void log_file_sum(long opno)
{
  if (me != 0) return;
  long n;
  unsigned char *b = slurp(O.file, &n);
  logf_("#%ld file size=%ld fnv=%016llx\n", opno, n, (unsigned long long)fnv(b, (size_t)n));
  free(b);
}

/* Write this rank's part (collectively, or independently one rank at a time: ROMIO's data
 * sieving rewrites holes without locks), sync, and read it back with another variant and
 * memory layout: the bytes must be the ones written. */
static void write_step(long opno, part_t *p)
{
  int coll = rpct(&S, 75);
  int v = coll ? (int)rint_(&S, W_ALL, W_AT_BEGIN) : (int)rint_(&S, W_PTR, W_IAT);
  int rv = read_variant();
  CHK(MPI_Barrier(MPI_COMM_WORLD));
  mbuf_t m = mem_for(p, p->n, 1);
  int wlen, wb = -1;
  unsigned char *wdata = pack_all(&m, &wlen);
  for (int r = 0; r < np; r++) {
    if (coll || r == me) {
      seek_to(opno, v, p->off);
      wb = access_run(opno, 1, v, p->off, &m);
    }
    if (coll) break;
    CHK(MPI_Barrier(MPI_COMM_WORLD));
  }
  free_mbuf(&m);
  F.dirty = 1;
  if (M.on) model_check_file(wnames[v]);
  else sync_point("write");
  log_file_sum(opno);
  if (wb != wlen) self_fail(opno, "wrote %ld bytes of %ld", wb, wlen);
  unsigned char *rdata;
  int rb = read_part(opno, rv, p, p->n, &rdata);
  long k = 0, lim = rb < wb ? rb : wb;
  while (k < lim && rdata[k] == wdata[k]) k++;
  if (k < lim) self_fail(opno, "read back: byte %ld of %ld differs", k, lim);
  free(rdata);
  free(wdata);
}

/* Every rank reads another rank's part (reads may overlap). */
static void cross_read(long opno, const pat_t *P)
{
  int k = (int)rint_(&S, 1, np > 1 ? np - 1 : 1), rv = read_variant();
  part_t q = part_for(P, (me + k) % np);
  coll_set_view("other", &q);
  read_part(opno, rv, &q, q.n, NULL);
}

/* The pattern moved so that it crosses end of file, read with up to half again as much. */
static void eof_read(long opno, const pat_t *P)
{
  int rv = read_variant();
  long shift = (long)F.size - (long)P->disp - rint_(&S, 1, P->span > 1 ? P->span : 1);
  if (shift < -(long)P->disp) shift = -(long)P->disp;
  part_t q = part_for(P, me);
  q.disp += shift;
  long n = q.ft.size ? q.n + rint_(&R, 0, q.n / 2 + 1) : 0;
  coll_set_view("eof", &q);
  read_part(opno, rv, &q, n, NULL);
}

/* --revisit: back to the epoch's pattern view twice (built afresh: the same content), each
 * time a collective write or read under it and perhaps another rank's view in between, as
 * HDF5 and PnetCDF return to views they set before (pario's view cache, issue 34). */
static void revisit(long opno, const pat_t *P)
{
  for (int k = 0; k < 2; k++) {
    part_t q = part_for(P, me);
    coll_set_view(pnames[P->kind], &q);
    if (rpct(&S, 50)) write_step(opno, &q);
    else read_part(opno, read_variant(), &q, q.n, NULL);
    if (np > 1 && rpct(&S, 50)) cross_read(opno, P);
  }
}

static void epoch(long e)
{
  if (rpct(&S, 40)) {
    coll_reopen();
  } else if (rpct(&S, 30)) {
    MPI_Info info = coll_info(0);
    int rc = MPI_File_set_info(F.fh, info);
    CHK(MPI_Info_free(&info));
    logf_("#%ld set_info hints={%s} -> %s\n", e, hints_desc, errname(rc));
  }
  E = make_etype(5);
  pat_t P;
  draw(&P);
  logf_("#%ld pattern %s disp=%lld span=%ld etype=%s\n", e, pnames[P.kind], (long long)P.disp,
        P.span, E.desc);
  part_t p = part_for(&P, me);
  coll_set_view(pnames[P.kind], &p);
  if (rpct(&S, 85)) write_step(e, &p);
  else read_part(e, read_variant(), &p, p.n, NULL);
  if (np > 1 && rpct(&S, 50)) cross_read(e, &P);
  if (rpct(&S, 40)) eof_read(e, &P);
  if (O.revisit) revisit(e, &P);
  free_view();          /* E's handle goes with the epoch; the default view until the next */
  F.etype = dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  F.ftype = dt_wrap(MPI_BYTE, 0, xsprintf("BYTE"));
  dt_free(&E);
}

/* --pattern coll: O.ops epochs on a file opened with random collective hints. */
void coll_run(void)
{
  if (np > MAXNP) DIE("--pattern coll: at most %d ranks", MAXNP);
  file_open_with(coll_info(1));
  for (long e = 0; e < O.ops; e++) {
    cur_op = e;
    epoch(e);
    fflush(LOG);
  }
  if (F.dirty) sync_point("end");
  M.bad += self_bad;
}
