#!/usr/bin/env bash
# Read volume across namespace nodes (README.md here; docs/collective.md, "Read volume"): the
# collective read of pario-bench noncontig at 2 nodes x PPN, aggregated across the nodes
# (automatic mode), its read_amplification summed over every rank (pario's counters, read back
# from the results file):
#   - 1 KiB regions with no holes (--region-spacing 0): every byte read is one asked for, so
#     bytes_read_file must equal bytes_requested exactly (1.00);
#   - HPIO's 32 B regions with 128 B holes: the aggregators read through holes narrower than
#     pario_read_max_gap, never more than the pieces' span: at most 5 (the data is 32 of every
#     160 bytes), not 5 x ranks as reads through every rank's own window would.
# Both read back and checked by pario-bench. The nodes go whatever happens (nslib.sh). Each
# launch is limited to 150 s (a hang fails; 90 s was passed once at load average 260).
# usage: readvol.sh FLAVOUR PPN LIBPARIO PARIO_BENCH WORKDIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in --help|-h) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
[ $# = 5 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
flavour=$1 ppn=$2 lib=$3 bench=$4 work=$5
. "$here/nslib.sh"
ns_begin "$work" 2
d=$(readlink -f "$work")/readvol.$$
NS_CLEAN=("$d")
mkdir -p "$d"
status=0
# measure NAME MAX_AMPLIFICATION MIN_AMPLIFICATION ARGS...: one collective read across the nodes
measure() {
  local name=$1 hi=$2 lo=$3; shift 3
  local rc
  rm -f "$d/$name.jsonl"
  "$NSNODES" run "$NS_ST" "$flavour" 2 "$ppn" --pario "$lib" --timeout 150 "$bench" noncontig \
    --access collective --op read -i 2 --dir "$d" -o "$d/$name.jsonl" "$@" > "$d/out" 2>&1
  rc=$?
  if [ $rc != 0 ]; then
    echo "FAIL: $name: pario-bench exit $rc:"; grep -v -e '^\s*$' "$d/out" | tail -20 | cut -c1-300 | sed 's/^/    /'
    status=1
    return
  fi
  python3 - "$d/$name.jsonl" "$name" "$hi" "$lo" <<'EOF' || status=1
import json, sys
path, name, hi, lo = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
ms = [json.loads(l) for l in open(path) if l.strip()]
if len(ms) != 1 or ms[0]["status"] != "ok" or ms[0].get("verified") is not True:
    sys.exit(f"FAIL: {name}: want one verified ok measurement, got {[(m['status'], m.get('error')) for m in ms]}")
m = ms[0]["metrics"]
if not m.get("bytes_requested"):
    sys.exit(f"FAIL: {name}: no bytes_requested: pario did not serve the read ({ms[0]['impl']})")
f, r = m["bytes_read_file"], m["bytes_requested"]
if not lo * r <= f <= hi * r:
    sys.exit(f"FAIL: {name}: read {f} file bytes for {r} requested ({f / r:.4f}x), want {lo}x to {hi}x")
print(f"ok: {name}: {ms[0]['ranks']} ranks read {f} file bytes for {r} requested ({f / r:.4f}x)")
EOF
}
measure "1 KiB regions, no holes" 1 1 --region-size 1024 --region-count 256 --region-spacing 0
measure "HPIO 32 B regions, 128 B holes" 5 4.9 --region-size 32 --region-count 4096
[ $status = 0 ] && echo "PASS: read volume across 2 nodes x $ppn ($flavour)"
exit $status
