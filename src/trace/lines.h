/* A JSON Lines file that never holds a cut line: lines are gathered in memory and written
 * with write(2); a short write (a full file system) is cut back to its last complete line and
 * the lines lost are counted. Used by libpario's recorder (trace.c) and by pario-server's
 * tracing, which report the first failure in their own way. No MPI, no locking: callers lock. */
#ifndef PARIO_TRACE_LINES_H
#define PARIO_TRACE_LINES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct pario_lines {
  int fd;           /* -1: not open */
  off_t good;       /* bytes in the file, all of them complete lines */
  char *buf;        /* lines gathered for the next write */
  size_t len, cap;
  uint64_t dropped; /* lines that never reached the file */
  uint64_t max_bytes; /* bytes the file may reach (0: no cap); the closing marker may pass it */
  char why[4400];   /* the first failure ("cannot write PATH: error"), "" while none */
  char path[4200];
} pario_lines;

/* Make dir and its missing parents: 0 or an errno value. */
int pario_make_dirs(const char *dir);

/* Open (create) path for appending: 0, or an errno value (w->why says it). trunc: start empty. */
int pario_lines_open(pario_lines *w, const char *path, int trunc);
/* Gather bytes (whole lines, or the pieces of one) for the next flush. */
void pario_lines_put(pario_lines *w, const char *p, size_t n);
void pario_lines_printf(pario_lines *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string, quotes included. */
void pario_lines_str(pario_lines *w, const char *s);
/* Write what was gathered. 1 when this flush met the first failure (the caller reports w->why
 * once), else 0. Without a file, the gathered lines are counted as dropped. */
int pario_lines_flush(pario_lines *w);
/* Count n lines that were never gathered (no file to go to) as dropped. */
void pario_lines_lose(pario_lines *w, uint64_t n, const char *why);
/* The marker that ends a trace which lost lines: {"type":"dropped","events":N,"reason":...},
 * flushed; 0 when it reached the file. Then close. */
int pario_lines_close(pario_lines *w);

#endif
