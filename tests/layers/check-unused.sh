#!/usr/bin/env bash
# No global symbol of libpario or pario-server that only its own file uses: check-unused.sh
# BUILDDIR SRC. A function or variable defined (nm: global) in one of their objects and used by
# no other object of the build tree (the library's, the server's, the tests', the benchmarks')
# is either dead or belongs in its file as `static`; either way a header that exports it misleads.
# Exempt, as what programs outside the tree call:
set -euo pipefail
build=$1 src=$2
declare -A allow=(
  [main]=1 # pario-server's
)
# MPI's names, which pario defines for the application (C, PMPI, Fortran bindings)
exempt() { case $1 in MPI_* | PMPI_* | mpi_* | pmpi_*) return 0 ;; esac; [ -n "${allow[$1]:-}" ]; }
# and the public header's functions (pario_version, pario_file_checksum, ...)
while read -r f; do allow[$f]=1; done < <(grep -oE '\b(pario_[a-z0-9_]+)\s*\(' "$src/include/pario.h" | sed -E 's/\s*\($//' | sort -u)

mapfile -t defining < <(find "$build/src/CMakeFiles/pario.dir" "$build/server/CMakeFiles/pario-server.dir" -name '*.o' | sort)
[ ${#defining[@]} -gt 0 ] || { echo "check-unused: no objects of libpario or pario-server under $build (build first)" >&2; exit 1; }
declare -A used
while read -r sym; do used[$sym]=1; done < <(find "$build" -name '*.o' -not -path '*/CMakeFiles/CMakeScratch/*' -exec nm -u {} + 2>/dev/null |
  awk 'NF == 2 && $1 == "U" {print $2}' | sort -u)
bad=0 n=0
while read -r o sym; do
  n=$((n + 1))
  exempt "$sym" || [ -n "${used[$sym]:-}" ] && continue
  echo "check-unused: ${o#$build/}: $sym is used by no other object (make it static, or remove it)" >&2
  bad=1
done < <(nm -A --defined-only -g "${defining[@]}" | awk '$2 ~ /^[TDBRVWGSC]$/ {sub(/:[0-9a-f]+$/, "", $1); print $1, $3}')
if [ $bad -ne 0 ]; then echo "unused globals: FAILED"; exit 1; fi
echo "unused globals: each of the $n global symbols of libpario and pario-server is used by another object or exempt"
