#!/usr/bin/env bash
# Build programs of HDF5's own parallel test suite (testpar/) against the installed parallel
# HDF5 of one MPI flavour, from the Debian source fetched by common/fetch-source.sh.
#   usage: build-testpar.sh CACHE OUT CC INCDIR LIBDIR PROGRAM...
# CACHE  where common/fetch-source.sh keeps the source (fetched there on first use)
# OUT    where the programs go (OUT/PROGRAM)
# CC     the flavour's MPI C compiler; INCDIR/LIBDIR the flavour's HDF5 (hdf5.h, libhdf5.so)
# The programs use HDF5's test harness (test/h5test.c, test/testframe.c) and some of the
# library's internal headers (src/*pkg.h): Debian's libhdf5.so exports the internal symbols
# they call. Exit 77 (skip) when the source cannot be fetched; 1 when it does not build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=$1 out=$2 cc=$3 inc=$4 lib=$5
shift 5
source "$here/../common/build-lib.sh"
mkdir -p "$out/obj" "$out/gen"
progs=()
for p in "$@"; do progs+=("$out/$p"); done
src=$(fetch_or_skip HDF5 clients.hdf5_testpar.build hdf5 "$cache" src test testpar COPYING -- "${progs[@]}") || exit $?
stamp="$src|$cc|$inc|$lib|$*|$(md5sum "$0" | cut -d' ' -f1)"
up_to_date "$out" "$stamp"
printf 'static const char *config_srcdir = ".";\n' > "$out/gen/H5srcdir_str.h"

# Sources of each program (testpar/CMakeLists.txt); h5test.c and testframe.c go into all.
sources() {
  case "$1" in
    testphdf5) echo testpar/testphdf5.c testpar/t_dset.c testpar/t_file.c testpar/t_file_image.c \
                    testpar/t_mdset.c testpar/t_ph5basic.c testpar/t_coll_chunk.c testpar/t_span_tree.c \
                    testpar/t_chunk_alloc.c testpar/t_filter_read.c testpar/t_prop.c \
                    testpar/t_coll_md_read.c ;;
    *) [ -f "$src/testpar/$1.c" ] || { echo "build-testpar: no testpar/$1.c" >&2; return 1; }
       echo "testpar/$1.c" ;;
  esac
}
all=(test/h5test.c test/testframe.c)
for p in "$@"; do
  for s in $(sources "$p"); do all+=("$s"); done
done
mapfile -t uniq < <(printf '%s\n' "${all[@]}" | sort -u)

# As Debian built the library (libhdf5.settings: H5_CPPFLAGS), warnings off: not our code.
cflags="-O1 -w -D_GNU_SOURCE -D_POSIX_C_SOURCE=200809L -DNDEBUG -I$out/gen -I$src/src -I$src/test -I$src/testpar -I$inc"
obj() { local o=${1//\//_}; echo "obj/${o%.c}.o"; }
# A makefile, so the two cores compile in parallel and a rerun recompiles nothing.
{
  echo "CC := $cc"
  echo "CFLAGS := $cflags"
  echo "LDFLAGS := -L$lib -Wl,-rpath,$lib"
  echo "all: $*"
  for s in "${uniq[@]}"; do
    printf '%s: %s\n\t$(CC) $(CFLAGS) -c $< -o $@\n' "$(obj "$s")" "$src/$s"
  done
  for p in "$@"; do
    objs="$(obj test/h5test.c) $(obj test/testframe.c)"
    for s in $(sources "$p"); do objs="$objs $(obj "$s")"; done
    printf '%s: %s\n\t$(CC) -o $@ $^ $(LDFLAGS) -lhdf5 -lm\n' "$p" "$objs"
  done
} > "$out/Makefile"
echo "build-testpar: building $* from $src with $cc"
make -s -C "$out" -j 2 >"$out/build.log" 2>&1 || {
  tail -30 "$out/build.log" >&2
  echo "build-testpar: the build failed (log: $out/build.log)" >&2
  exit 1
}
rm -f "$out"/*.why
echo "$stamp" > "$out/.stamp"
echo "build-testpar: built $* in $out"
