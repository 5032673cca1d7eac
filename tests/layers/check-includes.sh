#!/usr/bin/env bash
# Fails when a lower layer of src/ includes an upper one (docs/design.md, "Include rules"; the
# graph is layers.sh); core/common.h, the helpers every layer uses, may be included from anywhere.
set -euo pipefail
src=${1:-$(dirname "$0")/../../src}
source "$(dirname "$0")/layers.sh"
bad=0
for dir in "$src"/*/; do
  layer=$(basename "$dir")
  if [ -z "${allowed[$layer]+x}" ]; then
    echo "check-includes: src/$layer is not in the layer table of $0" >&2
    bad=1
    continue
  fi
  while IFS=: read -r file line inc; do
    target=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$inc")
    [ "$target" = core/common.h ] && continue
    tdir=${target%%/*}
    [ "$tdir" = "$target" ] && continue # a header beside the file
    may_use "$layer" "$tdir" || { echo "check-includes: ${file#$src/}:$line: $layer includes $target (upper layer or peer)" >&2; bad=1; }
  done < <(grep -nH '#include "' "$dir"*.[ch] 2>/dev/null || true)
done
if [ $bad -ne 0 ]; then echo "include graph: FAILED"; exit 1; fi
echo "include graph: every include goes down"
