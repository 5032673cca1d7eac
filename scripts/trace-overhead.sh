#!/usr/bin/env bash
# Tracing overhead with pario-bench (issue 17): three sides in the same launch conditions,
# alternating, ROUNDS times: BEFORE (a libpario without tracing), OFF (this libpario, tracing
# off) and ON (this libpario with PARIO_TRACE set; the trace goes to a fresh directory each
# run, on the same file system as --dir unless TRACE_OVERHEAD_DIR says otherwise). Prints per
# measurement the median (min-max) of mb_per_s per side and OFF/BEFORE, ON/OFF, then the CPU
# time of each launch (user + sys of every rank, /usr/bin/time): on a machine shared with other
# work, throughput varies with the neighbours, CPU time much less.
# usage: trace-overhead.sh MPI NP ROUNDS LIBPARIO_BEFORE LIBPARIO OUTDIR -- PARIO-BENCH [SUITE ARGS...]
# example:
#   scripts/trace-overhead.sh mpich 4 5 /tmp/before/libpario.so build/mpich/src/libpario.so /tmp/ovh \
#     -- build/mpich/bench/pario-bench cfs -t partitioned-write,partitioned-read -b 64K,1M --dir /tmp
set -euo pipefail
if [ $# -lt 8 ] || [ "$7" != "--" ]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
mpi=$1 np=$2 rounds=$3 before=$4 lib=$5 out=$6
shift 7
here=$(cd "$(dirname "$0")" && pwd)
tdir=${TRACE_OVERHEAD_DIR:-$out/traces}
mkdir -p "$out"
rm -f "$out"/BEFORE.jsonl "$out"/OFF.jsonl "$out"/ON.jsonl "$out"/*.cpu
trap 'echo "trace-overhead: interrupted" >&2; exit 130' INT TERM
settle() { sync; sleep "${BENCH_AB_SETTLE:-3}"; }
for r in $(seq 1 "$rounds"); do
  for side in BEFORE OFF ON; do
    echo "trace-overhead: round $r/$rounds, $side" >&2
    settle
    l=$lib; [ $side = BEFORE ] && l=$before
    if [ $side = ON ]; then
      rm -rf "$tdir"
      PARIO_TRACE=$tdir /usr/bin/time -a -o "$out/$side.cpu" -f "%U %S" \
        "$here/mpirun.sh" "$mpi" "$np" --pario "$l" "$@" -o "$out/$side.jsonl" >/dev/null
      du -sk "$tdir" | awk '{print "trace-overhead: trace size " $1 " KiB"}' >&2
    else
      env -u PARIO_TRACE /usr/bin/time -a -o "$out/$side.cpu" -f "%U %S" \
        "$here/mpirun.sh" "$mpi" "$np" --pario "$l" "$@" -o "$out/$side.jsonl" >/dev/null
    fi
  done
done
python3 - "$out" <<'PY'
import json, os, statistics, sys
def load(p):
    d = {}
    for line in open(p):
        r = json.loads(line)
        if r.get("status") != "ok":
            continue
        params = {k: v for k, v in r["params"].items() if k != "hints"}
        key = (r["suite"], r["test"], json.dumps(params, sort_keys=True))
        d.setdefault(key, []).append(r["metrics"]["mb_per_s"])
    return d
s = {k: load(os.path.join(sys.argv[1], k + ".jsonl")) for k in ("BEFORE", "OFF", "ON")}
keys = sorted(set(s["BEFORE"]) & set(s["OFF"]) & set(s["ON"]))
allp = [json.loads(k[2]) for k in keys]
vary = sorted({p for d in allp for p in d if len({json.dumps(x.get(p)) for x in allp}) > 1})
f = lambda v: f"{statistics.median(v):.4g} ({min(v):.4g}-{max(v):.4g})"
print("metric: mb_per_s, median (min-max)")
print(f"{'test':28} {'params':22} {'BEFORE':>24} {'OFF':>24} {'ON':>24} {'OFF/BEF':>7} {'ON/OFF':>7}  n")
for k, p in zip(keys, allp):
    b, o, n = (s[x][k] for x in ("BEFORE", "OFF", "ON"))
    ps = ",".join(f"{x}={p.get(x)}" for x in vary)[:22]
    mb, mo, mn = (statistics.median(v) for v in (b, o, n))
    print(f"{k[0] + ' ' + k[1]:28} {ps:22} {f(b):>24} {f(o):>24} {f(n):>24} {mo / mb:7.3f} {mn / mo:7.3f}  {len(b)}/{len(o)}/{len(n)}")
cpu = {}
for k in ("BEFORE", "OFF", "ON"):
    with open(os.path.join(sys.argv[1], k + ".cpu")) as fh:
        cpu[k] = [sum(map(float, l.split())) for l in fh if l.strip() and l[0].isdigit()]
print("CPU s per launch (user+sys, all ranks): " + "   ".join(f"{k} {f(v)}" for k, v in cpu.items())
      + f"   OFF/BEFORE {statistics.median(cpu['OFF']) / statistics.median(cpu['BEFORE']):.3f}"
      + f"   ON/OFF {statistics.median(cpu['ON']) / statistics.median(cpu['OFF']):.3f}")
PY
