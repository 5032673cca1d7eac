/* Event recording for tracing (PARIO_TRACE=DIR or the hint pario_trace): every layer calls
 * these macros. Off, each costs one predictable branch on pario_trace_on; on, an event is a
 * fixed-size record in a per-thread buffer, written as JSON lines (docs/trace-format.md). */
#ifndef PARIO_TRACE_H
#define PARIO_TRACE_H

#include <stdint.h>
#include <time.h>

/* Categories: the "cat" field of the trace format. */
enum {
  PARIO_TC_API,     /* MPI_File_* calls */
  PARIO_TC_COLL,    /* collective plan, two-phase rounds, exchanges, waits */
  PARIO_TC_SIEVE,   /* data-sieving windows */
  PARIO_TC_SFP,     /* shared file pointer updates, ordered-call waits */
  PARIO_TC_ASYNC,   /* nonblocking jobs */
  PARIO_TC_DRIVER,  /* storage driver operations */
  PARIO_TC_VIEW,    /* datatype flattening */
  PARIO_TC_NET,     /* server: network receive / send */
  PARIO_TC_STORAGE, /* server: storage operations */
  PARIO_TC_COUNT
};

/* One numeric argument; keys are string literals (they are written at flush time). */
typedef struct pario_trace_arg {
  const char *key;
  int64_t val;
} pario_trace_arg;

enum { PARIO_TRACE_NARGS = 10 };

extern int pario_trace_on;

#define PARIO_TRACING() __builtin_expect(pario_trace_on, 0)
#define PARIO_TA(k, v) ((pario_trace_arg){(k), (int64_t)(v)})

/* CLOCK_MONOTONIC in ns (the same clock as core's pario_mono_ns). */
static inline uint64_t pario_trace_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Start of a span: 0 when tracing is off (a span whose start is 0 is dropped). */
#define PARIO_TRACE_T0() (PARIO_TRACING() ? pario_trace_now() : 0)

/* Record the span [t0, now). skey/sval: one string argument (string literals only, or
 * strings that live until MPI_Finalize), NULL for none. flow: 0, or a request id that links
 * this span to the server operations it caused. The variadic part is PARIO_TA(key, value)
 * pairs, at most PARIO_TRACE_NARGS. */
void pario_trace_span_(int cat, const char *name, uint64_t t0, uint64_t flow, const char *skey,
                       const char *sval, const pario_trace_arg *a, int na);
void pario_trace_instant_(int cat, const char *name, const char *skey, const char *sval,
                          const pario_trace_arg *a, int na);
void pario_trace_counter_(const char *name, int64_t value);

#define PARIO_TRACE_SPANX(cat, name, t0, flow, skey, sval, ...)                                      \
  do {                                                                                             \
    if (PARIO_TRACING()) {                                                                         \
      pario_trace_arg a_[] = {{0}, __VA_ARGS__};                                                   \
      pario_trace_span_((cat), (name), (t0), (flow), (skey), (sval), a_ + 1,                       \
                        (int)(sizeof a_ / sizeof a_[0]) - 1);                                      \
    }                                                                                              \
  } while (0)
#define PARIO_TRACE_SPAN(cat, name, t0, ...) PARIO_TRACE_SPANX(cat, name, t0, 0, NULL, NULL, __VA_ARGS__)
#define PARIO_TRACE_INSTANT(cat, name, skey, sval, ...)                                              \
  do {                                                                                             \
    if (PARIO_TRACING()) {                                                                         \
      pario_trace_arg a_[] = {{0}, __VA_ARGS__};                                                   \
      pario_trace_instant_((cat), (name), (skey), (sval), a_ + 1, (int)(sizeof a_ / sizeof a_[0]) - 1); \
    }                                                                                              \
  } while (0)
#define PARIO_TRACE_COUNTER(name, value)                                                             \
  do {                                                                                             \
    if (PARIO_TRACING()) pario_trace_counter_((name), (int64_t)(value));                           \
  } while (0)

/* Request ids (flows): a new id unique in the job (world rank in the top bits). */
uint64_t pario_trace_flow_new(void);

/* ---- process-wide state, set by the tracing lifecycle layer (src/tracelayer) ---- */

/* Turn tracing on, writing into dir, made with its missing parents (the first directory
 * given wins). 0, or an errno value when the directory cannot be made. */
int pario_trace_enable(const char *dir);
const char *pario_trace_dir(void);
/* This process's MPI_COMM_WORLD rank (names its file). */
void pario_trace_set_rank(int world_rank);
/* Offset that maps this process's clock to rank 0's (t0 = t + offset), and its error bound
 * (-1: not measured). */
void pario_trace_set_clock(int64_t offset_ns, int64_t err_ns);
/* A server's clock offset, measured by this client through the protocol's ping: server time
 * + offset_ns = this client's time (the recorder adds this client's own offset). */
void pario_trace_server_clock(const char *server_name, int64_t offset_ns, int64_t err_ns);
/* The record-time filter (filter.h) from spec, unless one is set already; from names where it
 * came from ("PARIO_TRACE_FILTER", "hint pario_trace_filter") for the one stderr line a bad
 * spec gets. 0, or -1 (no filter). */
int pario_trace_filter(const char *spec, const char *from);
/* A file opened: its id (the file's agreed uid) and name, written once into the trace (unless
 * the filter's files exclude it: then none of its events are). */
void pario_trace_file(uint64_t id, const char *name, int nprocs);
/* Write every thread's buffered events to the trace file (at close, and when a buffer fills). */
void pario_trace_flush(void);
/* Flush, close the trace file and stop recording (MPI_Finalize). */
void pario_trace_finalize(void);

#endif
