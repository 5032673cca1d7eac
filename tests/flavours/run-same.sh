#!/usr/bin/env bash
# The same outcome whatever MPI is below pario (tests/README.md, label "flavours"): run one
# program, tests/diff/difftest with --portable (the same call sequence on every MPI), under
# pario on this flavour and on a reference flavour, and require byte-identical files and
# identical per-rank logs (return codes as error classes, counts, positions, data checksums).
# usage: run-same.sh FLAVOUR BUILD REF_FLAVOUR REF_BUILD NP WORK [DIFFTEST ARGS...]
#   BUILD, REF_BUILD  the two flavours' build trees (src/libpario.so, tests/diff/difftest)
# Exits 77 (ctest: skipped) when the reference tree is not built.
set -uo pipefail
flavour=$1 build=$2 ref=$3 refbuild=$4 np=$5 work=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)
run=$here/../../scripts/mpirun.sh
for f in "$refbuild/src/libpario.so" "$refbuild/tests/diff/difftest"; do
  [ -e "$f" ] || { echo "skipped: no $ref build tree beside this one ($f)"; exit 77; }
done
rm -rf "$work" && mkdir -p "$work"
status=0
for side in "$ref:$refbuild" "$flavour:$build"; do
  f=${side%%:*} b=${side#*:}
  if ! timeout 300 "$run" "$f" "$np" --pario "$b/src/libpario.so" "$b/tests/diff/difftest" --portable \
       --expect-pario --file "$work/$f.dat" --log "$work/$f.log" "$@" >"$work/$f.out" 2>&1; then
    echo "FAIL: difftest $* under pario on $f exited non-zero:"; grep -v '^\s*$' "$work/$f.out" | head -15
    status=1
  fi
done
[ $status -eq 0 ] || { echo "(files in $work)"; exit 1; }
if ! cmp "$work/$ref.dat" "$work/$flavour.dat"; then
  echo "FAIL: the files written under pario on $ref and on $flavour differ"; status=1
fi
# A view's line also records the filetype's true lb and extent as the host MPI's
# MPI_Type_get_true_extent gives them (tlb=, text=): the MPI's datatype engine, not its
# MPI-IO, and Open MPI and MPICH answer differently for some darrays of resized structs.
strip() { sed -E 's/ tlb=[^ ]+ text=[^ ]+//' "$1"; }
for ((r = 0; r < np; r++)); do
  if ! diff <(strip "$work/$ref.log.$r") <(strip "$work/$flavour.log.$r") >"$work/log.$r.diff"; then
    echo "FAIL: rank $r's results differ (< $ref, > $flavour):"; head -8 "$work/log.$r.diff" | cut -c1-300
    status=1
  fi
done
if [ $status -eq 0 ]; then
  echo "PASS: pario on $flavour and on $ref: identical files and results ($np ranks, $*; $(wc -l <"$work/$ref.log.0") results on rank 0)"
  rm -rf "$work"
else
  echo "(files, logs and diffs in $work)"
fi
exit $status
