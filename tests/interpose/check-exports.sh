#!/bin/sh
# Check that libpario exports exactly the MPI-IO API and pario's public header, nothing else:
# every MPI_/PMPI_ name of the host's MPI-IO (list from gen-mpiio-symbols.sh) must be defined,
# and no other symbol may be, except pario.h's functions and a few deliberate MPI wrappers.
# Internal pario_ functions must stay hidden so they cannot clash with an application's.
# usage: check-exports.sh NM LIBPARIO MPIIO_SYMBOLS.txt PARIO_H
set -eu
nm=$1 lib=$2 api=$3 header=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "ADDR TYPE NAME[@VERSION]" -> "TYPE NAME"
"$nm" -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $2, $3 }' \
  | LC_ALL=C sort -k2 > "$tmp/defined"
cut -d' ' -f2 "$tmp/defined" | LC_ALL=C sort -u > "$tmp/names"

# What must be exported: MPI_x and PMPI_x for every MPI-IO function of mpi.h, and pario.h.
{ cat "$api"; sed 's/^/P/' "$api"; } | LC_ALL=C sort -u > "$tmp/required"
grep -o -E '(^|[^A-Za-z0-9_])pario_[A-Za-z0-9_]+[[:space:]]*\(' "$header" \
  | sed -E 's/^[^A-Za-z0-9_]//; s/[[:space:]]*\($//' | LC_ALL=C sort -u > "$tmp/public"
LC_ALL=C sort -u "$tmp/required" "$tmp/public" > "$tmp/allowed"

status=0
LC_ALL=C comm -23 "$tmp/allowed" "$tmp/names" > "$tmp/missing"
# Optional, deliberate wrappers of non-I/O MPI calls: MPI_Init*/MPI_Finalize (set-up and
# teardown), MPI_Error_string (src/api/errstring.c: MPICH prints a wrong text
# for error codes pario adds), and MPI_Wait/Waitall/Waitany/Waitsome without their PMPI_ names
# (src/api/wait.c: a wait on pario's requests sleeps instead of polling), and MPI_Test/Testall/
# Testany/Testsome (src/api/wait.c: traced when they complete pario's requests). Any other MPI_ name
# here must be added on purpose, with a reason.
# Also symbols the linker itself may add.
LC_ALL=C comm -13 "$tmp/allowed" "$tmp/names" \
  | grep -v -E '^P?MPI_(Init|Init_thread|Finalize|Error_string)$' \
  | grep -v -E '^MPI_(Wait|Waitall|Waitany|Waitsome|Test|Testall|Testany|Testsome)$' \
  | grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' > "$tmp/extra" || true

nreq=$(wc -l < "$tmp/required"); npub=$(wc -l < "$tmp/public"); ndef=$(wc -l < "$tmp/names")
echo "check-exports: $lib"
echo "check-exports: $ndef defined dynamic symbols; required: $nreq MPI-IO names from mpi.h + $npub from pario.h"
if [ -s "$tmp/missing" ]; then
  echo "FAIL: $(wc -l < "$tmp/missing") required symbol(s) not exported (a program calling one gets the native MPI-IO):"
  sed 's/^/    /' "$tmp/missing"
  status=1
fi
if [ -s "$tmp/extra" ]; then
  echo "FAIL: $(wc -l < "$tmp/extra") symbol(s) exported that are not MPI-IO API nor in pario.h (should be hidden/static):"
  awk 'NR == FNR { extra[$1] = 1; next } ($2 in extra) { print "    " $1, $2 }' "$tmp/extra" "$tmp/defined"
  status=1
fi
# design.md: "pario defines both MPI_File_x and PMPI_File_x (the MPI_ name a weak alias)".
# Only a note: with dynamic linking a strong MPI_ name works the same.
strong=$(awk '$1 != "W" && $1 != "V" && $2 ~ /^MPI_(File_|Register_datarep)/ { print $2 }' "$tmp/defined")
if [ -n "$strong" ]; then
  echo "note: $(echo "$strong" | wc -l) MPI_ name(s) exported strong, not as the weak alias design.md describes:"
  echo "$strong" | head -5 | sed 's/^/    /'
fi
[ $status -eq 0 ] && echo "check-exports: PASS" || echo "check-exports: FAIL"
exit $status
