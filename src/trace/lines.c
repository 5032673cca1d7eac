/* Complete-line JSON Lines output with loss accounting (lines.h): the one implementation of
 * "a trace file never holds a cut line, and says how much it lost" for libpario's recorder
 * and for pario-server. */
#include "trace/lines.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pario_make_dirs(const char *dir) {
  char p[4200];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return ENAMETOOLONG;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) return errno;
    *s = '/';
  }
  return mkdir(p, 0777) != 0 && errno != EEXIST ? errno : 0;
}

static void fail(pario_lines *w, const char *what, int err) {
  if (!w->why[0]) snprintf(w->why, sizeof w->why, "%s %s: %s", what, w->path, strerror(err));
}

int pario_lines_open(pario_lines *w, const char *path, int trunc) {
  snprintf(w->path, sizeof w->path, "%s", path);
  w->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (trunc ? O_TRUNC : 0), 0644);
  if (w->fd < 0) {
    int e = errno;
    fail(w, "cannot open", e);
    return e;
  }
  struct stat st;
  w->good = fstat(w->fd, &st) == 0 ? st.st_size : 0;
  return 0;
}

void pario_lines_put(pario_lines *w, const char *p, size_t n) {
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 1 << 16;
    while (cap < w->len + n) cap *= 2;
    char *q = realloc(w->buf, cap);
    if (!q) { /* this piece is lost; its line is cut below when the flush finds it unended */
      w->dropped++;
      return;
    }
    w->buf = q, w->cap = cap;
  }
  memcpy(w->buf + w->len, p, n);
  w->len += n;
}

void pario_lines_printf(pario_lines *w, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > 0) pario_lines_put(w, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void pario_lines_str(pario_lines *w, const char *s) {
  static const char hex[] = "0123456789abcdef";
  pario_lines_put(w, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char e[6] = {'\\', (char)*p};
    if (*p == '"' || *p == '\\') pario_lines_put(w, e, 2);
    else if (*p < 0x20) e[1] = 'u', e[2] = '0', e[3] = '0', e[4] = hex[*p >> 4], e[5] = hex[*p & 15], pario_lines_put(w, e, 6);
    else pario_lines_put(w, (const char *)p, 1);
  }
  pario_lines_put(w, "\"", 1);
}

static uint64_t count_lines(const char *p, size_t n) {
  uint64_t k = 0;
  for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++) k++;
  return k;
}

void pario_lines_lose(pario_lines *w, uint64_t n, const char *why) {
  w->dropped += n;
  if (!w->why[0]) snprintf(w->why, sizeof w->why, "%s", why);
}

int pario_lines_flush(pario_lines *w) {
  int first = 0;
  if (!w->len) return 0;
  if (w->fd < 0) {
    w->dropped += count_lines(w->buf, w->len);
    w->len = 0;
    return 0;
  }
  if (w->max_bytes && (uint64_t)w->good + w->len > w->max_bytes) { /* keep the whole lines that fit */
    size_t keep = w->max_bytes > (uint64_t)w->good ? (size_t)(w->max_bytes - (uint64_t)w->good) : 0;
    while (keep > 0 && w->buf[keep - 1] != '\n') keep--;
    w->dropped += count_lines(w->buf + keep, w->len - keep);
    first = !w->why[0];
    if (first)
      snprintf(w->why, sizeof w->why, "the trace file reached its size cap of %llu bytes (max_size)",
               (unsigned long long)w->max_bytes);
    w->len = keep;
  }
  size_t k = 0;
  int err = 0;
  while (k < w->len) {
    ssize_t r = write(w->fd, w->buf + k, w->len - k);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      err = r < 0 ? errno : ENOSPC;
      break;
    }
    k += (size_t)r;
  }
  size_t whole = k;
  while (whole > 0 && w->buf[whole - 1] != '\n') whole--;
  if (whole < k && ftruncate(w->fd, w->good + (off_t)whole) != 0) whole = k; /* cannot cut: keep */
  if (k < w->len || whole < k) {
    w->dropped += count_lines(w->buf + whole, w->len - whole) + (w->buf[w->len - 1] != '\n');
    first = first || !w->why[0];
    fail(w, "cannot write", err ? err : EIO);
  }
  w->good += (off_t)whole;
  w->len = 0;
  return first;
}

int pario_lines_close(pario_lines *w) {
  int r = 0;
  w->max_bytes = 0; /* the marker says what the cap cost */
  if (w->dropped && w->fd >= 0) {
    uint64_t before = w->dropped;
    pario_lines_printf(w, "{\"type\":\"dropped\",\"events\":%llu,\"reason\":", (unsigned long long)before);
    pario_lines_str(w, w->why);
    pario_lines_put(w, "}\n", 2);
    pario_lines_flush(w);
    r = w->dropped != before ? -1 : 0;
  } else if (w->dropped) {
    r = -1;
  }
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  free(w->buf);
  w->buf = NULL, w->len = w->cap = 0;
  return r;
}
