#!/usr/bin/env bash
# Fails when a lower layer of src/ includes an upper one (docs/design.md, "Include rules").
# Each layer lists the folders it may include; core/common.h, the helpers every layer uses,
# may be included from anywhere.
set -euo pipefail
src=${1:-$(dirname "$0")/../../src}
declare -A allowed=(
  [api]="api tracer async sharedfp collective core view driver trace include"
  [tracer]="tracer core view driver trace"
  [async]="async collective core view driver trace"
  [sharedfp]="sharedfp core view driver trace"
  [collective]="collective core view driver trace"
  [core]="core view driver trace include"
  [view]="view trace"
  [driver]="driver rio trace"
  [rio]="rio"
  [trace]="trace"
  [remote]="remote core view driver rio trace"
  [include]="include"
)
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
    case " ${allowed[$layer]} " in
      *" $tdir "*) ;;
      *) echo "check-includes: ${file#$src/}:$line: $layer includes $target (upper layer or peer)" >&2; bad=1 ;;
    esac
  done < <(grep -nH '#include "' "$dir"*.[ch] 2>/dev/null || true)
done
if [ $bad -ne 0 ]; then echo "include graph: FAILED"; exit 1; fi
echo "include graph: every include goes down"
