/* pario-bench utilities without MPI-IO: option value parsing (sizes, lists, choices, numbers),
 * key=value hints, and a small JSON object writer for the results file. */
#include "bench.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hints common_hints;
bench_ctx B = {.results = "pario-bench-results.jsonl", .verify = 1, .dir = ".",
               .hints = &common_hints, .repeat = 1};

void say(const char *fmt, ...) {
  if (B.rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

int usage_error(const char *suite, const char *fmt, ...) {
  if (B.rank == 0) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pario-bench %s: ", suite);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (try 'pario-bench %s --help')\n", suite);
    va_end(ap);
  }
  return 2;
}

int common_option(int c, const char *arg) {
  switch (c) {
    case OPT_RESULTS: B.results = arg; return 1;
    case OPT_KEEP: B.keep = 1; return 1;
    case OPT_NOVERIFY: B.verify = 0; return 1;
    case OPT_INJECT: B.inject = 1; return 1;
    case OPT_DIR: B.dir = arg; return 1;
    case OPT_HINT: return hints_add(B.hints, arg) == 0 ? 1 : -1;
    case OPT_REPEAT: {
      long long n;
      if (parse_int(arg, 1, MAX_REPEAT, &n)) return -2;
      B.repeat = (int)n;
      return 1;
    }
    default: return 0;
  }
}

int parse_options(const char *suite, int argc, char **argv, const char *shortopts,
                  const struct option *longopts, opt_handler handle, void *ctx) {
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    if (c == '?' || c == ':') {
      if (optopt && optopt < 256) return usage_error(suite, "bad or incomplete option -%c", optopt);
      return usage_error(suite, "bad or incomplete option '%s'", argv[optind - 1]);
    }
    int common = common_option(c, optarg);
    if (common == -2) return usage_error(suite, "bad repeat count '%s' (1-%d)", optarg, MAX_REPEAT);
    if (common < 0) return usage_error(suite, "bad hint '%s' (want KEY=VALUE)", optarg);
    if (common > 0) continue;
    if (handle(c, optarg, ctx) != 0) return 2;
  }
  if (optind < argc) return usage_error(suite, "unexpected argument '%s'", argv[optind]);
  return 0;
}

const char *test_path(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s/pario-bench-%s", B.dir, name);
  return buf;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double trimmed_mean(const double *v, int n) {
  if (n <= 0) return 0;
  double *s = malloc(sizeof *s * (size_t)n), sum = 0;
  if (!s) return v[0];
  memcpy(s, v, sizeof *s * (size_t)n);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  int lo = n >= 3 ? 1 : 0, hi = n >= 3 ? n - 1 : n;
  for (int i = lo; i < hi; i++) sum += s[i];
  free(s);
  return sum / (hi - lo);
}

/* All of len bytes with pwrite/pread at off (EINTR retried); a failure or early end of file
 * fails r with the call and the offset. */
void posix_xfer(result *r, int fd, MPI_Offset off, unsigned char *buf, size_t len, int write) {
  for (size_t done = 0; done < len;) {
    ssize_t n = write ? pwrite(fd, buf + done, len - done, off + (off_t)done)
                      : pread(fd, buf + done, len - done, off + (off_t)done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      res_fail(r, "%s at %lld: %s", write ? "pwrite" : "pread", (long long)off + (long long)done,
               n < 0 ? strerror(errno) : "unexpected end of file");
      return;
    }
    done += (size_t)n;
  }
}

/* Drops the file's pages from the page cache: fsync first (dirty pages are not dropped),
 * then posix_fadvise(POSIX_FADV_DONTNEED) over the whole file. No privilege needed. */
int drop_cache_fd(int fd) {
  if (fsync(fd) != 0) return errno;
  return posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

int drop_cache(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return errno;
  int e = drop_cache_fd(fd);
  close(fd);
  return e;
}

/* read_bytes of /proc/self/io: the bytes this process (all its threads) caused to be fetched
 * from storage, page cache hits excluded. -1 where the file is absent or unreadable. */
long long storage_read_bytes(void) {
  char text[1024];
  FILE *f = fopen("/proc/self/io", "r");
  if (!f) return -1;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  const char *p = strstr(text, "\nread_bytes: ");
  return p ? atoll(p + strlen("\nread_bytes: ")) : -1;
}

double median_of(const double *v, int n, double *lo, double *hi) {
  if (n <= 0) return NAN;
  double *s = malloc(sizeof *s * (size_t)n), m;
  if (!s) return v[0];
  memcpy(s, v, sizeof *s * (size_t)n);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  if (lo) *lo = s[0];
  if (hi) *hi = s[n - 1];
  free(s);
  return m;
}

double jo_spread(jobj *o, const char *k, const double *v, int n) {
  char key[96];
  double lo = NAN, hi = NAN, m = median_of(v, n, &lo, &hi);
  jo_num(o, k, m);
  snprintf(key, sizeof key, "%s_min", k);
  jo_num(o, key, lo);
  snprintf(key, sizeof key, "%s_max", k);
  jo_num(o, key, hi);
  return m;
}

long long parse_size(const char *s) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || v < 0) return -1;
  long long mult = 1;
  switch (toupper((unsigned char)*end)) {
    case 'K': mult = 1LL << 10; end++; break;
    case 'M': mult = 1LL << 20; end++; break;
    case 'G': mult = 1LL << 30; end++; break;
    case 'T': mult = 1LL << 40; end++; break;
    default: break;
  }
  if (mult > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0)) end += strlen(end);
  if (*end) return -1;
  double bytes = v * (double)mult;
  if (bytes > 9e18 || bytes != floor(bytes)) return -1;
  return (long long)bytes;
}

