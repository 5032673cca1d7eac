/* The event recorder behind trace.h: fixed-size records in per-thread buffers, written as JSON
 * lines into DIR/client-<rank>-<pid>.jsonl when a buffer fills, at file close and at
 * MPI_Finalize. A trace that cannot be written loses whole lines only, says so once on stderr
 * and ends with a "dropped" marker. Nothing here talks to MPI except to learn the rank when no
 * file told it: the tracing lifecycle layer (src/tracelayer) tells it the rank, the clock offset and the files. */
#include "trace/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "trace/filter.h"
#include "trace/lines.h"

int pario_trace_on;

enum { EV_SPAN, EV_INSTANT, EV_COUNTER };
enum { BUF_EVENTS = 4096 };

typedef struct ev {
  uint64_t t, d, flow;
  const char *name, *skey, *sval;
  pario_trace_arg a[PARIO_TRACE_NARGS];
  uint8_t type, cat, na;
} ev;

typedef struct tbuf {
  pthread_mutex_t lock; /* the owner records under it; a flush from another thread takes it */
  int tid, n;
  char thread[32];
  char prefix[80]; /* ,"tid":N,"thread":"NAME" as written in every line */
  struct tbuf *next;
  ev e[BUF_EVENTS];
} tbuf;

/* A line waiting to be written (files, server clocks): made when reported, written at flush. */
typedef struct note {
  char *line;
  struct note *next;
} note;

static const char *const cat_names[PARIO_TC_COUNT] = {"api", "coll", "sieve", "sfp", "async",
                                                      "driver", "view", "net", "storage"};

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER; /* bufs, ntids */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;  /* out, notes, header fields */
static tbuf *bufs;
static int ntids, nworkers;
static _Thread_local tbuf *mine;
static uint64_t flow_seq;
static char dir[4096];
static pario_lines out = {.fd = -1}; /* the trace file, opened at the first flush */
static int world_rank = -1;
static int64_t clock_off, clock_err = -1;
static int clock_dirty; /* a new offset since the header was written */
static note *notes, **notes_tail = &notes;

/* ---- recording ---- */

static void thread_name(tbuf *b) {
  char nm[16] = "";
  pthread_getname_np(pthread_self(), nm, sizeof nm);
  if (getpid() == (pid_t)gettid()) snprintf(b->thread, sizeof b->thread, "main");
  else if (!strcmp(nm, "pario-io")) snprintf(b->thread, sizeof b->thread, "pario-io-%d", nworkers++);
  else snprintf(b->thread, sizeof b->thread, "thread-%d", b->tid);
}

static tbuf *my_buf(void) {
  if (mine) return mine;
  tbuf *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  pthread_mutex_init(&b->lock, NULL);
  pthread_mutex_lock(&list_lock);
  b->tid = ntids++;
  thread_name(b);
  snprintf(b->prefix, sizeof b->prefix, ",\"tid\":%d,\"thread\":\"%s\"", b->tid, b->thread);
  b->next = bufs;
  bufs = b;
  pthread_mutex_unlock(&list_lock);
  return mine = b;
}

static void write_buf(tbuf *b);

/* A slot in this thread's buffer, its lock held; NULL when no memory. A full buffer is
 * written out first. */
static ev *slot(void) {
  tbuf *b = my_buf();
  if (!b) return NULL;
  pthread_mutex_lock(&b->lock);
  if (b->n == BUF_EVENTS) write_buf(b);
  return &b->e[b->n];
}

static void commit(void) {
  mine->n++;
  pthread_mutex_unlock(&mine->lock);
}

static void fill(ev *e, int type, int cat, const char *name, const char *skey, const char *sval,
                 const pario_trace_arg *a, int na) {
  e->type = (uint8_t)type;
  e->cat = (uint8_t)cat;
  e->name = name;
  e->skey = skey;
  e->sval = sval;
  e->na = (uint8_t)PARIO_MIN(na, PARIO_TRACE_NARGS);
  memcpy(e->a, a, sizeof *a * e->na);
}

