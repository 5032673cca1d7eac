#!/usr/bin/env bash
# The figures of issue 21 (docs/measuring.md, "Issue 21 figures"), for anyone to repeat: native
# MPI-IO and pario alternating in the same launch conditions, ROUNDS rounds, settle between
# launches, medians with min-max. Run it on a quiet machine after `make build`.
# usage: scripts/issue21-figures.sh OUTDIR [ROUNDS] [PARTS]
#   PARTS: any of collective,overlap,writeback,sharedfp (default: all); FLAVOURS="mpich openmpi"
#   BUILD=build; PARIO_LIB_DIR=DIR measures DIR/<flavour>/libpario.so instead of the build's.
set -euo pipefail
out=${1:?usage: issue21-figures.sh OUTDIR [ROUNDS] [PARTS]}
rounds=${2:-5}
parts=${3:-collective,overlap,writeback,sharedfp}
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-build}
mkdir -p "$out"
scratch="$out/scratch"
mkdir -p "$scratch"
trap 'echo "issue21-figures: interrupted" >&2; rm -rf "$scratch"; exit 130' INT TERM
want() { case ",$parts," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
lib_of() { if [ -n "${PARIO_LIB_DIR:-}" ]; then echo "$PARIO_LIB_DIR/$1/libpario.so"; else echo "$build/$1/src/libpario.so"; fi; }
ab() { # TITLE MPI NP -- pario-bench ARGS: native (A) against pario (B)
  local title=$1 mpi=$2 np=$3; shift 4
  echo "== $title ($mpi, $np ranks): A native, B pario"
  BENCH_AB_SETTLE=${BENCH_AB_SETTLE:-2} "$here/bench-ab.sh" "$mpi" "$np" "$rounds" native "$(lib_of "$mpi")" \
    "$out/$title-$mpi-$np" -- "$build/$mpi/bench/pario-bench" "$@" 2>/dev/null | tail -n +2
}
for mpi in ${FLAVOURS:-mpich openmpi}; do
  bench="$build/$mpi/bench/pario-bench"
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
  if want writeback; then # another process has just written 2 GiB through the page cache
    BENCH_AB_BEFORE="dd if=/dev/zero of=$scratch/writeback.dat bs=1M count=2048 status=none" \
      ab writeback "$mpi" 2 -- overlap --regime direct -s 64M -i 10 -I 0 --dir "$scratch" --tsv /dev/null
    rm -f "$scratch/writeback.dat"
  fi
  if want sharedfp; then # write_shared, 64 B records, 200,000 per rank (0.5-1 s), tmpfs; components alternating
    for np in 4 2; do
      res="$out/sharedfp-$mpi-$np.jsonl"
      rm -f "$res"
      echo "== sharedfp ($mpi, $np ranks): auto against each component forced by hint"
      for r in $(seq 1 "$rounds"); do
        for c in auto sm rma lockedfile; do
          sync; sleep "${BENCH_AB_SETTLE:-2}"
          "$here/mpirun.sh" "$mpi" "$np" --pario "$(lib_of "$mpi")" "$bench" sharedfp -d 64 --per-process \
            -i 200000 -m 1 --dir /dev/shm -H "pario_sharedfp=$c" -o "$res" >/dev/null
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
    lim = statistics.median(m.get("limit_records_per_s", float("nan")) for m in ms)
    print(f"  {c:10} records/s {med[c]:10.0f} ({min(v):.0f}-{max(v):.0f})  limit {lim:10.0f}  share {med[c] / lim:.2f}")
best = max((c for c in med if c != "auto"), key=med.get)
print(f"  auto / best ({best}): {med['auto'] / med[best]:.3f}")
PY
    done
  fi
done
rm -rf "$scratch"
