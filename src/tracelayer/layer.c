/* The tracer's lifecycle layer (slot PARIO_SLOT_TRACE): at open it turns tracing on for the
 * hint pario_trace, names the file and this rank in the trace and aligns this rank's clock
 * to rank 0's; after close it flushes the buffers; at MPI_Finalize it closes the trace.
 * The recorder itself is src/trace, beneath every layer. */
#include <string.h>

#include "core/comm.h"
#include "core/file.h"
#include "core/layer.h"
#include "trace/filter.h"
#include "trace/trace.h"

/* Clock alignment of this process to world rank 0 (core's ping-pong, minimum round trip),
 * measured over f's communicator when its rank 0 is world rank 0: every rank of f->comm
 * takes the same branch, so the collective is entered by all or none. Each such open
 * measures again; the trace keeps the latest offset. */
static void align_clock(pario_file *f) {
  int world0 = 0, zero = 0;
  MPI_Group g, wg;
  PMPI_Comm_group(f->comm, &g);
  PMPI_Comm_group(MPI_COMM_WORLD, &wg);
  PMPI_Group_translate_ranks(g, 1, &zero, wg, &world0);
  PMPI_Group_free(&g);
  PMPI_Group_free(&wg);
  if (world0 != 0) return;
  long long off = 0, err = -1;
  if (pario_clock_offset(f->comm, 1, &off, &err) != MPI_SUCCESS) off = 0, err = -1;
  pario_trace_set_clock(off, err);
}

static int hook_open(pario_file *f, void **state) {
  (void)state;
  if (f->hints.trace_filter[0]) pario_trace_filter(f->hints.trace_filter, "hint pario_trace_filter");
  int e = f->hints.trace[0] && !PARIO_TRACING() ? pario_trace_enable(f->hints.trace) : 0;
  if (e) pario_log(0, "trace: cannot make the trace directory %s (hint pario_trace): %s; not tracing", f->hints.trace, strerror(e));
  if (!PARIO_TRACING()) return MPI_SUCCESS;
  uint64_t t0 = pario_trace_now();
  int wr = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &wr);
  pario_trace_set_rank(wr);
  pario_trace_file(f->uid, f->filename, f->nprocs);
  align_clock(f);
  PARIO_TRACE_SPANX(PARIO_TC_API, "open", t0, 0, "driver", f->drv->name, PARIO_TA("file", f->uid),
                    PARIO_TA("nprocs", f->nprocs), PARIO_TA("rank", f->rank), PARIO_TA("nodes", f->nodes),
                    PARIO_TA("cb_buffer_size", f->hints.cb_buffer_size), PARIO_TA("cb_nodes", f->hints.cb_nodes));
  return MPI_SUCCESS;
}

static void hook_get_info(pario_file *f, void *state, MPI_Info info) {
  (void)f, (void)state;
  if (PARIO_TRACING()) PMPI_Info_set(info, "pario_trace", pario_trace_dir());
  if (PARIO_TRACING() && pario_trace_filter_spec()[0]) PMPI_Info_set(info, "pario_trace_filter", pario_trace_filter_spec());
}

/* After every layer finished with the file (release runs in reverse slot order, so this is
 * the last hook of a close): the events of this file reach the trace directory. */
static void hook_release(pario_file *f, void *state) {
  (void)f, (void)state;
  if (PARIO_TRACING()) pario_trace_flush();
}

static void hook_finalize(void) { pario_trace_finalize(); }

static const pario_layer tracer_layer = {
    .name = "trace",
    .open = hook_open,
    .get_info = hook_get_info,
    .release = hook_release,
    .finalize = hook_finalize,
};

__attribute__((constructor)) static void tracer_register(void) { pario_layer_register(PARIO_SLOT_TRACE, &tracer_layer); }
