#!/usr/bin/env bash
# The layer graph at the symbol level: check-symbols.sh OBJDIR SRC. OBJDIR holds libpario's
# objects by layer (OBJDIR/<layer>/<file>.o); every function or variable an object uses from
# another layer's object must come from a layer it may use (layers.sh). This catches a call that
# bypasses the headers (a local extern declaration), which the include check cannot see. MPI's
# own names (MPI_*, PMPI_*, which pario defines for the host MPI) and what core/common.h
# declares (errors, logging: every layer's helpers) are exempt.
set -euo pipefail
objdir=$1 src=$2
source "$(dirname "$0")/layers.sh"
declare -A def common
# The functions core/common.h declares: usable from anywhere, as the header is.
while read -r f; do common[$f]=1; done < <(grep -oE '\b(pario_[a-z0-9_]+)\s*\(' "$src/core/common.h" | sed -E 's/\s*\($//' | sort -u)
objects=("$objdir"/*/*.o)
[ -e "${objects[0]}" ] || { echo "check-symbols: no objects under $objdir (build first)" >&2; exit 1; }
for o in "${objects[@]}"; do
  layer=$(basename "$(dirname "$o")")
  while read -r sym; do def[$sym]=$layer; done < <(nm --defined-only -g "$o" | awk '$2 ~ /^[TDBRVWG]$/ {print $3}')
done
bad=0 n=0
for o in "${objects[@]}"; do
  layer=$(basename "$(dirname "$o")")
  if [ -z "${allowed[$layer]+x}" ]; then
    echo "check-symbols: $layer (${o#$objdir/}) is not in layers.sh" >&2
    bad=1
    continue
  fi
  while read -r sym; do
    t=${def[$sym]:-}
    [ -z "$t" ] || [ "$t" = "$layer" ] && continue
    n=$((n + 1))
    case $sym in MPI_* | PMPI_*) continue ;; esac
    [ -n "${common[$sym]:-}" ] && continue
    may_use "$layer" "$t" || { echo "check-symbols: ${o#$objdir/}: $layer uses $sym of $t (upper layer or peer)" >&2; bad=1; }
  done < <(nm -u "$o" | awk '{print $2}')
done
if [ $bad -ne 0 ]; then echo "symbol graph: FAILED"; exit 1; fi
echo "symbol graph: all $n uses of another layer's symbols go down (${#objects[@]} objects)"
