/* Data representations: the registry (external32 built in, user-defined ones from
 * MPI_Register_datarep), layouts of datatypes in a representation, and the conversion session
 * the data path, the collective exchange and the shared pointer's kept writes use. */
#include "core/rep.h"
#include "core/common.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pario_rep ext32 = {.name = "external32", .kind = PARIO_REP_EXT32};

typedef struct entry {
  pario_rep rep;
  struct entry *next;
} entry;

/* Registered representations live until the process ends: views and operations in flight
 * point at them, and the standard has no way to unregister one. */
static entry *registry;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the registry and the typemaps' lists */

static const pario_rep *find(const char *name) {
  if (!strcmp(name, "external32")) return &ext32;
  for (entry *e = registry; e; e = e->next)
    if (!strcmp(e->rep.name, name)) return &e->rep;
  return NULL;
}

int pario_rep_lookup(const char *name, const pario_rep **rep, const char *op, const char *file) {
  *rep = NULL;
  if (!strcmp(name, "native") || !strcmp(name, "internal")) return MPI_SUCCESS;
  pthread_mutex_lock(&lock);
  *rep = find(name);
  pthread_mutex_unlock(&lock);
  if (*rep) return MPI_SUCCESS;
  return pario_err(MPI_ERR_UNSUPPORTED_DATAREP, op, file, 0,
                   "data representation \"%.64s\" is unknown (native, internal, external32 and registered ones are)", name);
}

int pario_rep_register(const pario_rep *proto, const char *op) {
  size_t len = strnlen(proto->name, sizeof proto->name);
  if (len == 0 || len >= sizeof proto->name)
    return pario_err(MPI_ERR_ARG, op, NULL, 0, "the data representation's name is empty or longer than %d characters",
                     MPI_MAX_DATAREP_STRING - 1);
  entry *e = calloc(1, sizeof *e);
  if (!e) return pario_err(MPI_ERR_NO_MEM, op, NULL, 0, "out of memory");
  e->rep = *proto;
  e->rep.kind = PARIO_REP_USER;
  pthread_mutex_lock(&lock);
  int dup = find(proto->name) || !strcmp(proto->name, "native") || !strcmp(proto->name, "internal");
  if (!dup) {
    e->next = registry;
    registry = e;
  }
  pthread_mutex_unlock(&lock);
  if (!dup) return MPI_SUCCESS;
  free(e);
  return pario_err(MPI_ERR_DUP_DATAREP, op, NULL, 0, "data representation \"%.64s\" is already defined", proto->name);
}

/* ---- layouts ---- */

/* The file size of a basic type: the representation's extent callback. */
static int user_size(MPI_Datatype basic, MPI_Offset *bytes, void *ctx) {
  const pario_rep *r = ctx;
  MPI_Aint x = 0;
  if (!r->extent) return MPI_ERR_CONVERSION;
  if (r->extent(basic, &x, r->extra) != MPI_SUCCESS) return MPI_ERR_CONVERSION;
  *bytes = x;
  return MPI_SUCCESS;
}

static int type_name(MPI_Datatype t, char *name) {
  int len = 0;
  name[0] = 0;
  PMPI_Type_get_name(t, name, &len);
  if (!len) strcpy(name, "(derived)");
  return len;
}

static int map_error(int rc, const pario_rep *rep, MPI_Datatype type, const char *op, const char *file) {
  char name[MPI_MAX_OBJECT_NAME];
  int cls = pario_err_class(rc);
  if (cls == MPI_ERR_UNSUPPORTED_DATAREP) return rc; /* names the basic type already */
  type_name(type, name);
  if (cls == MPI_ERR_CONVERSION)
    return pario_err(cls, op, file, 0, "the extent function of data representation \"%.64s\" failed for datatype %s",
                     rep->name, name);
  return pario_err(cls, op, file, 0, "datatype %s has no layout in data representation \"%.64s\"", name, rep->name);
}

static int build(const pario_rep *rep, MPI_Datatype type, pario_ext32_map **m) {
  if (rep->kind == PARIO_REP_EXT32) return pario_ext32_map_build(type, m);
  pario_ext32_sizer sz = {user_size, (void *)rep};
  return pario_ext32_map_build_sized(type, &sz, m);
}

