#!/bin/sh
# Check that a libpario built for the MPI standard ABI (PARIO_MPI=abi) depends on nothing of one
# MPI implementation: its only MPI library is the ABI's (libmpi_abi.so.N, no libmpi.so.N), and
# every symbol it imports is either a function the ABI's mpi.h declares (MPI_x, PMPI_x; the
# ABI's handles and constants are compile-time values, never symbols) or comes, versioned, from
# the C library or OpenSSL. An Open MPI build imports ompi_mpi_comm_world and friends, an
# MPICH build MPIR_ internals: either fails here. (nm -D / readelf -d, run on the file.)
# usage: check-abi-imports.sh CC NM READELF LIBRARY
#   CC       the ABI compiler wrapper (mpicc_abi): its mpi.h is the list of allowed MPI names
set -eu
cc=$1 nm=$2 readelf=$3 lib=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-abi-imports: FAIL: $*"; exit 1; }

printf '#include <mpi.h>\n' > "$tmp/h.c"
"$cc" -E -dM "$tmp/h.c" | grep -q -E '^#define MPI_ABI_VERSION ' \
  || fail "$cc's mpi.h does not define MPI_ABI_VERSION: not the MPI standard ABI's header"
# Functions the header declares: one C statement per line, typedefs (callback types) dropped,
# names directly followed by '(' kept.
"$cc" -E -P "$tmp/h.c" | tr '\n' ' ' | tr ';' '\n' \
  | grep -v -E '(^|[^A-Za-z0-9_])typedef([^A-Za-z0-9_]|$)' \
  | grep -o -E '(^|[^A-Za-z0-9_])P?MPIX?_[A-Za-z0-9_]+[[:space:]]*\(' \
  | sed -E 's/^[^A-Za-z0-9_]//; s/[[:space:]]*\($//' | LC_ALL=C sort -u > "$tmp/abi"
nabi=$(wc -l < "$tmp/abi")
[ "$nabi" -gt 500 ] || fail "only $nabi MPI functions found in $cc's mpi.h"

"$readelf" -d "$lib" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' > "$tmp/needed"
grep -q -E '^libmpi_abi\.so' "$tmp/needed" || fail "$lib does not link the ABI's libmpi_abi.so ($(tr '\n' ' ' < "$tmp/needed"))"
bad=$(grep -E '^lib(p?mpi|open-|pmix|ucp|ucs|fabric)' "$tmp/needed" | grep -v -E '^libmpi_abi\.so' || true)
[ -z "$bad" ] || fail "$lib links an implementation's library: $bad"

# "  U name[@VERSION]" / "  w name": the name and its version (empty when unversioned).
"$nm" -D --undefined-only "$lib" | awk '{ print $NF }' > "$tmp/undef"
status=0 nmpi=0 nsys=0
: > "$tmp/wrong"
while read -r sym; do
  name=${sym%%@*} ver=
  case "$sym" in *@*) ver=${sym#*@}; ver=${ver#@} ;; esac
  case "$name" in
    MPI_* | PMPI_* | MPIX_* | PMPIX_*)
      if grep -qxF "$name" "$tmp/abi"; then nmpi=$((nmpi + 1)); else echo "$sym (not in the ABI's mpi.h)" >> "$tmp/wrong"; fi ;;
    __gmon_start__ | __cxa_finalize | _ITM_deregisterTMCloneTable | _ITM_registerTMCloneTable) nsys=$((nsys + 1)) ;;
    *)
      case "$ver" in
        GLIBC_* | OPENSSL_*) nsys=$((nsys + 1)) ;;
        *) echo "$sym (not an MPI function of the ABI, nor a versioned C library or OpenSSL symbol)" >> "$tmp/wrong" ;;
      esac ;;
  esac
done < "$tmp/undef"
echo "check-abi-imports: $lib"
echo "check-abi-imports: links $(tr '\n' ' ' < "$tmp/needed")"
echo "check-abi-imports: $(wc -l < "$tmp/undef") undefined symbols: $nmpi MPI functions of the ABI ($nabi declared by mpi.h), $nsys of the C library and OpenSSL"
if [ -s "$tmp/wrong" ]; then
  echo "check-abi-imports: FAIL: $(wc -l < "$tmp/wrong") import(s) outside the standard ABI:"
  sed 's/^/    /' "$tmp/wrong"
  status=1
fi
[ $status -eq 0 ] && echo "check-abi-imports: PASS"
exit $status
