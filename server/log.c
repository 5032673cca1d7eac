/* pario-server's log: one line per event on stderr, with a UTC time stamp and the level, so the
 * security tests can look for a refusal and an operator can grep. */
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

void srv_log(int level, const char *fmt, ...) {
  if (level > srv_log_level) return;
  char line[1024], when[32];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  int n = snprintf(line, sizeof line, "%s.%03ldZ pario-server %s: ", when, ts.tv_nsec / 1000000, names[level]);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  /* One fputs of the whole line: lines of different threads never interleave. */
  size_t len = strnlen(line, sizeof line - 2);
  line[len] = '\n';
  line[len + 1] = '\0';
  fputs(line, stderr);
}