/* ---- the record-time filter (filter.h) ---- */

static uint64_t filtered_calls, filtered_events; /* atomic: what the filter dropped */

static uint64_t file_arg(const pario_trace_arg *a, int na) {
  for (int i = 0; i < na; i++)
    if (!strcmp(a[i].key, "file")) return (uint64_t)a[i].val;
  return 0;
}

/* A call the filter refuses: drop it and what its thread recorded since it began (its driver
 * operations, rounds, sieving windows: the events still in the buffer with t >= t0). */
static void drop_call(uint64_t t0) {
  tbuf *b = my_buf();
  uint64_t k = 1;
  if (b) {
    pthread_mutex_lock(&b->lock);
    while (b->n > 0 && b->e[b->n - 1].t >= t0) b->n--, k++;
    pthread_mutex_unlock(&b->lock);
  }
  __atomic_add_fetch(&filtered_calls, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&filtered_events, k, __ATOMIC_RELAXED);
}

/* Whether the filter keeps a span: calls (MPI_File_* spans, nonblocking jobs by their call)
 * are judged whole; other spans only by their file. */
static int kept(int cat, const char *name, uint64_t t0, const char *skey, const char *sval, const pario_trace_arg *a,
                int na) {
  if (!pario_trace_filter_active()) return 1;
  const char *call = cat == PARIO_TC_API ? name : cat == PARIO_TC_ASYNC && skey && !strcmp(skey, "op") ? sval : NULL;
  uint64_t file = file_arg(a, na);
  if (call && !pario_trace_filter_call(call, file)) {
    drop_call(t0);
    return 0;
  }
  if (!call && pario_trace_filter_file_muted(file)) {
    __atomic_add_fetch(&filtered_events, 1, __ATOMIC_RELAXED);
    return 0;
  }
  return 1;
}

int pario_trace_filter(const char *spec, const char *from) {
  char why[256];
  if (pario_trace_filter_set(spec, why, sizeof why) == 0) return 0;
  pario_log(0, "trace: %s: %s; tracing without a filter", from, why);
  return -1;
}

void pario_trace_span_(int cat, const char *name, uint64_t t0, uint64_t flow, const char *skey,
                       const char *sval, const pario_trace_arg *a, int na) {
  if (t0 == 0) return; /* begun while tracing was off */
  if (!kept(cat, name, t0, skey, sval, a, na)) return;
  uint64_t now = pario_trace_now();
  ev *e = slot();
  if (!e) return;
  fill(e, EV_SPAN, cat, name, skey, sval, a, na);
  e->t = t0;
  e->d = now - t0;
  e->flow = flow;
  commit();
}

void pario_trace_instant_(int cat, const char *name, const char *skey, const char *sval,
                          const pario_trace_arg *a, int na) {
  uint64_t now = pario_trace_now();
  ev *e = slot();
  if (!e) return;
  fill(e, EV_INSTANT, cat, name, skey, sval, a, na);
  e->t = now;
  e->d = e->flow = 0;
  commit();
}

void pario_trace_counter_(const char *name, int64_t value) {
  pario_trace_arg a = {"value", value};
  uint64_t now = pario_trace_now();
  ev *e = slot();
  if (!e) return;
  fill(e, EV_COUNTER, PARIO_TC_API, name, NULL, NULL, &a, 1);
  e->t = now;
  e->d = e->flow = 0;
  commit();
}

uint64_t pario_trace_flow_new(void) {
  uint64_t seq = __atomic_add_fetch(&flow_seq, 1, __ATOMIC_RELAXED);
  int r = __atomic_load_n(&world_rank, __ATOMIC_RELAXED);
  return ((uint64_t)(r < 0 ? 0 : r) + 1) << 40 | (seq & ((1ull << 40) - 1));
}

/* ---- writing ---- */