int pario_rep_map(const pario_rep *rep, MPI_Datatype type, const pario_typemap *tm,
                  const pario_ext32_map **out, const char *op, const char *file) {
  pario_typemap *t = (pario_typemap *)tm; /* the cache slots are written once, atomically */
  if (rep->kind == PARIO_REP_EXT32) {
    pario_ext32_map *m = __atomic_load_n(&t->x32, __ATOMIC_ACQUIRE), *none = NULL;
    if (!m) {
      int rc = build(rep, type, &m);
      if (rc != MPI_SUCCESS) return map_error(rc, rep, type, op, file);
      if (!__atomic_compare_exchange_n(&t->x32, &none, m, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        pario_ext32_map_free(m); /* another thread was first */
        m = none;
      }
    }
    *out = m;
    return MPI_SUCCESS;
  }
  pthread_mutex_lock(&lock);
  pario_ext32_keyed *k = t->xuser;
  while (k && k->key != rep) k = k->next;
  int rc = MPI_SUCCESS;
  if (!k) { /* the extent callback runs under the lock: it must not do MPI-IO (the standard's rule) */
    pario_ext32_map *m = NULL;
    rc = build(rep, type, &m);
    if (rc == MPI_SUCCESS && !(k = malloc(sizeof *k))) {
      pario_ext32_map_free(m);
      rc = MPI_ERR_NO_MEM;
    }
    if (rc == MPI_SUCCESS) {
      *k = (pario_ext32_keyed){rep, m, t->xuser};
      t->xuser = k;
    }
  }
  pthread_mutex_unlock(&lock);
  if (rc != MPI_SUCCESS) return map_error(rc, rep, type, op, file);
  *out = k->m;
  return MPI_SUCCESS;
}

int pario_rep_typemap(const pario_rep *rep, MPI_Datatype type, const pario_typemap *tm,
                      pario_typemap **out, const char *op, const char *file) {
  const pario_ext32_map *m;
  int rc = pario_rep_map(rep, type, tm, &m, op, file);
  if (rc == MPI_SUCCESS && pario_ext32_typemap(m, out) != MPI_SUCCESS)
    rc = pario_err(MPI_ERR_NO_MEM, op, file, 0, "out of memory");
  return rc;
}

int pario_rep_data_size(const pario_view *v, MPI_Datatype type, const pario_typemap *tm, MPI_Count count,
                        MPI_Offset *n, const char *op, const char *file) {
  const pario_ext32_map *m;
  if (!v->rep || count == 0 || tm->size == 0) {
    *n = (MPI_Offset)count * tm->size;
    return MPI_SUCCESS;
  }
  int rc = pario_rep_map(v->rep, type, tm, &m, op, file);
  if (rc != MPI_SUCCESS) return rc;
  if (m->esize > 0 && count > LLONG_MAX / m->esize)
    return pario_err(MPI_ERR_COUNT, op, file, 0, "count %lld overflows", (long long)count);
  *n = (MPI_Offset)count * m->esize;
  return MPI_SUCCESS;
}

MPI_Count pario_rep_native_bytes(const pario_view *v, MPI_Datatype type, MPI_Count count, MPI_Count fbytes) {
  const pario_typemap *tm;
  const pario_ext32_map *m;
  if (!v->rep || fbytes <= 0) return fbytes;
  if (pario_typemap_get(type, &tm) != MPI_SUCCESS) return 0;
  if (pario_rep_map(v->rep, type, tm, &m, NULL, NULL) != MPI_SUCCESS) return 0;
  if (fbytes >= (MPI_Count)count * m->esize) return (MPI_Count)count * tm->size;
  MPI_Offset nat;
  pario_ext32_locate(m, fbytes, &nat, NULL);
  return nat;
}

/* ---- conversion sessions ---- */

/* Whether the bytes move as they are in memory: user representations without a conversion
 * function for this direction (MPI_CONVERSION_FN_NULL). */
static int user_fn(const pario_rep *r, int wr) {
#ifdef PARIO_HAVE_LARGE_COUNT
  if (r->large) return wr ? r->wr_c != NULL : r->rd_c != NULL;
#endif
  return wr ? r->wr != NULL : r->rd != NULL;
}

int pario_conv_init(pario_conv *c, const pario_rep *rep, void *buf, MPI_Datatype type, const pario_typemap *tm,
                    MPI_Offset pos, const char *op, const char *file) {
  *c = (pario_conv){.rep = rep, .buf = buf, .type = type, .tm = tm, .op = op, .file = file, .pos = pos};
  int rc = pario_rep_map(rep, type, tm, &c->m, op, file);
  if (rc != MPI_SUCCESS) return rc;
  for (size_t i = 0; i < c->m->nruns; i++) c->maxitem = PARIO_MAX(c->maxitem, (MPI_Offset)c->m->runs[i].xsize);
  if (rep->kind == PARIO_REP_EXT32) {
    pario_ext32_cursor_init(&c->cur, c->m, buf, pos);
    return MPI_SUCCESS;
  }
  if (pos != 0) return pario_err(MPI_ERR_INTERN, op, file, 0, "a user representation's conversion must start at an item");
  return MPI_SUCCESS;
}

/* Whole items from (run, k) that fit in max bytes: *items of them, returns their bytes; with
 * adv the session moves past them. */
static MPI_Offset items_in(pario_conv *c, MPI_Offset max, MPI_Offset *items, int adv) {
  const pario_ext32_map *m = c->m;
  size_t run = c->run;
  MPI_Offset k = c->k, bytes = 0, n = 0;
  if (m->esize == 0 || m->nruns == 0) return *items = 0;
  for (;;) {
    const pario_ext32_run *r = &m->runs[run];
    MPI_Offset avail = r->count - k, fit = r->xsize ? (max - bytes) / r->xsize : avail;
    MPI_Offset take = PARIO_MIN(avail, fit);
    bytes += take * r->xsize;
    n += take;
    k += take;
    if (take < avail) break;
    k = 0;
    if (++run == m->nruns) run = 0;
  }
  if (adv) c->run = run, c->k = k;
  *items = n;
  return bytes;
}

MPI_Offset pario_conv_chunk(const pario_conv *c, MPI_Offset max) {
  if (c->rep->kind == PARIO_REP_EXT32) return max;
  MPI_Offset items;
  pario_conv tmp = *c;
  return items_in(&tmp, max, &items, 0);
}

static int conv_error(const pario_conv *c, int wr, int code) {
  char name[MPI_MAX_OBJECT_NAME];
  type_name(c->type, name);
  return pario_err(MPI_ERR_CONVERSION, c->op, c->file, 0,
                   "the %s conversion function of data representation \"%.64s\" failed (error %d) on datatype %s, "
                   "items from %lld", wr ? "write" : "read", c->rep->name, code, name, (long long)c->item);
}

/* Call the user's function for items items between memory and fb. */
static int user_call(pario_conv *c, int wr, void *fb, MPI_Offset items) {
  const pario_rep *r = c->rep;
  int rc;
#ifdef PARIO_HAVE_LARGE_COUNT
  if (r->large) {
    rc = (wr ? r->wr_c : r->rd_c)(c->buf, c->type, (MPI_Count)items, fb, c->item, r->extra);
    return rc == MPI_SUCCESS ? rc : conv_error(c, wr, rc);
  }
#endif
  if (items > INT_MAX) return pario_err(MPI_ERR_COUNT, c->op, c->file, 0, "%lld items in one conversion", (long long)items);
  rc = (wr ? r->wr : r->rd)(c->buf, c->type, (int)items, fb, c->item, r->extra);
  return rc == MPI_SUCCESS ? rc : conv_error(c, wr, rc);
}

/* MPI_CONVERSION_FN_NULL: "the requested data access using the native data representation",
 * which pario can only do where each item's file size is its native size. */
static int user_raw(pario_conv *c, int wr, void *fb, MPI_Offset n) {
  for (size_t i = 0; i < c->m->nruns; i++)
    if (c->m->runs[i].xsize != c->m->runs[i].isize)
      return pario_err(MPI_ERR_CONVERSION, c->op, c->file, 0,
                       "data representation \"%.64s\" has no %s conversion function, and its file extent of a "
                       "basic type differs from the native size", c->rep->name, wr ? "write" : "read");
  pario_mcursor mc;
  pario_mcursor_init_at(&mc, c->buf, c->tm, c->pos);
  if (wr) pario_mcursor_pack(&mc, fb, n);
  else pario_mcursor_unpack(&mc, fb, n);
  return MPI_SUCCESS;
}

static int user_move(pario_conv *c, int wr, void *fb, MPI_Offset n) {
  MPI_Offset items, bytes = items_in(c, n, &items, 1);
  int rc = items == 0 ? MPI_SUCCESS : user_fn(c->rep, wr) ? user_call(c, wr, fb, items) : user_raw(c, wr, fb, bytes);
  c->item += items;
  c->pos += bytes;
  return rc;
}

int pario_conv_pack(pario_conv *c, void *out, MPI_Offset n) {
  if (c->rep->kind == PARIO_REP_EXT32) return pario_ext32_pack(&c->cur, out, n);
  return user_move(c, 1, out, n);
}

int pario_conv_unpack(pario_conv *c, const void *in, MPI_Offset n) {
  if (c->rep->kind == PARIO_REP_EXT32) return pario_ext32_unpack(&c->cur, in, n);
  return user_move(c, 0, (void *)in, n);
}
