#!/usr/bin/env bash
# scripts/mpirun.sh's interface on namespace nodes that are already up (diff.sh gives it to
# tests/diff/run-diff.sh as PARIO_DIFF_LAUNCHER): NP ranks, PARIO_NS_PPN per node, on the
# nodes of PARIO_NS_STATE (nsnodes.sh up), through nsnodes.sh run (limit PARIO_NS_LIMIT,
# default 150 s).
# usage: nslaunch.sh FLAVOUR NP [--pario LIB] PROGRAM ARGS...
set -uo pipefail
case "${1:-}" in --help|-h) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 3 ] || { echo "usage: nslaunch.sh FLAVOUR NP [--pario LIB] PROGRAM ARGS..." >&2; exit 2; }
ppn=${PARIO_NS_PPN:?PARIO_NS_PPN (ranks per node) is not set} np=$2
[ $((np % ppn)) = 0 ] || { echo "nslaunch.sh: $np ranks do not fill nodes of $ppn" >&2; exit 2; }
exec "$(dirname "$0")/nsnodes.sh" run "${PARIO_NS_STATE:?PARIO_NS_STATE (nodes) is not set}" "$1" $((np / ppn)) "$ppn" \
  --timeout "${PARIO_NS_LIMIT:-150}" "${@:3}"
