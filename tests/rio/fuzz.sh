#!/usr/bin/env bash
# Runs fuzz_rio (server/fuzz/) from seed inputs: fuzz.sh FUZZ_BIN WORKDIR LIBFUZZER_ARGS...
# (ctest rio_fuzz: a bounded run; `make fuzz`: 10^7 executions). Prints libFuzzer's summary
# line with the executions done; a crash, leak or UBSan report fails it.
set -euo pipefail
bin=$1 work=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
# The fuzzed files live on tmpfs when there is one (SYNC is then cheap); RLIMIT_FSIZE bounds them.
tmp=$work/tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && tmp=$(mktemp -d /dev/shm/pario-fuzz.XXXXXX)
mkdir -p "$work/corpus" "$work/artifacts" "$tmp"
python3 "$here/../../server/fuzz/make-seeds.py" "$work/corpus"
export TMPDIR=$tmp
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
"$bin" -artifact_prefix="$work/artifacts/" -print_final_stats=1 -handle_xfsz=0 "$@" "$work/corpus" 2>"$work/fuzz.log" || status=$?
grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$work/fuzz.log" || true
rm -rf "$tmp"/pario-fuzz-*
[ "$tmp" = "$work/tmp" ] || rmdir "$tmp" 2>/dev/null || true
if [ $status -ne 0 ]; then
  tail -60 "$work/fuzz.log"
  echo "fuzz: FAILED (status $status); artifacts in $work/artifacts"
  exit 1
fi
echo "fuzz: no finding"