/* s as a JSON string (quotes included) into o. */
static void put_str(FILE *o, const char *s) {
  fputc('"', o);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(o, "\\%c", *p);
    else if (*p < 0x20) fprintf(o, "\\u%04x", *p);
    else fputc(*p, o);
  }
  fputc('"', o);
}

/* ---- the file (under out_lock) ---- */

static void put_header(void) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  pario_lines_printf(&out, "{\"type\":\"header\",\"format\":\"pario-trace\",\"version\":1,\"kind\":\"client\","
                     "\"rank\":%d,\"pid\":%d,\"host\":", world_rank, (int)getpid());
  pario_lines_str(&out, host);
  pario_lines_printf(&out, ",\"name\":\"rank %d\",\"clock_offset_ns\":%lld,\"clock_err_ns\":%lld}\n", world_rank,
                     (long long)clock_off, (long long)clock_err);
  clock_dirty = 0;
}

/* The first failure, once on stderr whatever PARIO_LOG says (a trace that silently loses
 * events misleads whoever reads it); later ones are only counted. */
static void say_lost(void) {
  pario_log(0, "trace: %s; events are dropped and counted, the program goes on", out.why);
}

/* Start a batch into the trace file, opened at the first flush (and tried again at later
 * ones while it cannot be); the header first into a file that has none yet (a first write
 * that failed leaves none either). 0, or -1 with nothing to write to. */
