/* Hint parsing: one table of known keys applied from PARIO_HINTS (a file of "key value"
 * lines) and from MPI_Info; unknown keys are ignored and never reported back. */
#include "core/hints.h"
#include "core/comm.h"
#include "core/common.h"
#include "driver/driver.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_tristate(const char *v, int *out) {
  if (!strcmp(v, "enable") || !strcmp(v, "true")) *out = PARIO_ENABLE;
  else if (!strcmp(v, "disable") || !strcmp(v, "false")) *out = PARIO_DISABLE;
  else if (!strcmp(v, "automatic") || !strcmp(v, "auto")) *out = PARIO_AUTO;
  else return 0;
  return 1;
}

static const char *tristate_name(int v) {
  return v == PARIO_ENABLE ? "enable" : v == PARIO_DISABLE ? "disable" : "automatic";
}

static int parse_size(const char *v, long long *out) {
  char *end;
  long long x = strtoll(v, &end, 10);
  if (end == v || x < 0) return 0;
  while (isspace((unsigned char)*end)) end++;
  int shift = 0;
  if (*end == 'k' || *end == 'K') shift = 10;
  else if (*end == 'm' || *end == 'M') shift = 20;
  else if (*end == 'g' || *end == 'G') shift = 30;
  if (x > (LLONG_MAX >> shift)) return 0; /* would overflow: not a size */
  *out = x << shift;
  return 1;
}

/* Keep a driver's key verbatim (a later value replaces an earlier one). */
static void apply_drv(pario_hints *h, const char *k, const char *v) {
  int i = 0;
  while (i < h->ndrv && strcmp(h->drv[i].key, k)) i++;
  if (i == PARIO_DRV_HINTS || strlen(k) >= sizeof h->drv[i].key || strlen(v) >= sizeof h->drv[i].value) {
    pario_log(1, "hint %s ignored (too long, or too many driver hints)", k);
    return;
  }
  snprintf(h->drv[i].key, sizeof h->drv[i].key, "%s", k);
  snprintf(h->drv[i].value, sizeof h->drv[i].value, "%s", v);
  if (i == h->ndrv) h->ndrv++;
}

const char *pario_hints_drv(const void *hints, const char *key) {
  const pario_hints *h = hints;
  for (int i = 0; i < h->ndrv; i++)
    if (!strcmp(h->drv[i].key, key)) return h->drv[i].value;
  return NULL;
}