const char *size_str(long long v, char *buf, size_t n) {
  static const char suffix[] = "KMGT";
  int i = -1;
  while (v >= 1024 && v % 1024 == 0 && i < 3) { v /= 1024; i++; }
  if (i < 0) snprintf(buf, n, "%lld", v);
  else snprintf(buf, n, "%lld%c", v, suffix[i]);
  return buf;
}

int parse_size_list(const char *s, long long *out, int max) {
  char tmp[1024];
  if (strlen(s) >= sizeof tmp) return -1;
  strcpy(tmp, s);
  int n = 0;
  for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == max) return -1;
    if ((out[n] = parse_size(t)) <= 0) return -1;
    n++;
  }
  return n ? n : -1;
}

int choice_index(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

int parse_choice_list(const char *s, const char *const *names, int n) {
  char tmp[512];
  if (strlen(s) >= sizeof tmp) return -1;
  strcpy(tmp, s);
  int mask = 0;
  for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (strcmp(t, "all") == 0) { mask |= (1 << n) - 1; continue; }
    int i = choice_index(t, names, n);
    if (i < 0) return -1;
    mask |= 1 << i;
  }
  return mask ? mask : -1;
}

int parse_int(const char *s, long long lo, long long hi, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int parse_double(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !(v >= lo && v <= hi)) return -1;
  *out = v;
  return 0;
}

int hints_add(hints *h, const char *kv) {
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv || h->n == MAX_HINTS) return -1;
  h->key[h->n] = strndup(kv, (size_t)(eq - kv));
  h->val[h->n] = strdup(eq + 1);
  h->n++;
  return 0;
}

MPI_Info hints_info(const hints *h) {
  if (!h || h->n == 0) return MPI_INFO_NULL;
  MPI_Info info;
  MPI_Info_create(&info);
  for (int i = 0; i < h->n; i++) MPI_Info_set(info, h->key[i], h->val[i]);
  return info;
}

void info_free(MPI_Info *info) {
  if (*info != MPI_INFO_NULL) MPI_Info_free(info);
}

/* ---- JSON writer ---- */

static void jo_put(jobj *o, const char *s, size_t n) {
  if (o->len + n + 1 > o->cap) {
    o->cap = (o->len + n + 1) * 2 + 64;
    o->s = realloc(o->s, o->cap);
    if (!o->s) { perror("pario-bench"); MPI_Abort(MPI_COMM_WORLD, 3); }
  }
  memcpy(o->s + o->len, s, n);
  o->len += n;
  o->s[o->len] = 0;
}

static void jo_puts(jobj *o, const char *s) { jo_put(o, s, strlen(s)); }

static void jo_quoted(jobj *o, const char *s) {
  jo_puts(o, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char esc[8];
    if (*p == '"' || *p == '\\') { esc[0] = '\\'; esc[1] = (char)*p; jo_put(o, esc, 2); }
    else if (*p < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", *p); jo_puts(o, esc); }
    else jo_put(o, (const char *)p, 1);
  }
  jo_puts(o, "\"");
}

static void jo_key(jobj *o, const char *k) {
  if (o->members++) jo_puts(o, ", ");
  jo_quoted(o, k);
  jo_puts(o, ": ");
}

void jo_init(jobj *o) {
  memset(o, 0, sizeof *o);
  jo_puts(o, "{");
}

void jo_str(jobj *o, const char *k, const char *v) {
  jo_key(o, k);
  if (v) jo_quoted(o, v);
  else jo_puts(o, "null");
}

void jo_int(jobj *o, const char *k, long long v) {
  char b[32];
  snprintf(b, sizeof b, "%lld", v);
  jo_key(o, k);
  jo_puts(o, b);
}

void jo_num(jobj *o, const char *k, double v) {
  char b[40];
  if (isfinite(v)) snprintf(b, sizeof b, "%.9g", v);
  else strcpy(b, "null");
  jo_key(o, k);
  jo_puts(o, b);
}

void jo_bool(jobj *o, const char *k, int v) {
  jo_key(o, k);
  jo_puts(o, v ? "true" : "false");
}

void jo_raw(jobj *o, const char *k, const char *json) {
  jo_key(o, k);
  jo_puts(o, json);
}

const char *jo_close(jobj *o) {
  if (o->members >= 0) jo_puts(o, "}");
  o->members = -1; /* closed: later calls return the same text */
  return o->s;
}

void jo_free(jobj *o) {
  free(o->s);
  memset(o, 0, sizeof *o);
}

void jo_hints(jobj *o, const char *k, const hints *h) {
  jobj sub;
  jo_init(&sub);
  for (int i = 0; h && i < h->n; i++) jo_str(&sub, h->key[i], h->val[i]);
  jo_raw(o, k, jo_close(&sub));
  jo_free(&sub);
}
