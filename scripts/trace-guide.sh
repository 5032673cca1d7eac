#!/usr/bin/env bash
# The traced runs and the screenshots of docs/tracing.md's "Finding where the time went":
# pario-bench noncontig (4 ranks, MPICH, 16384 regions of 64 B per rank with 128 B gaps)
# written independently without data sieving (slow), then collectively (fast); stats and
# reports of both; screenshots into docs/img/. Usage: scripts/trace-guide.sh [BUILD] [OUT]
set -euo pipefail
build=${1:-build}
out=${2:-results/trace-guide}
here=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out/files"
for access in independent collective; do
  cb=$([ "$access" = independent ] && echo disable || echo enable)
  echo "== $access: PARIO_TRACE=$out/$access pario-bench noncontig"
  PARIO_TRACE=$out/$access "$here/scripts/mpirun.sh" mpich 4 --pario "$build/mpich/src/libpario.so" \
    "$build/mpich/bench/pario-bench" noncontig --region-size 64 --region-count 16384 --region-spacing 128 \
    --op write --access "$access" --mem contig --file noncontig -i 1 --repeat 1 \
    -H romio_cb_write=$cb -H romio_ds_write=disable --dir "$out/files" -o "$out/files/results.jsonl"
  "$build/venv/bin/pario" trace stats "$out/$access"
  "$build/venv/bin/pario" trace report "$out/$access"
done
rm -rf "$out/files"
"$build/venv/bin/python" "$here/scripts/trace_screenshots.py" "$out/independent/report.html" \
  "$out/collective/report.html" "$here/docs/img"