/* Apply one key; invalid values leave the hint unchanged (hints never cause errors). */
static void apply(pario_hints *h, const char *k, const char *v) {
  long long x;
  if (!strcmp(k, "cb_buffer_size")) { if (parse_size(v, &x) && x > 0) h->cb_buffer_size = x; }
  else if (!strcmp(k, "cb_nodes")) { if (parse_size(v, &x) && x > 0 && x < 1 << 30) h->cb_nodes = (int)x, h->cb_nodes_given = 1; }
  else if (!strcmp(k, "romio_cb_read")) parse_tristate(v, &h->romio_cb_read);
  else if (!strcmp(k, "romio_cb_write")) parse_tristate(v, &h->romio_cb_write);
  else if (!strcmp(k, "romio_ds_read")) parse_tristate(v, &h->romio_ds_read);
  else if (!strcmp(k, "romio_ds_write")) parse_tristate(v, &h->romio_ds_write);
  else if (!strcmp(k, "ind_rd_buffer_size")) { if (parse_size(v, &x) && x > 0) h->ind_rd_buffer_size = x, h->ind_given |= 1; }
  else if (!strcmp(k, "pario_read_max_gap")) { if (parse_size(v, &x)) h->read_max_gap = x; }
  else if (!strcmp(k, "ind_wr_buffer_size")) { if (parse_size(v, &x) && x > 0) h->ind_wr_buffer_size = x, h->ind_given |= 2; }
  else if (!strcmp(k, "striping_unit")) { if (parse_size(v, &x) && x > 0) h->striping_unit = x; }
  else if (!strcmp(k, "striping_factor")) { if (parse_size(v, &x) && x > 0 && x < 1 << 30) h->striping_factor = (int)x; }
  else if (!strcmp(k, "cb_block_size")) { if (parse_size(v, &x) && x > 0) h->cb_block_size = x; }
  else if (!strcmp(k, "file_perm")) {
    char *end;
    unsigned long p = strtoul(v, &end, 8); /* permissions are written in octal */
    if (end != v && *end == '\0' && p <= 07777) h->file_perm = (unsigned)p;
  }
  else if (!strcmp(k, "pario_direct_io")) { int t; if (parse_tristate(v, &t)) h->direct_io = t == PARIO_ENABLE; }
  else if (!strcmp(k, "pario_io_threads")) { if (parse_size(v, &x) && x >= 1 && x <= 64) h->io_threads = (int)x, h->io_threads_given = 1; }
  else if (!strcmp(k, "romio_no_indep_rw")) { int t; if (parse_tristate(v, &t)) h->romio_no_indep_rw = t == PARIO_ENABLE; }
  else if (!strcmp(k, "pario_trace")) snprintf(h->trace, sizeof h->trace, "%s", v);
  else if (!strcmp(k, "pario_trace_filter")) snprintf(h->trace_filter, sizeof h->trace_filter, "%s", v);
  else if (!strcmp(k, "pario_coll_view_cache")) { if (parse_size(v, &x) && x >= 1 && x <= PARIO_COLL_VIEW_CACHE_MAX) h->coll_view_cache = (int)x; }
  else if (!strcmp(k, "pario_coll_chunk")) { if (parse_size(v, &x) && x >= 4096 && x <= (1LL << 30)) h->coll_chunk = x; }
  else if (!strcmp(k, "pario_coll_window_max")) { if (parse_size(v, &x) && x >= 4096 && x <= (1LL << 30)) h->coll_window_max = x; }
  else if (!strcmp(k, "pario_view_defer")) { int t; if (parse_tristate(v, &t) && t != PARIO_AUTO) h->view_defer = t == PARIO_ENABLE; }
  else if (!strcmp(k, "pario_coll_pipeline")) { int t; if (parse_tristate(v, &t) && t != PARIO_AUTO) h->coll_pipeline = t == PARIO_ENABLE; }
  else if (!strcmp(k, "pario_coll_direct")) { int t; if (parse_tristate(v, &t) && t != PARIO_AUTO) h->coll_direct = t == PARIO_ENABLE; }
  else if (!strcmp(k, "pario_wait")) {
    if (!strcmp(v, "spin")) h->wait_mode = PARIO_WAIT_SPIN;
    else if (!strcmp(v, "nap")) h->wait_mode = PARIO_WAIT_NAP;
    else if (!strcmp(v, "auto") || !strcmp(v, "automatic")) h->wait_mode = PARIO_AUTO;
  }
  else if (!strcmp(k, "pario_wait_nap_max")) { if (parse_size(v, &x) && x >= 1 && x <= 1000000) h->wait_nap_max_us = x; }
  else if (!strcmp(k, "pario_wait_yield")) { if (parse_size(v, &x) && x <= 10000000) h->wait_yield_us = x; }
  else if (!strcmp(k, "pario_timeout")) {
    char *end;
    double sec = strtod(v, &end);
    if (end != v && *end == '\0' && sec >= 0 && sec <= 1e7) h->timeout_ms = (long long)(sec * 1000 + 0.5);
  }
  else if (pario_driver_hint_key(k)) apply_drv(h, k, v);
  else if (!strcmp(k, "pario_sharedfp")) {
    static const char *ok[] = {"auto", "sm", "rma", "addproc", "lockedfile", "individual", "server", NULL};
    for (int i = 0; ok[i]; i++)
      if (!strcmp(v, ok[i])) snprintf(h->sharedfp, sizeof h->sharedfp, "%s", v);
  }
}

/* Whether key k came earlier in the hints file (and remember it if not): as in ROMIO, a key
 * given twice keeps its first value. Without memory every line counts. */
static int seen_before(char ***seen, size_t *n, const char *k) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp((*seen)[i], k)) return 1;
  char **grown = realloc(*seen, (*n + 1) * sizeof **seen);
  if (!grown) return 0;
  *seen = grown;
  if ((grown[*n] = strdup(k))) (*n)++;
  return 0;
}

/* PARIO_HINTS, or ROMIO_HINTS for programs that come from ROMIO with their hints file. A key
 * given twice keeps its first value (ROMIO's rule for its hints file). */
