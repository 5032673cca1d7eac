#!/usr/bin/env bash
# Under with-server.sh: the same program (rio gen: every call's return code checked) run by the
# native MPI-IO on a local file and by pario on a file of the server must leave byte-identical
# files: the oracle is the MPI's own MPI-IO, not pario's local path.
# usage: compare.sh LAUNCHER...  (LAUNCHER names libpario as "--pario LIB"; "gen NAME" is appended)
set -euo pipefail
name=compare.$$
local=$PARIO_TEST_DIR/../$name.local
pario=("$@") native=()  # native: the launcher without its --pario LIB (the MPI's own MPI-IO)
while [ $# -gt 0 ]; do
  if [ "$1" = --pario ]; then shift 2; continue; fi
  native+=("$1"); shift
done
[ ${#native[@]} -lt ${#pario[@]} ] || { echo "compare.sh: the launcher names no --pario LIB"; exit 2; }
rm -f "$local" "$PARIO_TEST_DIR/$name"
"${native[@]}" gen "$local"
"${pario[@]}" gen "$PARIO_TEST_URL/$name"
cmp "$local" "$PARIO_TEST_DIR/$name"
echo "compare.sh: $(stat -c %s "$local") bytes, identical on the server (pario) and locally (native MPI-IO)"
rm -f "$local" "$PARIO_TEST_DIR/$name"
