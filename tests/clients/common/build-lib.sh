# Sourced by the build scripts of the test suites fetched from Debian sources
# (hdf5/build-testpar.sh, mpich/build-suites.sh, pnetcdf/build-suite.sh).

# why REASON PROGRAM-PATH...: the tests of these programs skip with this reason
# (run-client.sh --need reads PROGRAM.why).
why() {
  local w=$1; shift
  for p in "$@"; do rm -f "$p"; echo "$w" > "$p.why"; done
}

# fetch_or_skip NAME SETUP-TEST PACKAGE CACHE KEEP... -- PROGRAM-PATH...: prints the source
# directory (common/fetch-source.sh); when the source cannot be had, every program's tests
# skip saying so, and the script exits 77.
fetch_or_skip() {
  local name=$1 setup=$2 pkg=$3 cache=$4 keep=() rc=0 src
  shift 4
  while [ $# -gt 0 ] && [ "$1" != -- ]; do keep+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  src=$("$(dirname "${BASH_SOURCE[0]}")/fetch-source.sh" "$pkg" "$cache" "${keep[@]}") || rc=$?
  if [ $rc -ne 0 ]; then
    why "the Debian source of $name could not be fetched (see the test $setup)" "$@"
    echo "$(basename "$0"): $name source not available: its tests are skipped" >&2
    exit 77
  fi
  echo "$src"
}

# up_to_date OUT STAMP: exit 0 when OUT was built from STAMP (OUT/.stamp); otherwise forget
# the old stamp (the caller writes the new one when the build is complete).
up_to_date() {
  if [ -f "$1/.stamp" ] && [ "$(cat "$1/.stamp")" = "$2" ]; then
    echo "$(basename "$0"): up to date in $1"
    exit 0
  fi
  rm -f "$1/.stamp"
}
