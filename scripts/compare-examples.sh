#!/usr/bin/env bash
# Run each example once with the native MPI-IO and once under pario (LD_PRELOAD of
# BUILD_DIR/<flavour>/src/libpario.so), for Open MPI and MPICH and each other flavour built
# (cmake/flavours.txt: openmpi5, mpich5, impi); the two output files must be
# byte-identical. Prints a table (example, MPI, native and pario seconds as reported by the
# example: its write plus read time, identical yes/no) and exits non-zero on any mismatch or
# failed run. Each run also verifies its own data and checks, through --expect, that MPI-IO
# was served by the intended library.
# usage: compare-examples.sh [BUILD_DIR] [NP]      (defaults: build, 4)
set -uo pipefail
build=${1:-build}
np=${2:-4}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pario-examples.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
examples=("checkpoint2d --nx 2048 --ny 1024"
          "strided --block 1000 --count 8192"
          "strided --block 1000 --count 8192 --offsets")
status=0
echo "examples at $np ranks, native MPI-IO vs pario (files compared with cmp)"
printf '%-20s %-8s %10s %10s  %s\n' example MPI "native s" "pario s" identical
export PARIO_MPI_VENVS=${PARIO_MPI_VENVS:-$(cd "$build" && pwd)/mpi}
for f in $("$here/flavours.sh" list); do
  b=$build/$f
  case $f in openmpi|mpich) ;; *) [ -x "$b/examples/checkpoint2d" ] || continue ;; esac
  if [ ! -x "$b/examples/checkpoint2d" ] || [ ! -e "$b/src/libpario.so" ]; then
    echo "compare-examples: $b/examples or $b/src/libpario.so not built" >&2
    status=1
    continue
  fi
  for ex in "${examples[@]}"; do
    read -r prog args <<<"$ex"
    name=$prog
    case "$args" in *--offsets*) name="$prog --offsets" ;; esac
    tag=${name// /}
    secs=()
    ok=1
    for impl in native pario; do
      pre=() expect=native
      if [ $impl = pario ]; then pre=(--pario "$b/src/libpario.so"); expect=pario; fi
      out=$("$here/mpirun.sh" "$f" "$np" "${pre[@]}" "$b/examples/$prog" $args --keep \
            --expect $expect --file "$tmp/$tag.$f.$impl" 2>&1)
      if [ $? -ne 0 ]; then
        echo "compare-examples: $name ($f, $impl) failed:" >&2
        printf '%s\n' "$out" | tail -5 | sed 's/^/    /' >&2
        ok=0
      fi
      secs+=("$(printf '%s\n' "$out" | sed -n 's/^elapsed \([0-9.]*\) s$/\1/p' | tail -1)")
    done
    same=yes
    if [ $ok -ne 1 ] || ! cmp -s "$tmp/$tag.$f.native" "$tmp/$tag.$f.pario"; then
      same=no
      status=1
    fi
    printf '%-20s %-8s %10s %10s  %s\n' "$name" "$f" "${secs[0]:-?}" "${secs[1]:-?}" "$same"
    rm -f "$tmp/$tag.$f.native" "$tmp/$tag.$f.pario"
  done
done
[ $status -eq 0 ] || echo "compare-examples: MISMATCH or failure (see above)" >&2
exit $status
