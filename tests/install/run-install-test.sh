#!/usr/bin/env bash
# The install test (ctest label "install", tests/install/CMakeLists.txt):
#  1. install this build tree, then the other flavour's tree of the same source when there is
#     one (OTHER_BUILD), into one fresh prefix, and check that the second install rewrote no
#     file of the first (the files both install are the flavour-independent ones, left alone);
#  2. move the prefix elsewhere (the installed tree must be relocatable) and check that no
#     package file names the build or source tree;
#  3. build and run, against the moved prefix, a separate CMake project (find_package(pario
#     CONFIG) + pario::pario) and a separate Makefile project (pkg-config pario-FLAVOUR): the
#     tiny MPI-IO program consumer.c, which checks that the installed libpario served it;
#  4. pario-bench.FLAVOUR --version and --help from the prefix's bin directory.
# usage: run-install-test.sh FLAVOUR VERSION BUILD WORK "RUN WORDS" FINDMPI(ON|OFF) MPICC [OTHER_BUILD...]
set -euo pipefail
export LC_ALL=C
flavour=$1 version=$2 build=$3 work=$4 run_words=$5 findmpi=$6 mpicc=$7
shift 7
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
read -r -a run <<<"$run_words"
t0=$(date +%s)
step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
fail() { echo "install test FAILED: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
stage=$work/stage prefix=$work/prefix

# Install one build tree; keep its log and manifest.
install_tree() { # NAME BUILD
  cmake --install "$2" --prefix "$stage" >"$work/install-$1.log" 2>&1 ||
    { cat "$work/install-$1.log"; fail "cmake --install $2"; }
  cp "$2/install_manifest.txt" "$work/manifest-$1.txt"
}
# Every installed path with a checksum (files) or its target (links).
snapshot() {
  (cd "$stage" && find . -type f -print0 | xargs -0 sha256sum
   find . -type l -printf '%p -> %l\n') | sort >"$1"
}

step "install $flavour ($build) into a fresh prefix"
install_tree "$flavour" "$build"
snapshot "$work/snap-1.txt"
# The other flavour's tree: configured from this source, another flavour, built, and with the
# same flavour-independent files (not a stale configuration).
others=()
for b in "$@"; do
  [ -f "$b/CMakeCache.txt" ] || continue
  home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$b/CMakeCache.txt")
  [ "$(cd "$home" 2>/dev/null && pwd -P)" = "$(cd "$src" && pwd -P)" ] || continue
  info=$(ls "$b"/package/pario-*-info.cmake 2>/dev/null | head -1)
  name=$(basename "${info:-none}" | sed -n 's/^pario-\(.*\)-info\.cmake$/\1/p')
  if [ -z "$name" ] || [ "$name" = "$flavour" ]; then continue; fi
  if [ ! -e "$b/src/libpario.so" ] || [ ! -e "$b/bench/pario-bench" ] ||
     ! diff -r "$build/package/shared" "$b/package/shared" >/dev/null; then
    echo "   (skipping $b: not built, or configured from another state of the source)"
    continue
  fi
  others+=("$b")
done
if [ ${#others[@]} -eq 0 ]; then
  echo "   (no usable build tree of the other flavour next to this one: one flavour only)"
fi
for b in "${others[@]}"; do
  info=$(ls "$b"/package/pario-*-info.cmake | head -1)
  name=$(basename "$info" | sed -n 's/^pario-\(.*\)-info\.cmake$/\1/p')
  step "install $name ($b) into the same prefix"
  install_tree "other-$name" "$b"
  # Nothing of the first install was rewritten: same content, and the log says so.
  snapshot "$work/snap-2.txt"
  changed=$(comm -23 "$work/snap-1.txt" "$work/snap-2.txt")
  [ -z "$changed" ] || fail "installing $name changed files of $flavour's install:"$'\n'"$changed"
  rewritten=$(grep -- '-- Installing: ' "$work/install-other-$name.log" | sed 's/.*Installing: //; s/ -> .*//' |
              grep -Fxf "$work/manifest-$flavour.txt" || true)
  [ -z "$rewritten" ] || fail "installing $name wrote over files of $flavour's install:"$'\n'"$rewritten"
  shared=$(sort "$work/manifest-$flavour.txt" | comm -12 - <(sort "$work/manifest-other-$name.txt") |
           sed "s|^$stage/||")
  unexpected=$(grep -Ev '^(lib[^/]*(/[^/]+)?/cmake/pario/pario-config(-version)?\.cmake|share/doc/pario/[^/]+)$' <<<"$shared" || true)
  [ -z "$unexpected" ] || fail "files installed by both flavours that are not flavour-independent:"$'\n'"$unexpected"
  echo "   no file of $flavour's install rewritten; shared (identical) files: $(wc -l <<<"$shared")"
done

step "move the prefix (relocatable) and look for build-machine paths in the package files"
mv "$stage" "$prefix"
libdir=$(cd "$prefix" && ls -d lib*/pario/"$flavour" | head -1)
[ -n "$libdir" ] && [ -e "$prefix/$libdir/libpario.so" ] || fail "no libpario.so under $prefix/lib*/pario/$flavour"
pkgfiles=$(find "$prefix" -path '*/cmake/pario/*' -o -name 'pario-*.pc')
if grep -lF -e "$stage" -e "$(cd "$build" && pwd -P)" -e "$src" $pkgfiles; then
  fail "package files above name the build machine's paths"
fi
readelf -d "$prefix/$libdir/libpario.so" | grep -q "SONAME.*libpario\.so\.0" || fail "libpario's SONAME"

# CMake wraps its messages at a width that depends on the paths in them: match the words
# with line breaks and indentation folded into single spaces.
said() { tr -s ' \n' '  ' <"$2" | grep -qF "$1"; }

extra=()
[ "$findmpi" = ON ] && extra=(-DMPI_C_COMPILER="$mpicc")
step "CMake consumer: find_package(pario CONFIG COMPONENTS $flavour) + pario::pario"
cmake -S "$here/cmake-consumer" -B "$work/cmake-consumer" -DCMAKE_PREFIX_PATH="$prefix" \
      -DFLAVOUR="$flavour" "${extra[@]}" >"$work/cmake-consumer.log" 2>&1 ||
  { cat "$work/cmake-consumer.log"; fail "configuring the CMake consumer"; }
grep 'pario .* for ' "$work/cmake-consumer.log"
cmake --build "$work/cmake-consumer" >>"$work/cmake-consumer.log" 2>&1 ||
  { cat "$work/cmake-consumer.log"; fail "building the CMake consumer"; }
"${run[@]}" 2 "$work/cmake-consumer/consumer" "$work/cmake.dat" "$flavour" "$prefix/$libdir"

if [ ${#others[@]} -gt 0 ]; then
  step "CMake consumer without a flavour, both installed: must ask for one"
  if cmake -S "$here/cmake-consumer" -B "$work/cmake-consumer-none" -DCMAKE_PREFIX_PATH="$prefix" \
       >"$work/cmake-consumer-none.log" 2>&1; then
    fail "find_package(pario) chose a flavour by itself with both installed"
  fi
  said "choose one with" "$work/cmake-consumer-none.log" ||
    { cat "$work/cmake-consumer-none.log"; fail "no clear message"; }
fi

# Debian's flavour of the other family (mpicc.<other>), when its tree was installed beside.
other=$([ "$flavour" = mpich ] && echo openmpi || echo mpich)
if [ "$findmpi" = OFF ] && [ -n "$(find "$prefix" -name "pario-$other-info.cmake" -print -quit)" ]; then
  step "CMake consumer for $flavour with $other's wrapper: must be refused"
  if cmake -S "$here/cmake-consumer" -B "$work/cmake-consumer-mixed" -DCMAKE_PREFIX_PATH="$prefix" \
       -DFLAVOUR="$flavour" -DMPI_C_COMPILER="mpicc.$other" >"$work/cmake-consumer-mixed.log" 2>&1; then
    fail "find_package(pario COMPONENTS $flavour) accepted $other's MPI"
  fi
  said "cannot be used with the MPI found" "$work/cmake-consumer-mixed.log" ||
    { cat "$work/cmake-consumer-mixed.log"; fail "no clear message"; }
fi

step "pkg-config consumer: pkg-config --cflags --libs pario-$flavour"
export PKG_CONFIG_PATH="$prefix/${libdir%%/pario/*}/pkgconfig"
[ "$(pkg-config --modversion "pario-$flavour")" = "$version" ] ||
  fail "pkg-config --modversion pario-$flavour"
mkdir -p "$work/pc-consumer"
mkargs=(FLAVOUR="$flavour" OUT="$work/pc-consumer")
[ "$findmpi" = ON ] && mkargs+=(MPICC="$mpicc")
make -s -C "$here/pkgconfig-consumer" "${mkargs[@]}" || fail "building the pkg-config consumer"
"${run[@]}" 2 "$work/pc-consumer/consumer" "$work/pc.dat" "$flavour" "$prefix/$libdir"

step "pario-bench.$flavour --version / --help"
"$prefix/bin/pario-bench.$flavour" --version | tee "$work/version.txt"
grep -Eq "^pario-bench $version \(built for (Open MPI|MPICH|the MPI standard ABI) [0-9]" "$work/version.txt" || fail "--version"
"$prefix/bin/pario-bench.$flavour" --help | grep -q "usage: pario-bench" || fail "--help"
for p in pario-overhead pario-exchange pario-checksum pario-server; do
  [ -x "$prefix/bin/$p.$flavour" ] || fail "$p.$flavour"
done
"$prefix/bin/pario-server.$flavour" --version | grep -q "^pario-server $version " || fail "pario-server --version"
step "install test passed ($flavour)"
