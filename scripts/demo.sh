#!/usr/bin/env bash
# make demo: the native MPI-IO against pario on this machine, both MPIs. First the examples
# (files compared byte for byte), then the benchmark sweep `pario bench run all --quick`,
# which prints a headline per suite (overlap in the direct-I/O regime, where a nonblocking
# write can overlap the computation) and a summary table, and writes results/demo-*/report.html
# with summary.csv and summary.json beside it. Before the sweep, one traced run (PARIO_TRACE):
# the HPIO pattern of seed 001 at 4 ranks, collective and independent writes, merged into
# results/demo-*-trace/trace.json (Perfetto) and report.html (timeline and tables); then seed
# 001's experiments, quick, on pario-servers: results/demo-*-seed001/seed001.html.
# Ctrl-C stops the MPI job in progress and exits 130 (pario runs in place of this script, so
# it gets the signal itself). One round per configuration (PARIO_DEMO_REPEAT=5 for medians
# with spreads; a demo's figures are too short to quote anyway, see docs/measuring.md).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
if [ -x scripts/compare-examples.sh ]; then
  echo "== examples: native MPI-IO vs pario, files compared byte for byte"
  scripts/compare-examples.sh "$build"
fi
stamp=$(date -u +%Y%m%d-%H%M%S)
trace=results/demo-$stamp-trace
if [ -x "$build/mpich/bench/pario-bench" ]; then
  echo "== traced run: PARIO_TRACE=$trace pario-bench noncontig (4 ranks, MPICH, pario)"
  mkdir -p "$trace.files"
  PARIO_TRACE=$trace scripts/mpirun.sh mpich 4 --pario "$build/mpich/src/libpario.so" \
    "$build/mpich/bench/pario-bench" noncontig --region-size 1024 --region-count 2048 --op write \
    -i 2 -H cb_buffer_size=1M --dir "$trace.files" -o "$trace.files/results.jsonl"
  rm -rf "$trace.files"
  "$build/venv/bin/pario" trace merge "$trace" -o "$trace/trace.json"
  "$build/venv/bin/pario" trace stats "$trace"
  "$build/venv/bin/pario" trace report "$trace"
fi
if [ -x "$build/mpich/bench/pario-bench" ] && [ -x "$build/mpich/server/pario-server" ]; then
  echo "== seed 001 on pario-server: pario trace experiment seed001 --quick"
  "$build/venv/bin/pario" --build-dir "$build" trace experiment seed001 --quick --out "results/demo-$stamp-seed001"
fi
echo "== pario bench run all --quick"
exec "$build/venv/bin/pario" bench run all --quick --build-dir "$build" \
  --repeat "${PARIO_DEMO_REPEAT:-1}" --out "results/demo-$stamp"
