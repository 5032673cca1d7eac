/* Server-side tracing (--trace DIR, issue 17): network and storage spans with sizes, durations
 * and the request id as flow, cpu_pct/dirty_kb counters every 100 ms, as JSON Lines in
 * DIR/server-<port>-<pid>.jsonl; kept in memory, written when the buffer fills and at shutdown
 * (src/trace/lines.c: whole lines only, losses logged once and counted in a closing marker). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server.h"
#include "trace/lines.h"

#define TRACE_CAP 65536 /* events buffered before a flush */

typedef struct ev {
  uint64_t t, d, bytes, offset, flow;
  int64_t value;
  int tid, kind; /* kind 0 span, 1 counter */
  const char *cat, *name;
  char thread[16];
  char op[24]; /* "recv WRITE" etc. when name is built */
} ev;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static ev *buf;
static size_t nev;
static pario_lines out = {.fd = -1};
static pthread_t sampler;
static int sampler_stop;
static int on;
static __thread char thread_name[16];
static __thread int thread_id;

void srv_trace_thread(const char *name) {
  snprintf(thread_name, sizeof thread_name, "%s", name);
  thread_id = (int)syscall(SYS_gettid);
}

static void flush_locked(void) {
  for (size_t i = 0; i < nev; i++) {
    ev *e = &buf[i];
    if (e->kind == 1) {
      pario_lines_printf(&out, "{\"type\":\"counter\",\"t\":%llu,\"name\":\"%s\",\"value\":%lld}\n",
                         (unsigned long long)e->t, e->name, (long long)e->value);
      continue;
    }
    pario_lines_printf(&out, "{\"type\":\"span\",\"t\":%llu,\"d\":%llu,\"tid\":%d,\"thread\":\"%s\",\"cat\":\"%s\","
                       "\"name\":\"%s\",\"args\":{\"bytes\":%llu,\"offset\":%llu}", (unsigned long long)e->t,
                       (unsigned long long)e->d, e->tid, e->thread, e->cat, e->op[0] ? e->op : e->name,
                       (unsigned long long)e->bytes, (unsigned long long)e->offset);
    if (e->flow) pario_lines_printf(&out, ",\"flow\":%llu", (unsigned long long)e->flow);
    pario_lines_put(&out, "}\n", 2);
  }
  nev = 0;
  if (pario_lines_flush(&out))
    srv_log(LOG_ERROR, "trace: %s; events are dropped and counted, the server goes on", out.why);
}

static void add(const ev *e) {
  pthread_mutex_lock(&mu);
  if (on) {
    if (nev == TRACE_CAP) flush_locked();
    buf[nev++] = *e;
  }
  pthread_mutex_unlock(&mu);
}

void srv_trace_span(const char *cat, const char *name, const char *type_name, uint64_t t0, uint64_t bytes,
                    uint64_t offset, uint64_t flow) {
  if (!on) return;
  ev e;
  memset(&e, 0, sizeof e);
  e.t = t0, e.d = srv_now_ns() - t0, e.bytes = bytes, e.offset = offset, e.flow = flow;
  e.cat = cat, e.name = name;
  if (!thread_id) srv_trace_thread("server");
  e.tid = thread_id;
  memcpy(e.thread, thread_name, sizeof e.thread);
  if (type_name) snprintf(e.op, sizeof e.op, "%s %s", name, type_name);
  add(&e);
}

/* cpu_pct: this process's CPU time over the last interval; dirty_kb: the system's dirty pages. */
static uint64_t cpu_ticks(void) {
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return 0;
  char line[1024];
  uint64_t ut = 0, st = 0;
  if (fgets(line, sizeof line, f)) {
    char *p = strrchr(line, ')');
    if (p) sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
  }
  fclose(f);
  return ut + st;
}

static int64_t dirty_kb(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  long long v = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Dirty: %lld kB", &v) == 1) break;
  fclose(f);
  return v;
}

static void *sample_main(void *arg) {
  (void)arg;
  long hz = sysconf(_SC_CLK_TCK);
  uint64_t last_t = srv_now_ns(), last_c = cpu_ticks();
  while (!__atomic_load_n(&sampler_stop, __ATOMIC_ACQUIRE)) {
    usleep(100000);
    uint64_t t = srv_now_ns(), c = cpu_ticks();
    ev e;
    memset(&e, 0, sizeof e);
    e.kind = 1, e.t = t, e.name = "cpu_pct";
    e.value = hz > 0 && t > last_t ? (int64_t)((double)(c - last_c) / (double)hz * 1e9 / (double)(t - last_t) * 100.0) : 0;
    add(&e);
    e.name = "dirty_kb", e.value = dirty_kb();
    add(&e);
    last_t = t, last_c = c;
  }
  return NULL;
}

int srv_trace_open(const char *dir, const char *shown, char *why, size_t whylen) {
  const char *colon = strrchr(shown, ':');
  char path[4096], host[256] = "?";
  int e = pario_make_dirs(dir);
  if (e) return snprintf(why, whylen, "--trace %s: cannot make the directory: %s", dir, strerror(e)), -1;
  snprintf(path, sizeof path, "%s/server-%s-%d.jsonl", dir, colon ? colon + 1 : "0", (int)getpid());
  if (pario_lines_open(&out, path, 1)) return snprintf(why, whylen, "--trace: %s", out.why), -1;
  buf = malloc(TRACE_CAP * sizeof *buf);
  if (!buf) return snprintf(why, whylen, "--trace: out of memory"), -1;
  gethostname(host, sizeof host - 1);
  pario_lines_printf(&out, "{\"type\":\"header\",\"format\":\"pario-trace\",\"version\":1,\"kind\":\"server\","
                     "\"pid\":%d,\"host\":", (int)getpid());
  pario_lines_str(&out, host);
  pario_lines_printf(&out, ",\"name\":\"server %s\",\"clock_offset_ns\":0,\"clock_err_ns\":-1}\n", shown);
  if (pario_lines_flush(&out)) return snprintf(why, whylen, "--trace: %s", out.why), -1;
  on = 1;
  if (pthread_create(&sampler, NULL, sample_main, NULL)) return snprintf(why, whylen, "--trace: no thread"), -1;
  srv_log(LOG_INFO, "tracing to %s", path);
  return 0;
}

void srv_trace_close(void) {
  if (out.fd < 0) return;
  __atomic_store_n(&sampler_stop, 1, __ATOMIC_RELEASE);
  pthread_join(sampler, NULL);
  pthread_mutex_lock(&mu);
  flush_locked();
  on = 0;
  if (pario_lines_close(&out))
    srv_log(LOG_ERROR, "trace: lost %llu events (%s)", (unsigned long long)out.dropped, out.why);
  free(buf);
  buf = NULL;
  pthread_mutex_unlock(&mu);
}
