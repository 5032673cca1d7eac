#!/usr/bin/env bash
# make demo: the native MPI-IO against pario on this machine, every MPI flavour built (Debian's
# Open MPI and MPICH; openmpi5, mpich5, impi where make deps could install them). First the
# examples (files compared byte for byte), then the benchmark sweep `pario bench run all --quick`
# over those flavours,
# which prints a headline per suite (overlap in the direct-I/O regime, where a nonblocking
# write can overlap the computation) and a summary table, and writes results/demo-*/report.html
# with summary.csv and summary.json beside it. Before the sweep, one traced run (PARIO_TRACE):
# the HPIO pattern of seed 001 at 4 ranks, collective and independent writes, merged into
# results/demo-*-trace/trace.json (Perfetto) and report.html (timeline and tables); then seed
# 001's experiments, quick, on pario-servers: results/demo-*-seed001/seed001.html. Then a
# remote run: a pario-server on 127.0.0.1 (a free port, a fresh secret, a temporary root), the
# checkpoint2d example at 4 ranks writing x-rio://127.0.0.1:PORT/ckpt.dat, its file compared
# with the same run on a local file; the server is stopped and its directory removed after it
# (and on Ctrl-C).
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
server=$build/mpich/server/pario-server example=$build/mpich/examples/checkpoint2d
if [ -x "$server" ] && [ -x "$example" ]; then
  echo "== remote run: checkpoint2d (4 ranks, MPICH, pario) on x-rio:// against a local file"
  rdir=$(mktemp -d "${TMPDIR:-/tmp}/pario-demo-remote.XXXXXX")
  spid=
  remote_cleanup() {
    if [ -n "$spid" ]; then kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; spid=; fi
    rm -rf "$rdir"
  }
  trap 'remote_cleanup; exit 130' INT TERM
  trap remote_cleanup EXIT
  mkdir -p "$rdir/root"
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$rdir/secret")
  # pario-server prints HOST:PORT as its first line once it accepts connections
  "$server" --root "$rdir/root" --listen 127.0.0.1:0 --secret-file "$rdir/secret" --allow-root \
    > "$rdir/address" 2> "$rdir/server.log" &
  spid=$!
  for _ in $(seq 100); do [ -s "$rdir/address" ] && break; sleep 0.05; done
  addr=$(head -1 "$rdir/address")
  echo "pario-server --root $rdir/root --listen 127.0.0.1:0 --secret-file $rdir/secret: listening on $addr"
  PARIO_RIO_SECRET_FILE=$rdir/secret timeout 60 scripts/mpirun.sh mpich 4 --pario "$build/mpich/src/libpario.so" \
    "$example" --file "x-rio://$addr/ckpt.dat" --keep
  timeout 60 scripts/mpirun.sh mpich 4 --pario "$build/mpich/src/libpario.so" "$example" --file "$rdir/local.dat" --keep \
    > /dev/null
  if cmp "$rdir/local.dat" "$rdir/root/ckpt.dat"; then
    echo "remote run: $(stat -c %s "$rdir/local.dat") bytes on the server, identical to the local run"
  else
    echo "remote run: the server's file differs from the local run" >&2
  fi
  remote_cleanup
  trap - INT TERM EXIT
fi
mpis=$(for f in $(scripts/flavours.sh list); do [ -x "$build/$f/bench/pario-bench" ] && echo "$f"; done | paste -sd,)
echo "== pario bench run all --quick --mpi $mpis"
exec "$build/venv/bin/pario" bench run all --quick --mpi "$mpis" --build-dir "$build" \
  --repeat "${PARIO_DEMO_REPEAT:-1}" --out "results/demo-$stamp"
