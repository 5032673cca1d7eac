/* difftest.h: what the parts of difftest share: options, random streams, datatypes with
 * their bounds, the file state, buffers, the model, logging, and the access machinery of
 * difftest.c, used by the collective-pattern mode (collective.c). */
#ifndef DIFFTEST_H
#define DIFFTEST_H
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { uint64_t s; } rng_t;


typedef struct {
  unsigned long long seed;
  long ops;
  const char *file;
  const char *log;
  long max_file;      /* bytes: views and offsets are chosen to keep the file below this */
  int portable;       /* avoid corners where one native MPI-IO is known to be wrong */
  int turns;          /* 1: independent writes always one rank at a time */
  int expect;         /* 0: don't care, 1: expect pario to serve MPI-IO, 2: expect native */
  int verbose;
  long probe;
  int coll;           /* --pattern coll: the collective patterns of collective.c */
  int eof_strict;     /* never drop reads past end of file (runs judged by the model) */
  int zero_views;     /* --pattern coll: empty ranks may get zero-size filetypes */
  int root_header;    /* --pattern coll: one rank's view starts with a header (PnetCDF's) */
  int revisit;        /* --pattern coll: each epoch returns to its pattern's view (a view cache) */
} opts_t;


#define DIE(...) do { fprintf(stderr, "difftest[%d]: ", me); fprintf(stderr, __VA_ARGS__); \
                      fputc('\n', stderr); MPI_Abort(MPI_COMM_WORLD, 3); } while (0)
#define CHK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) DIE("%s failed (%d) at line %d", \
                      #call, rc_, __LINE__); } while (0)


typedef struct dt_s {
  MPI_Datatype t;
  int owned;                  /* derived: free when done */
  MPI_Aint lb, ext, tlb, text;
  MPI_Count size;
  int named;                  /* predefined */
  char *desc;
} dt_t;


typedef struct {
  rng_t *r;
  const dt_t *unit;         /* leaf type: the etype */
  int mem, overlap;
} gen_t;


typedef struct {
  MPI_File fh;
  int open;
  dt_t etype, ftype;      /* ftype.t may already be freed (kept bounds and description) */
  MPI_Offset disp;
  int writable;           /* views are disjoint between ranks: writes allowed */
  MPI_Offset size;        /* file size: writes never pass it; set_size and growth change it */
  long per_ft;            /* etypes per filetype */
  long maxpos;            /* view offsets below this stay under max_file */
  int atomic;
  int dirty;              /* writes since the last sync-barrier-sync */
} state_t;


typedef struct {
  dt_t mt;              /* memory type */
  int count;
  unsigned char *alloc; /* guard | span | guard */
  size_t alen;
  void *buf;            /* what is passed to MPI */
} mbuf_t;

enum { GUARD = 16 };


typedef struct {
  int on;
  unsigned char *img, *mine;  /* file image, and the bytes this rank wrote since the last merge */
  long cap, size;
  long *map, mapn;            /* file offset (from disp) of each data byte of one filetype */
  MPI_Aint ftext;
  long bad;
} model_t;


enum { W_PTR, W_AT, W_IPTR, W_IAT, W_ALL, W_AT_ALL, W_IALL, W_IAT_ALL, W_BEGIN, W_AT_BEGIN };

extern opts_t O;
extern int me, np;
extern FILE *LOG;
extern rng_t S, R;          /* shared and per-rank streams */
extern int is_ompi;         /* host MPI is Open MPI: OMPIO as native */
extern int q_ompio, q_romio; /* avoid corners where OMPIO / ROMIO are wrong (see README) */
extern long cur_op;         /* for messages */
extern state_t F;
extern model_t M;
extern char hints_desc[512];
extern const char *wnames[], *rnames[];

/* random numbers */
uint64_t mix64(uint64_t z);
uint64_t rnext(rng_t *r);
long rint_(rng_t *r, long lo, long hi);
int rpct(rng_t *r, int pct);
int rweighted(rng_t *r, const int *w, int n);

/* logging and strings */
void logf_(const char *fmt, ...);
char *xsprintf(const char *fmt, ...);
char *list_str(const long *v, int n);
const char *errname(int rc);
uint64_t fnv(const unsigned char *p, size_t n);
void log_status(int rc, MPI_Status *st, const dt_t *mt, MPI_Count esize);

/* datatypes */
dt_t dt_wrap(MPI_Datatype t, int owned, char *desc);
void dt_free(dt_t *d);
MPI_Aint dt_tub(const dt_t *d);
dt_t pin(dt_t d, MPI_Aint lb, MPI_Aint ub);
dt_t shift0(dt_t c);
dt_t gen(const gen_t *g, int depth, MPI_Aint budget);
dt_t leaf(const gen_t *g);
dt_t make_etype(int maxk);

/* the file and views */
unsigned char pattern(uint64_t i);
void prefill(long size);
unsigned char *slurp(const char *path, long *n);
void set_hint(MPI_Info info, const char *k, const char *v);
void file_open_with(MPI_Info info);
void sync_point(const char *why);
void log_view(const char *how);
void finish_view(int rc);
void free_view(void);

/* buffers, accesses, the model */
mbuf_t make_mbuf(long want, int for_write);
void mbuf_alloc(mbuf_t *m, int for_write);
void free_mbuf(mbuf_t *m);
unsigned char *pack_all(const mbuf_t *m, int *len);
int do_access(int write, int v, MPI_Offset off, mbuf_t *m, MPI_Status *st);
int uses_ptr(int v);
int past_eof(MPI_Offset off, long n);
int eof_quirks(int v, MPI_Offset off, const mbuf_t *m, int *drop);
void log_read_sums(const mbuf_t *m, int bytes, MPI_Offset off, int rc);
int access_run(long opno, int write, int v, MPI_Offset off, mbuf_t *m);
void model_view(MPI_Datatype ft, const dt_t *d);
void model_merge(void);
void model_check_file(const char *what);

/* the run */
void check_provider(void);
void open_log(void);
void final_report(void);
void coll_run(void);        /* collective.c: --pattern coll */

#endif
