/* pario-bench synthetic compute: the workload of the overlap benchmark (Büttner's calculation
 * block) and of the btio compute step. A unit is a short dependent floating-point chain, so the
 * cost scales linearly with the unit count and does not touch memory. */
#include "bench.h"

static volatile double sink;

double compute_units(long long units) {
  double x = 1.0 + (double)(units & 7) * 1e-9, y = 0.5;
  for (long long i = 0; i < units; i++) {
    x = x * 1.0000001 + 1e-7;
    y = y * 0.9999999 + x * 1e-9;
  }
  sink = x + y;
  return sink;
}

double compute_rate(void) {
  long long units = 1 << 16;
  double t = 0;
  for (;;) {
    double t0 = now();
    compute_units(units);
    t = now() - t0;
    if (t > 0.05 || units > (1LL << 40)) break;
    units *= t > 0.005 ? (long long)(0.06 / t) + 1 : 8;
  }
  return (double)units / (t > 0 ? t : 1e-9);
}

double compute_rate_all(void) {
  double mine = compute_rate(), low = mine;
  MPI_Allreduce(&mine, &low, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  return low;
}
