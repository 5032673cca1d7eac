/* Hints: MPI_Info keys (MPI reserved, ROMIO's, pario_*) and PARIO_HINTS defaults parsed into
 * one typed struct; get_info reports what is in effect. */
#ifndef PARIO_HINTS_H
#define PARIO_HINTS_H

#include <mpi.h>

#include "rio/window.h"

enum { PARIO_AUTO = 0, PARIO_ENABLE = 1, PARIO_DISABLE = 2 };
enum { PARIO_WAIT_SPIN = 1, PARIO_WAIT_NAP = 2 }; /* pario_wait (PARIO_AUTO: decided at run time) */
enum { PARIO_DRV_HINTS = 6 };
/* pario_read_max_gap's default: reading a hole through the page cache costs a copy, one read
 * more costs a system call; where they cost the same is measured in docs/collective.md
 * ("Read volume"). The server's READ reads through the same holes (rio/window.h). */
#define PARIO_READ_MAX_GAP ((long long)RIO_WINDOW_MAX_GAP)
/* The tuning hints' defaults (hints.h's last block). */
enum { PARIO_COLL_VIEW_CACHE = 4, PARIO_COLL_VIEW_CACHE_MAX = 16 };
#define PARIO_COLL_CHUNK (512LL << 10)
#define PARIO_COLL_WINDOW_MAX (4LL << 20)
#define PARIO_WAIT_NAP_MAX_US 200LL
#define PARIO_WAIT_YIELD_US 2000LL

typedef struct pario_hints {
  long long cb_buffer_size;
  int cb_nodes;            /* 0 = default (one aggregator per node) */
  int cb_nodes_given;      /* cb_nodes came from the user (info or PARIO_HINTS) */
  int romio_cb_read, romio_cb_write, romio_ds_read, romio_ds_write; /* PARIO_AUTO/ENABLE/DISABLE */
  long long ind_rd_buffer_size, ind_wr_buffer_size;
  long long read_max_gap;  /* pario_read_max_gap: the widest hole a sieving or aggregated
                              read reads through to join two pieces in one read */
  int ind_given;           /* 1: ind_rd_buffer_size, 2: ind_wr_buffer_size came from the user */
  long long striping_unit; /* 0 = not given */
  int striping_factor;     /* 0 = not given */
  long long cb_block_size; /* 0 = not given */
  unsigned file_perm;      /* creation mode */
  int direct_io;           /* pario_direct_io */
  int io_threads;          /* pario_io_threads */
  int io_threads_given;    /* pario_io_threads came from the user */
  char sharedfp[16];       /* pario_sharedfp */
  char trace[256];        /* pario_trace: trace directory ("" = none; PARIO_TRACE also turns
                              tracing on, src/tracelayer) */
  char trace_filter[512]; /* pario_trace_filter: what is traced (src/trace/filter.h) */
  int romio_no_indep_rw;   /* ROMIO's promise of collective-only access: accepted and
                              reported; pario opens on every rank either way */
  /* Tuning constants as hints (issue 34 item 5; docs/collective.md "Tuning hints"): pario_*
   * keys in an info or a PARIO_HINTS line, with the defaults below. */
  int coll_view_cache;       /* pario_coll_view_cache: sets of every rank's views a collective
                                context keeps (1..16; PARIO_COLL_VIEW_CACHE) */
  long long coll_chunk;      /* pario_coll_chunk: bytes of a window an aggregator fills and
                                writes in one piece (PARIO_COLL_CHUNK) */
  long long coll_window_max; /* pario_coll_window_max: largest collective window on local
                                storage (PARIO_COLL_WINDOW_MAX) */
  int view_defer;            /* pario_view_defer: set_view's agreement may travel with the
                                next collective data call (1, default) or is its own (0) */
  int coll_pipeline;         /* pario_coll_pipeline: an aggregator keeps two windows in
                                flight, round k's storage access in a thread while round
                                k+1's data moves (1), or one round at a time (0, default) */
  int coll_direct;           /* pario_coll_direct: an aggregator receives each piece into its
                                place in the window and sends it from there with a datatype
                                (1), or stages the pieces and copies them (0, default) */
  int wait_mode;             /* pario_wait: PARIO_AUTO (spin on dedicated cores of an idle
                                node, else nap),
                                PARIO_WAIT_SPIN or PARIO_WAIT_NAP (core/comm.c) */
  long long wait_nap_max_us; /* pario_wait_nap_max: the longest nap between polls, us */
  long long wait_yield_us;   /* pario_wait_yield: how long short waits yield before napping, us */
  long long timeout_ms;      /* pario_timeout (seconds, decimals allowed): how long pario's
                                internal waits may last before the call fails, in ms
                                (0: for ever, default; core/comm.h) */
  /* A driver's own keys (those under its hint_prefix, driver/driver.h), kept verbatim for
   * its open_ex; the driver reports them itself. */
  struct {
    char key[48], value[512];
  } drv[PARIO_DRV_HINTS];
  int ndrv;
} pario_hints;

/* Defaults, then the PARIO_HINTS file (ROMIO_HINTS when PARIO_HINTS is not set: the same
 * "key value" lines), then info (may be MPI_INFO_NULL). */
void pario_hints_init(pario_hints *h, MPI_Info info);
/* The value of a driver hint (see drv above), or NULL: the getter of pario_drv_args. */
const char *pario_hints_drv(const void *hints, const char *key);
/* Apply the keys of info that may change after open. */
void pario_hints_update(pario_hints *h, MPI_Info info);
/* The hints that must be the same on every rank (the collective-buffering ones, which make
 * the two-phase plan, and pario_sharedfp): packed into PARIO_HINTS_SHARED numbers so that
 * every rank can adopt rank 0's values. */
enum { PARIO_HINTS_SHARED = 12 };
/* Every rank of comm adopts rank 0's shared hints; extra (up to 4 values) travels with them
 * from rank 0 in the same broadcast. Collective. MPI_SUCCESS or an error class. */
int pario_hints_agree(MPI_Comm comm, pario_hints *h, long long *extra, int nextra);
/* A new info object with the hints in effect (nodes: the file's node count, for the
 * aggregator placement reported as ROMIO's cb_config_list). */
int pario_hints_to_info(const pario_hints *h, int nodes, MPI_Info *info);

#endif
