#!/usr/bin/env bash
# Build C programs of PnetCDF's own test suite (test/ of Debian's source package pnetcdf)
# against the installed PnetCDF with one MPI flavour's mpicc.
#   usage: build-suite.sh CACHE OUT CC INCDIR LIBRARY PROGRAM...
# CACHE    where common/fetch-source.sh keeps the source (fetched there on first use)
# OUT      OUT/PROGRAM, and OUT/cdf_format/ with the source's netCDF files that the programs
#          of test/cdf_format read (they are given that directory)
# CC       the flavour's mpicc; INCDIR/LIBRARY the installed PnetCDF (pnetcdf.h, libpnetcdf.so)
# PROGRAM  the name of a C file (or of an m4 file, expanded with the source's m4/ macros) in
#          test/{testcases,nonblocking,header,C,cdf_format}; every program is linked with the
#          suite's helpers (test/common/testutils.c). Instead of config.h, a header with the
#          type names its configure defines.
# Exit 77 (skip) when the source cannot be fetched; 1 when a program does not build (the others
# are built, and the missing one's tests skip, saying so).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=$1 out=$2 cc=$3 inc=$4 lib=$5
shift 5
progs=("$@")
mkdir -p "$out"
source "$here/../common/build-lib.sh"
all=()
for p in "${progs[@]}"; do all+=("$out/$p"); done
src=$(fetch_or_skip PnetCDF clients.pnetcdf.build pnetcdf "$cache" test m4 -- "${all[@]}") || exit $?
stamp="$src|$cc|$inc|$lib|${progs[*]}|$(md5sum "$0" | cut -d' ' -f1)"
up_to_date "$out" "$stamp"
t=$src/test
# The input files of test/cdf_format's readers (test_inq_format, tst_corrupt, tst_open_cdf5).
mkdir -p "$out/cdf_format"
cp "$t"/cdf_format/*.nc* "$out/cdf_format/"

# The type names PnetCDF's configure defines for the m4-generated programs (its config.h).
mkdir -p "$out/gen"
printf '%s\n' 'typedef signed char schar;' 'typedef unsigned char uchar;' 'typedef long long longlong;' \
  'typedef unsigned long long ulonglong;' > "$out/gen/pnetcdf-types.h"

# Warnings off (not our code). A makefile, so the two cores compile in parallel.
{
  echo "CC := $cc"
  echo "CFLAGS := -O1 -w -I$t/common -I$inc -include $out/gen/pnetcdf-types.h"
  echo "all: ${all[*]}"
  printf '%s: %s\n\t$(CC) $(CFLAGS) -c -o $@ $<\n' "$out/testutils.o" "$t/common/testutils.c"
  for p in "${progs[@]}"; do
    s=""
    for d in testcases nonblocking header C cdf_format; do
      [ -f "$t/$d/$p.c" ] && s=$t/$d/$p.c && break
      if [ -f "$t/$d/$p.m4" ]; then # expanded by m4 with the source's m4/ macros, as its makefiles do
        s=$out/gen/$p.c
        printf '%s: %s\n\tm4 -I%s $< > $@\n' "$s" "$t/$d/$p.m4" "$src/m4"
        break
      fi
    done
    if [ -z "$s" ]; then
      echo "build-suite: no test/*/$p.c or .m4 in $src" >&2
      continue
    fi
    printf '%s: %s %s\n\t$(CC) $(CFLAGS) -o $@ $^ %s -lm\n' "$out/$p" "$s" "$out/testutils.o" "$lib"
  done
} > "$out/Makefile"
echo "build-suite: building ${#all[@]} programs from $src with $cc"
make -k -s -C "$out" -j 2 >"$out/build.log" 2>&1 || true
missing=()
for p in "${all[@]}"; do
  if [ -x "$p" ]; then rm -f "$p.why"
  else missing+=("$p"); why "did not build (see $out/build.log)" "$p"; fi
done
if [ ${#missing[@]} -gt 0 ]; then
  tail -30 "$out/build.log" >&2
  echo "build-suite: not built: ${missing[*]} (log: $out/build.log)" >&2
  exit 1
fi
echo "$stamp" > "$out/.stamp"
echo "build-suite: built ${#all[@]} programs in $out"
