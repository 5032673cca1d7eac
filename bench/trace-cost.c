/* pario-trace-cost: what a trace point costs, measured in one process without MPI launches
 * (a shared machine makes whole-run timings too noisy to show a 1 % effect): N spans of the
 * size libpario records for an MPI_File call (10 arguments), with tracing off (the one branch
 * each point costs then) and on (recording, and the JSON lines written to DIR at each full
 * buffer and at the end). CPU time of the process, and wall time.
 * usage: pario-trace-cost DIR [N]   (DIR receives client-0-<pid>.jsonl; remove it afterwards) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "trace/trace.h"

static double cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

/* One "call": a span with ten arguments, as api/calltrace.c records. volatile sink keeps the
 * loop from being optimized away when tracing is off. */
static volatile long sink;
static void points(long n) {
  for (long i = 0; i < n; i++) {
    uint64_t t0 = PARIO_TRACE_T0();
    sink += i;
    PARIO_TRACE_SPAN(PARIO_TC_API, "MPI_File_write_at", t0, PARIO_TA("file", 473269342339LL), PARIO_TA("rc", 0),
                     PARIO_TA("coll", 0), PARIO_TA("pos", i * 65536), PARIO_TA("bytes", 65536), PARIO_TA("count", 65536),
                     PARIO_TA("type_size", 1), PARIO_TA("type_extent", 1), PARIO_TA("type_runs", 1),
                     PARIO_TA("type_named", 1));
  }
}

static void measure(const char *what, long n) {
  double c0 = cpu_ns();
  uint64_t w0 = pario_trace_now();
  points(n);
  if (pario_trace_on) pario_trace_finalize(); /* the last buffer's lines are part of the cost */
  double c1 = cpu_ns();
  uint64_t w1 = pario_trace_now();
  printf("%-4s %9ld points: %8.2f ns CPU per point, %8.2f ns wall per point\n", what, n, (c1 - c0) / n,
         (double)(w1 - w0) / n);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: pario-trace-cost DIR [N]\n");
    return 2;
  }
  long n = argc > 2 ? atol(argv[2]) : 1000000;
  if (n <= 0) return 2;
  measure("off", n * 10);
  if (pario_trace_enable(argv[1]) != 0) {
    fprintf(stderr, "pario-trace-cost: cannot use %s\n", argv[1]);
    return 1;
  }
  pario_trace_set_rank(0);
  measure("on", n);
  return 0;
}
