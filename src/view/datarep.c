/* external32's derived types: the typed-run flattening of a derived type with its native and
 * external32 layouts (on the blocks of typewalk.c's decoder), and the cursors that convert
 * a buffer's data through those runs a piece at a time (datarep.h says what and why). The
 * scalars' table and value conversion are ext32conv.c's. */
#include "view/datarep.h"
#include "core/common.h"
#include "view/ext32.h"
#include "view/typemap.h"
#include "view/typewalk.h"

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

static void node_free(node *c) { free(c->r); }

/* The old type of the blocks being laid out, walked when a block names another (a struct's
 * members, one after the other). */
typedef struct layout {
  node *b;
  const pario_decoded *d;
  node c;
  int ci; /* the index of c's type in d->types, -1 before the first */
} layout;

static int child(layout *l, int i) {
  if (i == l->ci) return MPI_SUCCESS;
  node_free(&l->c);
  memset(&l->c, 0, sizeof l->c);
  l->c.sz = l->b->sz;
  l->ci = i;
  walk(l->d->types[i], &l->c);
  return l->c.err;
}

/* A block of the decoder: its copies in both layouts, displacements in extents scaled by the
 * old type's native and external32 extents, those in bytes taken as they are. */
static int on_block(const pario_block *k, void *ctx) {
  layout *l = ctx;
  node *b = l->b;
  if ((b->err = child(l, k->child)) != MPI_SUCCESS) return b->err;
  copies(b, &l->c, k->units * l->c.nextent + k->bytes, k->units * l->c.eextent + k->bytes, k->count);
  return b->err;
}

static void derived(const pario_decoded *d, node *b) {
  layout l = {b, d, {0}, -1};
  /* the first old type is walked even when no block copies it: its errors are the type's */
  if (d->nd > 0) b->err = child(&l, 0);
  if (!b->err) {
    int rc = pario_type_blocks(d, on_block, &l);
    if (!b->err) b->err = rc;
  }
  const node *c = &l.c;
  if (!b->err && d->comb == MPI_COMBINER_RESIZED) /* bounds in bytes, as given */
    b->bounded = 1, b->elo = d->addrs[0], b->ehi = d->addrs[0] + d->addrs[1];
  if (!b->err && (d->comb == MPI_COMBINER_SUBARRAY || d->comb == MPI_COMBINER_DARRAY)) {
    /* The array's bounds, a whole number of old-type extents: scale them. */
    if (c->nextent == 0 || b->nlb % c->nextent || b->nextent % c->nextent) {
      b->err = MPI_ERR_TYPE;
    } else {
      b->bounded = 1;
      b->elo = b->nlb / c->nextent * c->eextent;
      b->ehi = b->elo + b->nextent / c->nextent * c->eextent;
    }
  }
  if (d->comb == MPI_COMBINER_DUP) b->bounded = 1, b->elo = c->elb, b->ehi = c->elb + c->eextent;
  b->elb = b->bounded ? b->elo : 0;
  b->eextent = b->bounded ? b->ehi - b->elo : 0;
  node_free(&l.c);
}

static void walk(MPI_Datatype t, node *b) {
  MPI_Count lb, extent;
  if (PMPI_Type_get_extent_x(t, &lb, &extent) != MPI_SUCCESS) {
    b->err = MPI_ERR_TYPE;
    return;
  }
  b->nlb = lb;
  b->nextent = extent;
  pario_decoded d;
  int rc = pario_type_decode(t, &d);
  if (rc != MPI_SUCCESS) b->err = rc;
  else if (pario_comb_is_leaf(d.comb)) leaf(t, b);
  else derived(&d, b);
  pario_decoded_free(&d);
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