static void apply_env_file(pario_hints *h) {
  const char *var = "PARIO_HINTS", *path = getenv(var);
  if (!path || !*path) path = getenv(var = "ROMIO_HINTS");
  if (!path || !*path) return;
  FILE *f = fopen(path, "r");
  if (!f) {
    pario_log(1, "%s: cannot open %s", var, path);
    return;
  }
  char line[1024], k[256], v[768];
  char **seen = NULL;
  size_t nseen = 0;
  while (fgets(line, sizeof line, f)) {
    char *p = line;
    while (isspace((unsigned char)*p)) p++;
    if (*p == '#' || !*p) continue;
    if (sscanf(p, "%255s %767s", k, v) == 2 && !seen_before(&seen, &nseen, k)) apply(h, k, v);
  }
  for (size_t i = 0; i < nseen; i++) free(seen[i]);
  free(seen);
  fclose(f);
}

static void apply_info(pario_hints *h, MPI_Info info) {
  int nkeys = 0, flag;
  char k[MPI_MAX_INFO_KEY + 1], v[1024];
  if (info == MPI_INFO_NULL || PMPI_Info_get_nkeys(info, &nkeys) != MPI_SUCCESS) return;
  for (int i = 0; i < nkeys; i++) {
    if (PMPI_Info_get_nthkey(info, i, k) != MPI_SUCCESS) continue;
    if (PMPI_Info_get(info, k, (int)sizeof v - 1, v, &flag) == MPI_SUCCESS && flag) apply(h, k, v);
  }
}

void pario_hints_init(pario_hints *h, MPI_Info info) {
  memset(h, 0, sizeof *h);
  h->cb_buffer_size = 16 << 20;
  h->ind_rd_buffer_size = 4 << 20;
  h->ind_wr_buffer_size = 512 << 10;
  h->read_max_gap = PARIO_READ_MAX_GAP;
  h->file_perm = 0666; /* the process umask still applies */
  h->io_threads = 1;
  snprintf(h->sharedfp, sizeof h->sharedfp, "auto");
  h->coll_view_cache = PARIO_COLL_VIEW_CACHE;
  h->view_defer = 1;
  h->coll_chunk = PARIO_COLL_CHUNK;
  h->coll_window_max = PARIO_COLL_WINDOW_MAX;
  h->wait_nap_max_us = PARIO_WAIT_NAP_MAX_US;
  h->wait_yield_us = PARIO_WAIT_YIELD_US;
  apply_env_file(h);
  apply_info(h, info);
}

void pario_hints_update(pario_hints *h, MPI_Info info) {
  unsigned perm = h->file_perm; /* only meaningful at creation */
  int direct = h->direct_io;    /* once on, direct I/O stays on for the file's life */
  apply_info(h, info);
  h->file_perm = perm;
  h->direct_io |= direct;
}

static void set_ll(MPI_Info info, const char *k, long long x) {
  char v[32];
  snprintf(v, sizeof v, "%lld", x);
  PMPI_Info_set(info, k, v);
}

