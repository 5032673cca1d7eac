/* The hole-bounded read window: one rule for pario's reads that cover several pieces of a file
 * with one read of their span (data sieving in core/io.c, pario-server's READ of many small
 * segments in server/read.c, the union of every rank's pieces an aggregator reads in
 * collective/exchange.c). Such a read also reads the holes between the pieces, so:
 *  - a piece joins the window only in order, at or after the window's end (an earlier or
 *    overlapping piece ends the window);
 *  - a hole wider than maxgap ends the window: its bytes are never read;
 *  - the window never reaches past limit (the span cap, or the end of the access): a piece
 *    that would cross it joins only where the caller may cut it there (the rest of the piece
 *    is then the next window's), and only if it starts before limit.
 * Pure integer code with no MPI and no I/O, in a header so that the library and the server
 * (which shares only src/rio/ with it) apply the same rule. */
#ifndef PARIO_RIO_WINDOW_H
#define PARIO_RIO_WINDOW_H

#include <stdint.h>

/* The widest hole a window reads through by default: the hint pario_read_max_gap's default and
 * the server's (docs/collective.md says why 4 KiB). */
#define RIO_WINDOW_MAX_GAP 4096

typedef struct rio_window {
  uint64_t lo, end; /* [lo, end): what the window covers so far */
  uint64_t limit;   /* it never reaches past this offset */
  uint64_t maxgap;  /* the widest hole it reads through */
  uint32_t joined;  /* pieces that joined it (rio_window_join) */
} rio_window;

/* A window that starts at off with its first piece, len bytes (0: none yet). */
static inline rio_window rio_window_open(uint64_t off, uint64_t len, uint64_t limit, uint64_t maxgap) {
  rio_window w = {off, off + len, limit, maxgap, 0};
  return w;
}

/* Whether the piece [off, off + len) joins the window (the rule above); may_cut: the caller
 * can take the piece's head up to limit. 1 and the window grown to the piece's end (or to
 * limit), or 0 and the window unchanged: it ends before this piece. */
static inline int rio_window_join(rio_window *w, uint64_t off, uint64_t len, int may_cut) {
  if (off < w->end || off - w->end > w->maxgap) return 0;
  if (off + len > w->limit && (!may_cut || off >= w->limit)) return 0;
  w->end = off + len < w->limit ? off + len : w->limit;
  w->joined++;
  return 1;
}

/* Whether the piece [off, off + len) joins the window when pieces come from several sources in
 * order of their start and may overlap (a collective read's union of every rank's pieces): it
 * joins unless the hole before it is wider than maxgap. 1 and the window grown to cover it, or
 * 0 and the window unchanged. No limit applies. */
static inline int rio_window_merge(rio_window *w, uint64_t off, uint64_t len) {
  if (off > w->end && off - w->end > w->maxgap) return 0;
  if (off + len > w->end) w->end = off + len;
  w->joined++;
  return 1;
}

#endif
