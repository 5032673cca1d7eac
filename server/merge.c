/* The forwarder's merging rule (merge.h). */
#include "merge.h"

#include <stdlib.h>
#include <string.h>

static int piece_cmp(const void *a, const void *b) {
  const fwd_piece *x = a, *y = b;
  return x->off < y->off ? -1 : x->off > y->off ? 1 : 0;
}

static int piece_part_cmp(const void *a, const void *b) {
  const fwd_piece *x = a, *y = b;
  if (x->part != y->part) return x->part < y->part ? -1 : 1;
  return x->part_pos < y->part_pos ? -1 : x->part_pos > y->part_pos ? 1 : 0;
}

int fwd_merge_plan(const fwd_part *parts, uint32_t nparts, fwd_merged *m) {
  uint64_t nseg = 0;
  memset(m, 0, sizeof *m);
  for (uint32_t i = 0; i < nparts; i++) nseg += parts[i].io.nseg;
  m->pieces = nseg ? calloc(nseg, sizeof *m->pieces) : NULL;
  if (!m->pieces) return -1;
  uint32_t k = 0;
  for (uint32_t i = 0; i < nparts; i++) {
    uint64_t pos = 0;
    for (uint32_t s = 0; s < parts[i].io.nseg; s++, k++) {
      rio_seg_at(&parts[i].io, s, &m->pieces[k].off, &m->pieces[k].len);
      m->pieces[k].part = i, m->pieces[k].part_pos = pos;
      pos += m->pieces[k].len;
    }
  }
  m->npieces = k;
  qsort(m->pieces, k, sizeof *m->pieces, piece_cmp);
  /* Join adjacent pieces; refuse overlaps. */
  for (uint32_t i = 0; i < k; i++) {
    fwd_piece *p = &m->pieces[i];
    if (i > 0 && p->off < m->pieces[i - 1].off + m->pieces[i - 1].len) return fwd_merge_free(m), -1;
    if (p->len == 0) continue;
    if (m->nseg == 0 || m->pieces[i - 1].off + m->pieces[i - 1].len != p->off) m->nseg++;
    p->merged_pos = m->total;
    m->total += p->len;
  }
  return 0;
}

int fwd_merge_fits(const fwd_merged *m, unsigned type, uint64_t max_request, uint32_t max_segments) {
  size_t body = rio_io_hdr_bytes(m->nseg) + (type == RIO_T_WRITE ? m->total : 0);
  return m->nseg <= max_segments && body <= max_request && (type != RIO_T_READ || m->total + 16 <= max_request);
}

uint8_t *fwd_merge_body(const fwd_merged *m, const fwd_part *parts, unsigned type, uint64_t handle, size_t *n) {
  size_t hb = rio_io_hdr_bytes(m->nseg);
  *n = hb + (type == RIO_T_WRITE ? m->total : 0);
  uint8_t *body = malloc(*n ? *n : 1);
  if (!body) return NULL;
  rio_wr w = rio_wr_init(body, *n);
  rio_put_io_hdr(&w, handle, 0, 0, m->nseg);
  uint64_t cur_off = 0, cur_len = 0;
  for (uint32_t i = 0; i < m->npieces; i++) {
    const fwd_piece *p = &m->pieces[i];
    if (p->len == 0) continue;
    if (cur_len && cur_off + cur_len == p->off) {
      cur_len += p->len;
      continue;
    }
    if (cur_len) rio_put_u64(&w, cur_off), rio_put_u64(&w, cur_len);
    cur_off = p->off, cur_len = p->len;
  }
  if (cur_len) rio_put_u64(&w, cur_off), rio_put_u64(&w, cur_len);
  if (type == RIO_T_WRITE)
    for (uint32_t i = 0; i < m->npieces; i++) {
      const fwd_part *pt = &parts[m->pieces[i].part];
      memcpy(body + hb + m->pieces[i].merged_pos, pt->body + pt->hb + m->pieces[i].part_pos, m->pieces[i].len);
    }
  return body;
}

void fwd_merge_by_part(fwd_merged *m) {
  if (m->npieces) qsort(m->pieces, m->npieces, sizeof *m->pieces, piece_part_cmp);
}

uint8_t *fwd_read_reply(const fwd_merged *m, uint32_t *at, uint32_t part, const fwd_part *pt, const uint8_t *data,
                        uint64_t done, size_t *n) {
  uint32_t end = *at;
  while (end < m->npieces && m->pieces[end].part == part) end++;
  uint8_t *b = malloc(RIO_STATUS + 8 + pt->io.total);
  if (b) {
    uint64_t got = 0;
    for (uint32_t s = *at; s < end; s++) {
      const fwd_piece *pp = &m->pieces[s];
      if (pp->len == 0) continue;
      uint64_t avail = done > pp->merged_pos ? done - pp->merged_pos : 0;
      uint64_t k = avail < pp->len ? avail : pp->len;
      memcpy(b + RIO_STATUS + 8 + got, data + pp->merged_pos, k);
      got += k;
      if (k < pp->len) break;
    }
    rio_wr w = rio_wr_init(b, RIO_STATUS + 8);
    rio_put_status(&w, RIO_OK);
    rio_put_u64(&w, got);
    *n = RIO_STATUS + 8 + got;
  }
  *at = end;
  return b;
}

void fwd_merge_free(fwd_merged *m) {
  free(m->pieces);
  m->pieces = NULL;
  m->npieces = m->nseg = 0;
  m->total = 0;
}