static int batch_begin(void) {
  if (out.fd < 0) {
    if (!dir[0]) return -1;
    if (world_rank < 0) { /* no file was opened: ask MPI, if it is still there */
      int init = 0, fin = 1;
      PMPI_Initialized(&init);
      PMPI_Finalized(&fin);
      int r = -1;
      if (init && !fin) PMPI_Comm_rank(MPI_COMM_WORLD, &r);
      __atomic_store_n(&world_rank, r, __ATOMIC_RELAXED);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/client-%d-%d.jsonl", dir, world_rank, (int)getpid());
    int said = out.why[0] != 0;
    if (pario_lines_open(&out, path, 0) != 0) {
      if (!said) say_lost();
      return -1;
    }
    out.max_bytes = pario_trace_filter_max_size();
  }
  if (out.good == 0 && out.len == 0) put_header();
  return 0;
}

static void batch_end(void) {
  if (pario_lines_flush(&out)) say_lost();
}

/* An event's line is made in a local buffer by hand (no printf: formatting is most of the
 * cost of tracing) and written with one fwrite. */
typedef struct jline {
  char *p, *end;
  char buf[2048];
} jline;

static void l_mem(jline *l, const char *s, size_t n) {
  if (n > (size_t)(l->end - l->p)) n = (size_t)(l->end - l->p);
  memcpy(l->p, s, n);
  l->p += n;
}
static void l_raw(jline *l, const char *s) { l_mem(l, s, strlen(s)); }
/* A JSON string: names, keys and values are almost always plain ASCII, copied at once. */
static void l_str(jline *l, const char *s) {
  static const char hex[] = "0123456789abcdef";
  size_t plain = 0;
  while (s[plain] >= 0x20 && s[plain] != '"' && s[plain] != '\\') plain++;
  l_mem(l, "\"", 1);
  l_mem(l, s, plain);
  for (const unsigned char *c = (const unsigned char *)s + plain; *c && l->p + 6 < l->end; c++) {
    if (*c == '"' || *c == '\\') *l->p++ = '\\', *l->p++ = (char)*c;
    else if (*c < 0x20) *l->p++ = '\\', *l->p++ = 'u', *l->p++ = '0', *l->p++ = '0', *l->p++ = hex[*c >> 4], *l->p++ = hex[*c & 15];
    else *l->p++ = (char)*c;
  }
  l_mem(l, "\"", 1);
}
static void l_u64(jline *l, uint64_t v) {
  char t[24];
  int n = 0;
  do t[n++] = (char)('0' + v % 10); while ((v /= 10) > 0);
  while (n > 0 && l->p < l->end) *l->p++ = t[--n];
}
static void l_i64(jline *l, int64_t v) {
  if (v < 0 && l->p < l->end) *l->p++ = '-';
  l_u64(l, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

static void put_event(const tbuf *b, const ev *e) {
  static const char *const types[] = {"{\"type\":\"span\",\"t\":", "{\"type\":\"instant\",\"t\":",
                                      "{\"type\":\"counter\",\"t\":"};
  jline L, *l = &L;
  l->p = l->buf;
  l->end = l->buf + sizeof l->buf - 4; /* room for the closing "}}\n" */
  l_raw(l, types[e->type]);
  l_u64(l, e->t);
  if (e->type == EV_SPAN) l_raw(l, ",\"d\":"), l_u64(l, e->d);
  l_raw(l, b->prefix);
  l_raw(l, ",\"name\":");
  l_str(l, e->name);
  if (e->type == EV_COUNTER) {
    l_raw(l, ",\"value\":");
    l_i64(l, e->a[0].val);
    *l->p++ = '}';
  } else {
    l_raw(l, ",\"cat\":\"");
    l_raw(l, cat_names[e->cat]);
    l_raw(l, "\"");
    if (e->flow) l_raw(l, ",\"flow\":"), l_u64(l, e->flow);
    l_raw(l, ",\"args\":{");
    for (int i = 0; i < e->na; i++) {
      if (i) l_raw(l, ",");
      l_str(l, e->a[i].key);
      l_raw(l, ":");
      l_i64(l, e->a[i].val);
    }
    if (e->skey && e->sval) {
      if (e->na) l_raw(l, ",");
      l_str(l, e->skey);
      l_raw(l, ":");
      l_str(l, e->sval);
    }
    *l->p++ = '}';
    *l->p++ = '}';
  }
  *l->p++ = '\n';
  pario_lines_put(&out, l->buf, (size_t)(l->p - l->buf)); /* out_lock is held */
}

/* Notes (files, clocks) before the events that may refer to them; under out_lock. */
static void put_notes(void) {
  if (clock_dirty) {
    pario_lines_printf(&out, "{\"type\":\"clock\",\"clock_offset_ns\":%lld,\"clock_err_ns\":%lld}\n",
                       (long long)clock_off, (long long)clock_err);
    clock_dirty = 0;
  }
  while (notes) {
    note *n = notes;
    pario_lines_put(&out, n->line, strlen(n->line));
    notes = n->next;
    free(n->line);
    free(n);
  }
  notes_tail = &notes;
}

/* Write b's events; b->lock held by the caller. Events with no file to go to are counted. */
static void write_buf(tbuf *b) {
  pthread_mutex_lock(&out_lock);
  if (batch_begin() == 0) {
    put_notes();
    for (int i = 0; i < b->n; i++) put_event(b, &b->e[i]);
    batch_end();
  } else {
    pario_lines_lose(&out, (uint64_t)b->n, "no trace file");
  }
  pthread_mutex_unlock(&out_lock);
  b->n = 0;
}

void pario_trace_flush(void) {
  pthread_mutex_lock(&list_lock);
  for (tbuf *b = bufs; b; b = b->next) {
    pthread_mutex_lock(&b->lock);
    write_buf(b);
    pthread_mutex_unlock(&b->lock);
  }
  pthread_mutex_unlock(&list_lock);
  pthread_mutex_lock(&out_lock);
  if (batch_begin() == 0) {
    put_notes();
    batch_end();
  }
  pthread_mutex_unlock(&out_lock);
}

/* A trace that lost lines ends with a marker saying how many and why (docs/trace-format.md);
 * where even that cannot be written, stderr has it. */
void pario_trace_finalize(void) {
  if (!dir[0]) return;
  pario_trace_flush();
  pario_trace_on = 0;
  pthread_mutex_lock(&out_lock);
  if (pario_trace_filter_active() && batch_begin() == 0) { /* what the filter left out */
    pario_lines_printf(&out, "{\"type\":\"filter\",\"spec\":");
    pario_lines_str(&out, pario_trace_filter_spec());
    pario_lines_printf(&out, ",\"calls\":%llu,\"events\":%llu}\n",
                       (unsigned long long)__atomic_load_n(&filtered_calls, __ATOMIC_RELAXED),
                       (unsigned long long)__atomic_load_n(&filtered_events, __ATOMIC_RELAXED));
    out.max_bytes = 0;
    batch_end();
  }
  if (out.dropped && out.fd < 0) batch_begin(); /* the marker needs a file: one more try */
  if (pario_lines_close(&out) != 0)
    pario_log(0, "trace: rank %d lost %llu events (%s)", world_rank, (unsigned long long)out.dropped, out.why);
  pthread_mutex_unlock(&out_lock);
}

/* ---- process-wide state ---- */

static void add_note(char *line) {
  note *n = line ? malloc(sizeof *n) : NULL;
  if (!n) {
    free(line);
    return;
  }
  n->line = line;
  n->next = NULL;
  pthread_mutex_lock(&out_lock);
  *notes_tail = n;
  notes_tail = &n->next;
  pthread_mutex_unlock(&out_lock);
}

/* A JSON string of s in a new buffer (NULL when out of memory). */
static char *json_str(const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return NULL;
  put_str(m, s);
  fclose(m);
  return buf;
}

void pario_trace_file(uint64_t id, const char *name, int nprocs) {
  if (!pario_trace_filter_file(id, name)) return;
  char *js = json_str(name), *line = NULL;
  if (js && asprintf(&line, "{\"type\":\"file\",\"id\":%llu,\"name\":%s,\"nprocs\":%d%s}\n", (unsigned long long)id, js,
                     nprocs, pario_trace_filter_tool_file(name) ? ",\"tool\":1" : "") < 0)
    line = NULL;
  free(js);
  add_note(line);
}

void pario_trace_server_clock(const char *server_name, int64_t offset_ns, int64_t err_ns) {
  char *js = json_str(server_name), *line = NULL;
  if (js && asprintf(&line, "{\"type\":\"server_clock\",\"name\":%s,\"offset_ns\":%lld,\"err_ns\":%lld}\n", js,
                     (long long)offset_ns, (long long)err_ns) < 0)
    line = NULL;
  free(js);
  add_note(line);
}

void pario_trace_set_clock(int64_t offset_ns, int64_t err_ns) {
  pthread_mutex_lock(&out_lock);
  clock_off = offset_ns;
  clock_err = err_ns;
  clock_dirty = 1;
  pthread_mutex_unlock(&out_lock);
}

void pario_trace_set_rank(int r) {
  pthread_mutex_lock(&out_lock);
  if (out.fd < 0) __atomic_store_n(&world_rank, r, __ATOMIC_RELAXED); /* an open file keeps its name */
  pthread_mutex_unlock(&out_lock);
}

const char *pario_trace_dir(void) { return dir; }

int pario_trace_enable(const char *d) {
  pthread_mutex_lock(&out_lock);
  int e = 0;
  if (!dir[0]) {
    e = pario_make_dirs(d);
    if (!e) snprintf(dir, sizeof dir, "%s", d);
  }
  pthread_mutex_unlock(&out_lock);
  if (!e) pario_trace_on = 1;
  return e;
}

/* PARIO_TRACE=DIR turns tracing on before main, so that the first MPI_File_open is seen;
 * PARIO_TRACE_FILTER sets the filter (it wins over the hint, as PARIO_TRACE does). */
__attribute__((constructor)) static void trace_from_env(void) {
  const char *spec = getenv("PARIO_TRACE_FILTER");
  if (spec && *spec) pario_trace_filter(spec, "PARIO_TRACE_FILTER");
  const char *d = getenv("PARIO_TRACE");
  int e = d && *d ? pario_trace_enable(d) : 0;
  if (e) pario_log(0, "trace: cannot make the trace directory %s (PARIO_TRACE): %s; not tracing", d, strerror(e));
}
