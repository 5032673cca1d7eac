/* The record-time filter of filter.h: glob lists (fnmatch) for calls and files, a sampling
 * counter over data calls, a size cap. Set once, before or at the first traced open; read by
 * every recording thread afterwards without locks (the sample counter is atomic). */
#include "trace/filter.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_GLOBS = 16, MAX_MUTED = 4096 };

static struct {
  int on;
  char spec[512];
  char calls[MAX_GLOBS][64], files[MAX_GLOBS][256], tools[MAX_GLOBS][256];
  int ncalls, nfiles, ntools; /* ntools < 0: the default (Darshan's logs) */
  long sample;       /* 0 or 1: every data call */
  uint64_t max_size; /* 0: none */
} F;
static unsigned long data_calls; /* atomic: data calls seen, for sampling */
static pthread_mutex_t muted_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t muted[MAX_MUTED];
static int nmuted;

/* "a,b,c" into up to MAX_GLOBS patterns of at most width bytes; -1 when one does not fit. */
static int globs(const char *v, size_t len, char *out, size_t width, int *n) {
  for (const char *p = v, *end = v + len; p < end;) {
    const char *c = memchr(p, ',', (size_t)(end - p));
    size_t l = (size_t)((c ? c : end) - p);
    if (l == 0 || l >= width || *n == MAX_GLOBS) return -1;
    memcpy(out + (size_t)*n * width, p, l);
    out[(size_t)*n * width + l] = '\0';
    (*n)++;
    p += l + 1;
  }
  return 0;
}

static int parse_size(const char *v, size_t len, uint64_t *out) {
  char buf[32], *end;
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, v, len);
  buf[len] = '\0';
  errno = 0;
  unsigned long long x = strtoull(buf, &end, 10);
  uint64_t mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1ull << 10, end++;
  else if (*end == 'M' || *end == 'm') mult = 1ull << 20, end++;
  else if (*end == 'G' || *end == 'g') mult = 1ull << 30, end++;
  if (errno || end == buf || *end || buf[0] == '-' || x == 0 || x > UINT64_MAX / mult) return -1;
  *out = x * mult;
  return 0;
}

static int one(const char *k, size_t kl, const char *v, size_t vl, char *why, size_t whylen) {
#define IS(key) (kl == strlen(key) && !memcmp(k, key, kl))
  if (IS("calls") && globs(v, vl, &F.calls[0][0], sizeof F.calls[0], &F.ncalls) == 0) return 0;
  if (IS("files") && globs(v, vl, &F.files[0][0], sizeof F.files[0], &F.nfiles) == 0) return 0;
  if (IS("tools") && (F.ntools = 0, vl == 0 || globs(v, vl, &F.tools[0][0], sizeof F.tools[0], &F.ntools) == 0)) return 0;
  if (IS("max_size") && parse_size(v, vl, &F.max_size) == 0) return 0;
  if (IS("sample")) {
    uint64_t n;
    if (parse_size(v, vl, &n) == 0 && n <= 1000000) return F.sample = (long)n, 0;
  }
  if (IS("calls") || IS("files") || IS("tools") || IS("max_size") || IS("sample"))
    snprintf(why, whylen, "bad value '%.*s' for %.*s", (int)vl, v, (int)kl, k);
  else
    snprintf(why, whylen, "unknown key '%.*s' (calls, files, tools, sample, max_size)", (int)kl, k);
  return -1;
#undef IS
}

int pario_trace_filter_set(const char *spec, char *why, size_t whylen) {
  if (F.on) return 0;
  F.ntools = -1;
  for (const char *p = spec; *p;) {
    while (*p == ';' || isspace((unsigned char)*p)) p++;
    if (!*p) break;
    const char *semi = strchr(p, ';'), *end = semi ? semi : p + strlen(p), *eq = memchr(p, '=', (size_t)(end - p));
    if (!eq) {
      snprintf(why, whylen, "expected KEY=VALUE, got '%.*s'", (int)(end - p), p);
      memset(&F, 0, sizeof F);
      F.ntools = -1;
      return -1;
    }
    if (one(p, (size_t)(eq - p), eq + 1, (size_t)(end - eq - 1), why, whylen)) {
      memset(&F, 0, sizeof F);
      F.ntools = -1;
      return -1;
    }
    p = end;
  }
  snprintf(F.spec, sizeof F.spec, "%s", spec);
  F.on = 1;
  return 0;
}

int pario_trace_filter_active(void) { return F.on; }
const char *pario_trace_filter_spec(void) { return F.spec; }
uint64_t pario_trace_filter_max_size(void) { return F.max_size; }

int pario_trace_filter_file(uint64_t id, const char *name) {
  if (!F.on || !F.nfiles) return 1;
  for (int i = 0; i < F.nfiles; i++)
    if (fnmatch(F.files[i], name, 0) == 0) return 1;
  pthread_mutex_lock(&muted_lock);
  if (nmuted < MAX_MUTED) muted[nmuted++] = id;
  pthread_mutex_unlock(&muted_lock);
  return 0;
}

int pario_trace_filter_file_muted(uint64_t id) {
  if (!F.on || !F.nfiles || !id) return 0;
  pthread_mutex_lock(&muted_lock);
  int m = 0;
  for (int i = 0; i < nmuted && !m; i++) m = muted[i] == id;
  pthread_mutex_unlock(&muted_lock);
  return m;
}

int pario_trace_filter_tool_file(const char *name) {
  static const char *const dflt[] = {"*.darshan", "*.darshan_partial"};
  if (!F.on || F.ntools < 0) {
    for (size_t i = 0; i < sizeof dflt / sizeof *dflt; i++)
      if (fnmatch(dflt[i], name, 0) == 0) return 1;
    return 0;
  }
  for (int i = 0; i < F.ntools; i++)
    if (fnmatch(F.tools[i], name, 0) == 0) return 1;
  return 0;
}

static int is_data_call(const char *n) { return strstr(n, "read") || strstr(n, "write"); }

int pario_trace_filter_call(const char *name, uint64_t file_id) {
  if (!F.on) return 1;
  if (pario_trace_filter_file_muted(file_id)) return 0;
  const char *bare = strncmp(name, "MPI_File_", 9) ? name : name + 9;
  int control = !strcmp(bare, "open") || !strcmp(bare, "close") || strncmp(name, "MPI_File_", 9) != 0;
  if (F.ncalls && !control) {
    int hit = 0;
    for (int i = 0; i < F.ncalls && !hit; i++) hit = fnmatch(F.calls[i], bare, 0) == 0 || fnmatch(F.calls[i], name, 0) == 0;
    if (!hit) return 0;
  }
  if (F.sample > 1 && !control && is_data_call(bare))
    return __atomic_fetch_add(&data_calls, 1, __ATOMIC_RELAXED) % (unsigned long)F.sample == 0;
  return 1;
}
