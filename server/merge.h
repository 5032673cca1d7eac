/* The forwarder's merging rule (server/forward.c, seed 004 section 3): the READ or WRITE parts
 * of one collective access, each a list of segments, joined into one request of sorted,
 * adjacent-joined segments, and the merged READ reply split back into one reply per part.
 * Pure: no connection, no lock, no upstream; tests/unit/test_fwdmerge.c tests it alone. */
#ifndef PARIO_SERVER_MERGE_H
#define PARIO_SERVER_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "rio/proto.h"

typedef struct fwd_part {
  void *c;       /* the client it came from (forward.c's connection) */
  uint64_t id;   /* its request id there */
  uint8_t *body; /* the request body (io header, segments, WRITE data at hb) */
  size_t n, hb;
  rio_io_req io; /* decoded; io.segs points into body */
} fwd_part;

/* One segment of one part, where it lies in the part's data and in the merged data. */
typedef struct fwd_piece {
  uint64_t off, len, part_pos, merged_pos;
  uint32_t part;
} fwd_piece;

typedef struct fwd_merged {
  fwd_piece *pieces; /* by offset after fwd_merge_plan; by part after fwd_merge_by_part */
  uint32_t npieces;
  uint32_t nseg;     /* segments of the merged request (adjacent pieces joined) */
  uint64_t total;    /* its data bytes */
} fwd_merged;

/* The merged request of nparts parts: 0, or -1 when they cannot be merged (overlapping
 * segments, no memory): then they go upstream one by one. */
int fwd_merge_plan(const fwd_part *parts, uint32_t nparts, fwd_merged *m);
/* Whether the merged request fits the upstream server's limits (a READ's reply too). */
int fwd_merge_fits(const fwd_merged *m, unsigned type, uint64_t max_request, uint32_t max_segments);
/* The merged request's body on handle: io header, joined segments and, for a WRITE, the parts'
 * data in merged order. malloc'd (*n bytes), or NULL. */
uint8_t *fwd_merge_body(const fwd_merged *m, const fwd_part *parts, unsigned type, uint64_t handle, size_t *n);
/* Before a READ reply is split: the pieces in each part's order (part by part). */
void fwd_merge_by_part(fwd_merged *m);
/* Part `part`'s READ reply body (status, count, data) from the merged data of which done bytes
 * arrived, cut at the first piece the end of file cut; its pieces start at *at (advanced past
 * them). malloc'd (*n bytes), or NULL. */
uint8_t *fwd_read_reply(const fwd_merged *m, uint32_t *at, uint32_t part, const fwd_part *pt, const uint8_t *data,
                        uint64_t done, size_t *n);
void fwd_merge_free(fwd_merged *m);

#endif
