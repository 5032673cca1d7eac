#!/usr/bin/env bash
# A/B comparison of two libpario builds (before and after a change) with pario-bench: the
# same benchmark, ROUNDS times, A and B alternating in the same launch conditions, the page
# cache's dirty data written back and the machine left to settle between runs. Prints, per
# measurement, the median of each side, its spread (min-max) and B/A, of mb_per_s (overlap:
# ratio, the time of I/O + compute over I/O then compute; lower is better), or of the metric
# named by BENCH_AB_METRIC.
# usage: bench-ab.sh MPI NP ROUNDS LIBPARIO_A LIBPARIO_B OUTDIR -- PARIO-BENCH [SUITE ARGS...]
# example:
#   scripts/bench-ab.sh mpich 4 5 /tmp/before/libpario.so build/mpich/src/libpario.so /tmp/ab \
#     -- build/mpich/bench/pario-bench noncontig --region-count 32768 --dir /tmp
set -euo pipefail
if [ $# -lt 8 ] || [ "$7" != "--" ]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
mpi=$1 np=$2 rounds=$3 liba=$4 libb=$5 out=$6
shift 7
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
trap 'echo "bench-ab: interrupted" >&2; exit 130' INT TERM
settle() { sync; sleep "${BENCH_AB_SETTLE:-3}"; }
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    lib=$liba; [ $side = B ] && lib=$libb
    echo "bench-ab: round $r/$rounds, $side" >&2
    settle
    "$here/mpirun.sh" "$mpi" "$np" --pario "$lib" "$@" -o "$out/$side.jsonl" >/dev/null
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
        m = r["metrics"]
        name = os.environ.get("BENCH_AB_METRIC") or ("ratio" if r["suite"] == "overlap" else "mb_per_s")
        v = m.get(name)
        if v is None:
            continue
        key = (r["suite"], r["test"], json.dumps(r["params"], sort_keys=True))
        d.setdefault(key, []).append(v)
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
print("metric:", os.environ.get("BENCH_AB_METRIC") or "mb_per_s (overlap: ratio)")
print(f"{'test':40} {'params':60} {'A median (min-max)':>28} {'B median (min-max)':>28} {'B/A':>6}")
for k in sorted(set(a) & set(b)):
    ma, mb = statistics.median(a[k]), statistics.median(b[k])
    p = ",".join(f"{x}={y}" for x, y in json.loads(k[2]).items() if x not in ("hints",))[:60]
    fa = f"{ma:.4g} ({min(a[k]):.4g}-{max(a[k]):.4g})"
    fb = f"{mb:.4g} ({min(b[k]):.4g}-{max(b[k]):.4g})"
    print(f"{k[0] + ' ' + k[1]:40} {p:60} {fa:>28} {fb:>28} {mb / ma if ma else float('nan'):6.2f}")
EOF
