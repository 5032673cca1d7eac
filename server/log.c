/* pario-server's log: one line per event on stderr, with a UTC time stamp and the level, so the
 * security tests can look for a refusal and an operator can grep. What a line says is escaped
 * (file names and other client bytes among it), so no client can start or forge a line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server.h"

int srv_log_level = LOG_INFO;
static const char *names[] = {"error", "warn", "info", "debug"};

int srv_log_parse(const char *s) {
  for (int i = 0; i < 4; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

/* Copy src into dst (cap bytes, NUL-terminated) as printable ASCII: control bytes, DEL,
 * backslash and bytes >= 0x80 become \n, \t, \\ or \xNN. An escape never is cut in two. */
static void escape(char *dst, size_t cap, const char *src) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
    char e[4];
    size_t k = 0;
    if (*p == '\n') e[k++] = '\\', e[k++] = 'n';
    else if (*p == '\t') e[k++] = '\\', e[k++] = 't';
    else if (*p == '\\') e[k++] = '\\', e[k++] = '\\';
    else if (*p < 0x20 || *p >= 0x7f) e[k++] = '\\', e[k++] = 'x', e[k++] = hex[*p >> 4], e[k++] = hex[*p & 15];
    else e[k++] = (char)*p;
    if (o + k >= cap) break;
    memcpy(dst + o, e, k);
    o += k;
  }
  dst[o] = '\0';
}

void srv_log(int level, const char *fmt, ...) {
  if (level > srv_log_level) return;
  char line[1024], when[32], msg[1024];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int n = snprintf(line, sizeof line, "%s.%03ldZ pario-server %s: ", when, ts.tv_nsec / 1000000, names[level]);
  if (n > 0 && (size_t)n < sizeof line - 2) escape(line + n, sizeof line - 2 - (size_t)n, msg);
  /* One fputs of the whole line: lines of different threads never interleave. */
  size_t len = strnlen(line, sizeof line - 2);
  line[len] = '\n';
  line[len + 1] = '\0';
  fputs(line, stderr);
}

uint64_t srv_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A flood of descriptor errors must not flood the log: one line a second, with the count. */
void srv_log_fd_exhausted(const char *op, int err) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static uint64_t last, quiet;
  uint64_t now = srv_now_ns();
  pthread_mutex_lock(&mu);
  int say = !last || now - last >= 1000000000ull;
  uint64_t n = quiet;
  if (say) last = now, quiet = 0;
  else quiet++;
  pthread_mutex_unlock(&mu);
  if (say)
    srv_log(LOG_WARN, "%s: %s (%llu more since the last such line)", op, strerror(err), (unsigned long long)n);
}
