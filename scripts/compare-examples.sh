#!/usr/bin/env bash
# Run each example once with the native MPI-IO and once under pario, on both MPIs; the two
# output files must be byte-identical. Prints a table of times; exits non-zero on a mismatch.
# usage: compare-examples.sh [BUILD_DIR] [NP]
set -euo pipefail
build=${1:-build}
np=${2:-4}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
printf '%-14s %-8s %4s %12s %12s %s\n' example MPI np "native s" "pario s" identical
for f in openmpi mpich; do
  b=$build/$f
  [ -x "$b/examples/checkpoint2d" ] || { echo "compare-examples: $b/examples not built" >&2; exit 2; }
  for ex in "checkpoint2d --nx 2048 --ny 1024" "strided --block 1000 --count 8192"; do
    name=${ex%% *} args=${ex#* }
    declare -A secs=()
    for impl in native pario; do
      pre=()
      [ $impl = pario ] && pre=(--pario "$b/src/libpario.so")
      out=$("$here/mpirun.sh" $f "$np" "${pre[@]}" "$b/examples/$name" $args --keep --file "$tmp/$name.$f.$impl" 2>&1) ||
        { echo "$out" >&2; status=1; }
      secs[$impl]=$(printf '%s\n' "$out" | sed -n 's/.*write[_a-z]* \([0-9.]*\) s.*/\1/p' | head -1)
    done
    same=yes
    cmp -s "$tmp/$name.$f.native" "$tmp/$name.$f.pario" || { same=NO; status=1; }
    printf '%-14s %-8s %4s %12s %12s %s\n' "$name" "$f" "$np" "${secs[native]:-?}" "${secs[pario]:-?}" "$same"
    unset secs
  done
done
exit $status
