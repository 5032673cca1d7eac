#!/usr/bin/env bash
# tests/mpi/viewshared.c's random sequence with the native MPI-IO and with pario preloaded,
# each checked against the program's model, then the two files compared byte for byte. A
# native run that contradicts the model (MPICH 4.0's ROMIO moves the shared pointer of some
# seeds after write_ordered) is reported as the native MPI-IO's bug, and pario is then judged
# by the model alone (as tests/diff/run-diff.sh does).
# usage: viewshared-diff.sh LAUNCHER... -- NP LIBPARIO PROGRAM COMPONENT SEED STEPS DIR
#   LAUNCHER...  the MPI test launcher (scripts/mpirun.sh FLAVOUR), before "--"
#   DIR          where the two files go (removed after a pass, kept after a failure)
set -uo pipefail
launcher=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do launcher+=("$1"); shift; done
if [ $# -ne 8 ]; then
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
shift
np=$1 lib=$2 prog=$3 comp=$4 seed=$5 steps=$6 dir=$7
mkdir -p "$dir" || exit 2
native=$dir/native.$comp.$seed.$np pario=$dir/pario.$comp.$seed.$np
rm -f "$native" "$pario" "$native.log"
native_ok=1
"${launcher[@]}" "$np" "$prog" "$comp" "$seed" "$steps" "$native" > "$native.log" 2>&1 || native_ok=0
"${launcher[@]}" "$np" --pario "$lib" "$prog" "$comp" "$seed" "$steps" "$pario" || { echo "viewshared-diff: the pario run failed" >&2; exit 1; }
if [ $native_ok = 0 ]; then
  echo "viewshared-diff: the native MPI-IO contradicts the model (its own bug; pario judged by the model alone, and it agrees):" >&2
  grep -m5 FAIL "$native.log" >&2
  rm -f "$native" "$pario" "$native.log"
  exit 0
fi
if ! cmp "$native" "$pario"; then
  echo "viewshared-diff: the files differ (kept: $native $pario)" >&2
  exit 1
fi
echo "viewshared-diff: $comp seed $seed, $np ranks: identical to the native MPI-IO ($(stat -c %s "$pario") bytes)"
rm -f "$native" "$pario" "$native.log"
