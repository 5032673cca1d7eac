#!/usr/bin/env bash
# make demo: the native MPI-IO against pario on this machine, both MPIs. First the examples
# (files compared byte for byte), then the benchmark sweep `pario bench run all --quick`,
# which prints a headline per suite (overlap in the direct-I/O regime, where a nonblocking
# write can overlap the computation) and a summary table, and writes results/demo-*/report.html
# with summary.csv and summary.json beside it. Ctrl-C stops the MPI job in progress and exits
# 130 (pario runs in place of this script, so it gets the signal itself). One round per
# configuration (PARIO_DEMO_REPEAT=5 for medians with spreads; a demo's figures are too short to
# quote anyway, see docs/measuring.md).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
if [ -x scripts/compare-examples.sh ]; then
  echo "== examples: native MPI-IO vs pario, files compared byte for byte"
  scripts/compare-examples.sh "$build"
fi
echo "== pario bench run all --quick"
exec "$build/venv/bin/pario" bench run all --quick --build-dir "$build" \
  --repeat "${PARIO_DEMO_REPEAT:-1}" --out "results/demo-$(date -u +%Y%m%d-%H%M%S)"
