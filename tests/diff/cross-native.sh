#!/usr/bin/env bash
# Validate difftest itself: build it with both MPIs and run the same seed with Open MPI's and
# MPICH's native MPI-IO in --portable mode (both sets of native-bug avoidances on, so both run
# the same sequence); the two files and the per-rank logs must be identical. Further arguments
# go to difftest: --model also checks each run against difftest's model, --pattern coll runs
# the collective patterns. (Open MPI runs with write data sieving off: its collective write
# races otherwise, see README.md.)
# usage: cross-native.sh NP SEED OPS [DIFFTEST ARGS...]   (SEED may be a list: "1 2 3")
set -uo pipefail
[ $# -ge 3 ] || { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
np=$1 seeds=$2 ops=$3
shift 3
extra=("$@")
here=$(cd "$(dirname "$0")" && pwd)
run=$here/../../scripts/mpirun.sh
d=$(mktemp -d "${TMPDIR:-/tmp}/difftest-cross.XXXXXX")
for f in openmpi mpich; do
  "mpicc.$f" -std=c11 -O2 -o "$d/difftest.$f" "$here/difftest.c" "$here/collective.c" || exit 2
done
status=0
for s in $seeds; do
  for f in openmpi mpich; do
    OMPI_MCA_fbtl_posix_write_datasieving=0 \
    timeout 600 "$run" "$f" "$np" "$d/difftest.$f" --seed "$s" --ops "$ops" --portable "${extra[@]}" \
      --file "$d/$f.dat" --log "$d/$f.log" >"$d/$f.out" 2>&1
    rc=$?
    [ $rc -ne 0 ] && { echo "seed $s: $f run exited $rc"; grep -v '^\s*$' "$d/$f.out" | head -5; status=1; }
  done
  res=identical
  cmp -s "$d/openmpi.dat" "$d/mpich.dat" || res="FILES DIFFER"
  for ((r = 0; r < np; r++)); do
    cmp -s "$d/openmpi.log.$r" "$d/mpich.log.$r" ||
      { res="$res, rank $r logs differ"; diff "$d/openmpi.log.$r" "$d/mpich.log.$r" | head -4 | cut -c1-300; }
  done
  echo "np=$np seed=$s ops=$ops ${extra[*]}: Open MPI native vs MPICH native: $res"
  [ "$res" = identical ] || status=1
done
[ $status -eq 0 ] && rm -rf "$d" || echo "(kept $d)"
exit $status