int pario_hints_to_info(const pario_hints *h, int nodes, MPI_Info *info) {
  int rc = PMPI_Info_create(info);
  if (rc != MPI_SUCCESS) return rc;
  char perm[16];
  set_ll(*info, "cb_buffer_size", h->cb_buffer_size);
  set_ll(*info, "cb_nodes", h->cb_nodes);
  PMPI_Info_set(*info, "romio_cb_read", tristate_name(h->romio_cb_read));
  PMPI_Info_set(*info, "romio_cb_write", tristate_name(h->romio_cb_write));
  PMPI_Info_set(*info, "romio_ds_read", tristate_name(h->romio_ds_read));
  PMPI_Info_set(*info, "romio_ds_write", tristate_name(h->romio_ds_write));
  set_ll(*info, "ind_rd_buffer_size", h->ind_rd_buffer_size);
  set_ll(*info, "ind_wr_buffer_size", h->ind_wr_buffer_size);
  set_ll(*info, "pario_read_max_gap", h->read_max_gap);
  if (h->striping_unit) set_ll(*info, "striping_unit", h->striping_unit);
  if (h->striping_factor) set_ll(*info, "striping_factor", h->striping_factor);
  if (h->cb_block_size) set_ll(*info, "cb_block_size", h->cb_block_size);
  snprintf(perm, sizeof perm, "%o", h->file_perm);
  PMPI_Info_set(*info, "file_perm", perm);
  PMPI_Info_set(*info, "pario_direct_io", h->direct_io ? "true" : "false");
  set_ll(*info, "pario_io_threads", h->io_threads);
  PMPI_Info_set(*info, "pario_sharedfp", h->sharedfp);
  set_ll(*info, "pario_coll_view_cache", h->coll_view_cache);
  set_ll(*info, "pario_coll_chunk", h->coll_chunk);
  set_ll(*info, "pario_coll_window_max", h->coll_window_max);
  PMPI_Info_set(*info, "pario_view_defer", h->view_defer ? "true" : "false");
  PMPI_Info_set(*info, "pario_coll_pipeline", h->coll_pipeline ? "true" : "false");
  PMPI_Info_set(*info, "pario_coll_direct", h->coll_direct ? "true" : "false");
  PMPI_Info_set(*info, "pario_wait", h->wait_mode == PARIO_WAIT_SPIN ? "spin" : h->wait_mode == PARIO_WAIT_NAP ? "nap" : "auto");
  set_ll(*info, "pario_wait_nap_max", h->wait_nap_max_us);
  set_ll(*info, "pario_wait_yield", h->wait_yield_us);
  char tmo[32];
  snprintf(tmo, sizeof tmo, "%lld.%03lld", h->timeout_ms / 1000, h->timeout_ms % 1000);
  PMPI_Info_set(*info, "pario_timeout", tmo);
  /* ROMIO's keys that programs from ROMIO look for: collective-only access as promised, and
   * aggregator placement as pario does it: one per node, more on each node only when
   * cb_nodes exceeds the node count. */
  PMPI_Info_set(*info, "romio_no_indep_rw", h->romio_no_indep_rw ? "true" : "false");
  PMPI_Info_set(*info, "cb_config_list", h->cb_nodes > nodes ? "*:*" : "*:1");
  return MPI_SUCCESS;
}

static void shared_pack(const pario_hints *h, long long *v) {
  v[0] = h->cb_buffer_size;
  v[1] = h->cb_nodes_given ? h->cb_nodes : -h->cb_nodes; /* the sign: given or default */
  v[2] = h->romio_cb_read;
  v[3] = h->romio_cb_write;
  v[4] = h->striping_unit;
  v[5] = h->cb_block_size;
  memcpy(&v[6], h->sharedfp, 2 * sizeof(long long));
  v[8] = h->coll_view_cache;
  v[9] = h->coll_chunk;
  v[10] = h->coll_window_max;
  v[11] = h->view_defer;
}

static void shared_unpack(pario_hints *h, const long long *v) {
  h->cb_buffer_size = v[0];
  h->cb_nodes = (int)(v[1] < 0 ? -v[1] : v[1]);
  h->cb_nodes_given = v[1] > 0;
  h->romio_cb_read = (int)v[2];
  h->romio_cb_write = (int)v[3];
  h->striping_unit = v[4];
  h->cb_block_size = v[5];
  memcpy(h->sharedfp, &v[6], 2 * sizeof(long long));
  h->sharedfp[sizeof h->sharedfp - 1] = '\0';
  h->coll_view_cache = (int)v[8];
  h->coll_chunk = v[9];
  h->coll_window_max = v[10];
  h->view_defer = (int)v[11];
}

/* The one way ranks agree on hints: one broadcast from rank 0 carries its values of the hints
 * that must be the same everywhere, and any extra values of rank 0's (open's result and the
 * file's id), and every rank adopts them. */
int pario_hints_agree(MPI_Comm comm, pario_hints *h, long long *extra, int nextra) {
  enum { MAXEXTRA = 4 };
  long long v[PARIO_HINTS_SHARED + MAXEXTRA] = {0};
  int rank = 0;
  if (nextra > MAXEXTRA) return MPI_ERR_INTERN;
  PMPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    shared_pack(h, v);
    for (int i = 0; i < nextra; i++) v[PARIO_HINTS_SHARED + i] = extra[i];
  }
  MPI_Request r;
  if (pario_wait_stuck_ms() || PMPI_Ibcast(v, PARIO_HINTS_SHARED + nextra, MPI_LONG_LONG, 0, comm, &r) != MPI_SUCCESS)
    return MPI_ERR_OTHER; /* after a pario_timeout (comm.h) nothing is posted */
  if (pario_wait_all(1, &r, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return MPI_ERR_OTHER; /* v may never arrive */
  shared_unpack(h, v);
  for (int i = 0; i < nextra; i++) extra[i] = v[PARIO_HINTS_SHARED + i];
  return MPI_SUCCESS;
}
