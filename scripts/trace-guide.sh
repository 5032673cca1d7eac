#!/usr/bin/env bash
# The traced runs and the screenshots of docs/tracing.md's "Finding where the time went":
# pario-bench noncontig (4 ranks, MPICH, 16384 regions of 64 B per rank with 128 B gaps)
# written independently without data sieving (slow), then collectively (fast); stats and
# reports of both; a remote run (seed 001's quick experiment, one configuration's trace) for a
# request and its server operations; screenshots into docs/img/.
# Usage: scripts/trace-guide.sh [BUILD] [OUT]
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
echo "== remote: pario trace experiment seed001 --quick (its 1024 B, 128 KiB buffer configuration)"
"$build/venv/bin/pario" --build-dir "$build" trace experiment seed001 --quick --out "$out/seed001" >/dev/null
"$build/venv/bin/pario" trace report "$out/seed001/traces/r1024-coll-cb131072" -o "$out/remote.html"
"$build/venv/bin/python" "$here/scripts/trace_screenshots.py" "$out/independent/report.html" \
  "$out/collective/report.html" "$out/remote.html" "$here/docs/img"
