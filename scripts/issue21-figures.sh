#!/usr/bin/env bash
# The figures of issue 21 (docs/measuring.md, "Issue 21 figures"), for anyone to repeat: native
# MPI-IO and pario alternating in the same launch conditions, ROUNDS rounds, settle between
# launches, medians with min-max. Run it on a quiet machine after `make build`.
# usage: scripts/issue21-figures.sh OUTDIR [ROUNDS] [PARTS]
#   PARTS: any of collective,overlap,writeback,sharedfp,vnodes (default: all; vnodes: write_shared
#   across MPICH's 2 virtual nodes). FLAVOURS="mpich openmpi", BUILD=build (its pario-bench and
#   libpario.so are measured; another tree of the same layout measures another version).
set -euo pipefail
out=${1:?usage: issue21-figures.sh OUTDIR [ROUNDS] [PARTS]}
rounds=${2:-5}
parts=${3:-collective,overlap,writeback,sharedfp,vnodes}
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-build}
mkdir -p "$out"
scratch="$out/scratch"
mkdir -p "$scratch"
trap 'echo "issue21-figures: interrupted" >&2; rm -rf "$scratch"; exit 130' INT TERM
want() { case ",$parts," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
lib_of() { echo "$build/$1/src/libpario.so"; }

ab() { # TITLE MPI NP -- pario-bench ARGS: native (A) against pario (B)
  local title=$1 mpi=$2 np=$3; shift 4
  echo "== $title ($mpi, $np ranks): A native, B pario"
  BENCH_AB_SETTLE=${BENCH_AB_SETTLE:-2} "$here/bench-ab.sh" "$mpi" "$np" "$rounds" native "$(lib_of "$mpi")" \
    "$out/$title-$mpi-$np" -- "$build/$mpi/bench/pario-bench" "$@" 2>/dev/null | tail -n +2
  if [ "$1" = overlap ]; then limits "$out/$title-$mpi-$np/B.jsonl"; fi
}

limits() { # RESULTS: overlap's measured limit (plain writes of all ranks at once) beside pario's ratio
  python3 - "$1" <<'PY'
import json, statistics, sys
rows = [json.loads(l)["metrics"] for l in open(sys.argv[1])]
for k in ("limit_ratio", "limit_share"):
    v = [m[k] for m in rows if m.get(k) is not None]
    if v:
        print(f"  pario {k} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})")
PY
}

sfp() { # TITLE RESULTS MPI NP LIBS RECORDS COMPONENT[:RECORDS]...: write_shared, components alternating
  local title=$1 res=$2 mpi=$3 np=$4 libs=$5 recs=$6
  shift 6
  rm -f "$res"
  echo "== $title: auto against each component forced by hint"
  for r in $(seq 1 "$rounds"); do
    for cr in "$@"; do
      local c=${cr%%:*} n=$recs
      [ "$cr" != "$c" ] && n=${cr#*:}
      sync
      sleep "${BENCH_AB_SETTLE:-2}"
      "$here/mpirun.sh" "$mpi" "$np" --pario "$libs" "$build/$mpi/bench/pario-bench" sharedfp -d 64 \
        --per-process -i "$n" -m 1 --dir /dev/shm -H "pario_sharedfp=$c" -o "$res" >/dev/null ||
        echo "  ($c: run failed)"
    done
  done
  python3 - "$res" <<'PY'
import json, statistics, sys
by = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("status") == "ok":
        by.setdefault(r["params"]["hints"].get("pario_sharedfp", "?"), []).append(r["metrics"])
med = {c: statistics.median(m["records_per_s"] for m in ms) for c, ms in by.items()}
for c, ms in by.items():
    v = [m["records_per_s"] for m in ms]
    lim = [m["limit_records_per_s"] for m in ms if m.get("limit_records_per_s")]
    share = f"limit {statistics.median(lim):10.0f}  share {med[c] / statistics.median(lim):.2f}" if lim else ""
    print(f"  {c:10} records/s {med[c]:10.0f} ({min(v):.0f}-{max(v):.0f})  {share}")
others = [c for c in med if c != "auto"]
if "auto" in med and others:
    best = max(others, key=med.get)
    print(f"  auto / best ({best}): {med['auto'] / med[best]:.3f}")
PY
}

for mpi in ${FLAVOURS:-mpich openmpi}; do
  if want collective; then
    for np in 4 2; do
      ab collective "$mpi" "$np" -- noncontig --region-size 32 --region-count 32768 --region-spacing 128 \
        --access collective --dir "$scratch"
    done
  fi
  if want overlap; then
    for np in 2 1; do
      ab overlap "$mpi" "$np" -- overlap --regime direct -s 64M -i 10 -I 0 --dir "$scratch" --tsv /dev/null
    done
  fi
  if want writeback; then
    # Another process keeps writing through the page cache for the whole launch (512 MiB, then
    # fdatasync, in a loop; at most 10 minutes), so writeback shares the disk with every phase.
    # (pario-bench's overlap syncs between its phases, which would absorb a single dd run
    # before the launch.)
    wb="$scratch/writeback"
    BENCH_AB_BEFORE="timeout 600 sh -c 'while :; do dd if=/dev/zero of=$wb.dat bs=8M count=64 conv=fdatasync status=none; done' >/dev/null 2>&1 & echo \$! > $wb.pid" \
    BENCH_AB_AFTER="[ -f $wb.pid ] && kill \$(cat $wb.pid) 2>/dev/null; sleep 0.5; rm -f $wb.pid $wb.dat" \
      ab writeback "$mpi" 2 -- overlap --regime direct -s 64M -i 10 -I 0 --dir "$scratch" --tsv /dev/null
  fi
  if want sharedfp; then # write_shared, 64 B records, 200,000 per rank (0.5-1 s), tmpfs
    for np in 4 2; do
      sfp "sharedfp ($mpi, $np ranks)" "$out/sharedfp-$mpi-$np.jsonl" "$mpi" "$np" "$(lib_of "$mpi")" 200000 \
        auto sm rma lockedfile
    done
  fi
  if want vnodes && [ "$mpi" = mpich ]; then # two virtual nodes (tests/multinode) on one kernel
    for np in 2 4 8; do
      MPIR_CVAR_NUM_CLIQUES=2 sfp "sharedfp (mpich, 2 virtual nodes, $np ranks)" "$out/vnodes-$np.jsonl" mpich \
        "$np" "$build/mpich/tests/multinode/libpario-vnode.so $(lib_of mpich)" 20000 auto:200000 sm:200000 lockedfile rma:1000
    done
  fi
done
rm -rf "$scratch"
