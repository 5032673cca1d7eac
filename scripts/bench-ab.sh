#!/usr/bin/env bash
# A/B comparison of two libpario builds (before and after a change) with pario-bench: the
# same benchmark, ROUNDS times, A and B alternating in the same launch conditions, the page
# cache's dirty data written back and the machine left to settle between runs. Prints, per
# measurement, the median of each side, its spread (min-max) and B/A, of mb_per_s (overlap:
# ratio, the time of I/O + compute over I/O then compute; lower is better), or of the metric
# named by BENCH_AB_METRIC.
# usage: bench-ab.sh MPI NP ROUNDS LIBPARIO_A LIBPARIO_B OUTDIR -- PARIO-BENCH [SUITE ARGS...]
# (LIBPARIO_A "native": side A is the MPI's own MPI-IO, nothing preloaded)
# BENCH_AB_SETTLE=S seconds of pause after the sync (default 3); BENCH_AB_BEFORE='COMMAND' runs
# after the settle step, right before each launch (e.g. a dd that leaves writeback running);
# BENCH_AB_AFTER='COMMAND' runs right after each launch (e.g. stops what BEFORE started).
# example:
#   scripts/bench-ab.sh mpich 4 5 /tmp/before/libpario.so build/mpich/src/libpario.so /tmp/ab \
#     -- build/mpich/bench/pario-bench noncontig --region-count 32768 --dir /tmp
set -euo pipefail
if [ $# -lt 8 ] || [ "$7" != "--" ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
mpi=$1 np=$2 rounds=$3 liba=$4 libb=$5 out=$6
shift 7
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
trap 'echo "bench-ab: interrupted" >&2; [ -n "${BENCH_AB_AFTER:-}" ] && sh -c "$BENCH_AB_AFTER"; exit 130' INT TERM
settle() { sync; sleep "${BENCH_AB_SETTLE:-3}"; }
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    lib=$liba; [ $side = B ] && lib=$libb
    echo "bench-ab: round $r/$rounds, $side" >&2
    settle
    [ -n "${BENCH_AB_BEFORE:-}" ] && sh -c "$BENCH_AB_BEFORE"
    if [ "$lib" = native ]; then "$here/mpirun.sh" "$mpi" "$np" "$@" -o "$out/$side.jsonl" >/dev/null
    else "$here/mpirun.sh" "$mpi" "$np" --pario "$lib" "$@" -o "$out/$side.jsonl" >/dev/null; fi
    [ -n "${BENCH_AB_AFTER:-}" ] && sh -c "$BENCH_AB_AFTER"
  done
done
python3 - "$out/A.jsonl" "$out/B.jsonl" <<'EOF'
import json, os, statistics, sys
def load(p):
    d = {}
    for line in open(p):
        r = json.loads(line)
        if r.get("status") != "ok":
            continue
        name = os.environ.get("BENCH_AB_METRIC") or ("ratio" if r["suite"] == "overlap" else "mb_per_s")
        v = r["metrics"].get(name)
        if v is None:
            continue
        params = {k: v2 for k, v2 in r["params"].items() if k != "hints"}
        key = (r["suite"], r["test"], json.dumps(params, sort_keys=True))
        d.setdefault(key, []).append(v)
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
keys = sorted(set(a) & set(b))
# Show only the parameters that differ between the measurements.
allp = [json.loads(k[2]) for k in keys]
vary = sorted({p for d in allp for p in d if p not in ("access", "op") and len({json.dumps(x.get(p)) for x in allp}) > 1})
print("metric:", os.environ.get("BENCH_AB_METRIC") or "mb_per_s (overlap: ratio, lower is better)")
print(f"{'test':32} {'params':36} {'A median (min-max)':>26} {'B median (min-max)':>26} {'B/A':>6}  n")
for k, p in zip(keys, allp):
    ma, mb = statistics.median(a[k]), statistics.median(b[k])
    ps = ",".join(f"{x}={p.get(x)}" for x in vary)[:36]
    fa = f"{ma:.4g} ({min(a[k]):.4g}-{max(a[k]):.4g})"
    fb = f"{mb:.4g} ({min(b[k]):.4g}-{max(b[k]):.4g})"
    print(f"{k[0] + ' ' + k[1]:32} {ps:36} {fa:>26} {fb:>26} {mb / ma if ma else float('nan'):6.2f}  {len(a[k])}/{len(b[k])}")
EOF
