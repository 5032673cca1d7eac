#!/usr/bin/env bash
# Build the two MPI-IO test suites of Debian's source package mpich with one MPI flavour's
# compilers: ROMIO's own tests (src/mpi/romio/test) and MPICH's I/O tests (test/mpi/io, with
# the suite's helpers test/mpi/util/mtest*.c).
#   usage: build-suites.sh CACHE OUT CC FC ROMIO-PROGRAMS -- MPICH-IO-PROGRAMS
# CACHE  where common/fetch-source.sh keeps the source (fetched there on first use)
# OUT    OUT/romio/PROGRAM and OUT/mpich_io/PROGRAM (and OUT/romio/test_hintfile for syshints)
# CC FC  the flavour's mpicc and mpif90 (FC "none": ROMIO's Fortran tests are not built)
# Each program ROMIO's configure would generate from a .in file is generated here the same
# way (misc.c, the Fortran tests). Exit 77 (skip) when the source cannot be fetched; 1 when a
# program does not build (the others are built, and the missing one's tests skip, saying so).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=$1 out=$2 cc=$3 fc=$4
shift 4
romio=() mio=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do romio+=("$1"); shift; done
[ $# -gt 0 ] && shift
mio=("$@")
mkdir -p "$out/romio" "$out/mpich_io" "$out/gen"
source "$here/../common/build-lib.sh"
all=()
for p in "${romio[@]}"; do all+=("$out/romio/$p"); done
for p in "${mio[@]}"; do all+=("$out/mpich_io/$p"); done
src=$(fetch_or_skip MPICH clients.mpich_suites.build mpich "$cache" src/mpi/romio/test test/mpi/io test/mpi/util \
      test/mpi/include COPYRIGHT -- "${all[@]}") || exit $?
stamp="$src|$cc|$fc|${romio[*]}|${mio[*]}|$(cat "$0" "$here/ompi-mpi1.h" | md5sum | cut -d' ' -f1)"
up_to_date "$out" "$stamp"
rt=$src/src/mpi/romio/test mt=$src/test/mpi
cp "$rt/test_hintfile" "$out/romio/test_hintfile"

# What MPICH's test configure finds on Linux (only what mtest*.c and the I/O tests ask).
cat > "$out/gen/mpitestconf.h" <<'EOT'
#define HAVE_STDARG_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_MPI_IO 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_LONG_LONG 1
#define HAVE_STRDUP 1
#define HAVE_USLEEP 1
#define MPIO_USES_MPI_REQUEST 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_NONE
EOT
# ROMIO's configure substitutions: printf's long long, and the Fortran tests' argument access.
for f in misc large_file; do
  [ -f "$rt/$f.c.in" ] && sed 's/@LL@/lld/g' "$rt/$f.c.in" > "$out/gen/$f.c"
done
for f in "$rt"/*.f.in; do
  b=${f##*/}
  sed -e 's/@F77MPIOINC@//' -e 's/@FORTRAN_MPI_OFFSET@/integer*8/' -e 's/@F77IARGC@/iargc()/' \
      -e 's/@F77GETARG@/call getarg(i, str)/' "$f" > "$out/gen/${b%.in}"
done
# coll_perf at a size for a test: its 2176 x 1152 x 1408 ints (14 GB) scaled down 16 times
# per dimension (3.4 MB).
sed 's/128 \* \([0-9]*\);/8 * \1;/' "$rt/coll_perf.c" > "$out/gen/coll_perf.c"

# Warnings off (not our code); -fallow-argument-mismatch as for our mpif.h Fortran clients.
{
  echo "CC := $cc"
  echo "FC := $fc"
  echo "CFLAGS := -O1 -w"
  echo "all: ${all[*]}"
  for p in "${romio[@]}"; do
    s=$rt/$p.c
    [ -f "$out/gen/$p.c" ] && s=$out/gen/$p.c
    if [ -f "$out/gen/$p.f" ]; then
      printf '%s: %s\n\t$(FC) -O1 -w -fallow-argument-mismatch -o $@ $<\n' "$out/romio/$p" "$out/gen/$p.f"
    else
      printf '%s: %s\n\t$(CC) $(CFLAGS) -include %s -o $@ $< -lm\n' "$out/romio/$p" "$s" "$here/ompi-mpi1.h"
    fi
  done
  for p in "${mio[@]}"; do
    printf '%s: %s\n\t$(CC) $(CFLAGS) -I%s -I%s -o $@ $< %s %s %s -lm\n' "$out/mpich_io/$p" "$mt/io/$p.c" \
      "$out/gen" "$mt/include" "$mt/util/mtest.c" "$mt/util/mtest_common.c" "$mt/util/mtest_single.c"
  done
} > "$out/Makefile"
for p in "${romio[@]}"; do
  if [ -f "$out/gen/$p.f" ] && [ "$fc" = none ]; then
    why "no usable mpif90 for this flavour (see clients.fortran)" "$out/romio/$p"
  fi
done
echo "build-suites: building ${#all[@]} programs from $src with $cc"
make -k -s -C "$out" -j 2 >"$out/build.log" 2>&1 || true
missing=()
for p in "${all[@]}"; do
  if [ -x "$p" ]; then rm -f "$p.why"
  elif [ ! -f "$p.why" ]; then missing+=("$p"); why "did not build (see $out/build.log)" "$p"; fi
done
if [ ${#missing[@]} -gt 0 ]; then
  tail -30 "$out/build.log" >&2
  echo "build-suites: not built: ${missing[*]} (log: $out/build.log)" >&2
  exit 1
fi
echo "$stamp" > "$out/.stamp"
echo "build-suites: built ${#all[@]} programs in $out"
