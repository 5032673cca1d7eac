#!/usr/bin/env bash
# Differential tests across namespace nodes (README.md here): tests/diff/run-diff.sh, unchanged
# but for its launcher, runs each seed's difftest program under the native MPI-IO and under
# pario on N nodes x PPN ranks and compares the files byte for byte and the per-rank logs
# (return codes, counts, positions, checksums). The nodes go whatever happens (nslib.sh).
# (the launcher: nslaunch.sh).
# usage: diff.sh FLAVOUR N PPN OPS LIBPARIO DIFFTEST WORKDIR SEEDS [DIFFTEST ARGS...]
#   SEEDS  comma-separated, e.g. 1,2,3; ARGS e.g. --pattern coll (OPS is then epochs)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in --help|-h) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 8 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
flavour=$1 n=$2 ppn=$3 ops=$4 lib=$5 prog=$6 work=$7 seeds=$8
shift 8
. "$here/nslib.sh"
ns_begin "$work" "$n"
export PARIO_NS_STATE=$NS_ST PARIO_NS_PPN=$ppn PARIO_DIFF_LAUNCHER=$here/nslaunch.sh PARIO_DIFF_TIMEOUT=170
status=0
for s in ${seeds//,/ }; do
  "$here/../diff/run-diff.sh" "$flavour" $((n * ppn)) "$s" "$ops" "$prog" "$lib" "$work/d$s" diff "$@" || status=1
done
[ $status = 0 ] && rm -rf "$work"/d*
exit $status
