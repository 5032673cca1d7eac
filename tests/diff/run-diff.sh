#!/usr/bin/env bash
# Differential test driver: replay one seed's random MPI-IO call sequence (tests/diff/difftest)
# with the native MPI-IO and with pario preloaded, on files pre-filled with a known pattern,
# and require byte-identical files (cmp) and identical per-rank logs (diff: return codes,
# counts, positions, data checksums). Exits non-zero with a readable message on a difference.
#
# usage: run-diff.sh FLAVOUR NP SEED OPS LIBPARIO
#        run-diff.sh FLAVOUR NP SEED OPS DIFFTEST LIBPARIO WORKDIR [diff|model [ARGS...]]
#   FLAVOUR  openmpi or mpich (launched through scripts/mpirun.sh)
#   SEED     a number, or "random" (a fresh seed, printed so the run can be repeated)
#   DIFFTEST the program (default: BUILD/tests/diff/difftest next to LIBPARIO's BUILD/src)
#   WORKDIR  where files and logs go (default: $PARIO_DIFF_DIR or a temporary directory);
#            kept after a failure, removed after a pass
#   mode     diff (default): pario against the native MPI-IO;
#            model: only the pario run, checked against difftest's model
#   ARGS     more difftest arguments, e.g. --pattern coll (the collective patterns; OPS is
#            then the number of epochs) or --eof-strict (with model)
# Environment:
#   PARIO_DIFF_MODEL=1   both runs also check themselves against difftest's model (reads, byte
#                        offsets, sizes, the file after every write step; slower: fsync per
#                        step). A native run that contradicts the model is reported as a bug
#                        of the native MPI-IO, and pario is then judged by the model alone.
#   PARIO_DIFF_ROUNDS=K  long randomized local mode: K rounds, each with a fresh random seed
#                        (SEED is ignored unless K is 1); stops at the first failure.
#   PARIO_DIFF_TIMEOUT   seconds per run (default 300).
#   PARIO_DIFF_LAUNCHER  the launcher (default scripts/mpirun.sh; same arguments: FLAVOUR NP
#                        [--pario LIB] PROGRAM ARGS...), e.g. across namespace nodes
#                        (tests/multinode/diff.sh)
set -uo pipefail
if [ $# -ne 5 ] && [ $# -lt 7 ]; then
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
flavour=$1 np=$2 seed=$3 ops=$4
if [ $# -eq 5 ]; then
  lib=$5
  prog=$(cd "$(dirname "$lib")/.." && pwd)/tests/diff/difftest
  work=${PARIO_DIFF_DIR:-}
  mode=diff
else
  prog=$5 lib=$6 work=$7 mode=${8:-diff}
fi
args=("${@:9}")   # empty in the short form
here=$(cd "$(dirname "$0")" && pwd)
run=${PARIO_DIFF_LAUNCHER:-$here/../../scripts/mpirun.sh}
rounds=${PARIO_DIFF_ROUNDS:-1}
limit=${PARIO_DIFF_TIMEOUT:-300}
model=()
[ "${PARIO_DIFF_MODEL:-0}" = 1 ] && model=(--model)
[ "$mode" = model ] && model=(--model)
for f in "$prog" "$lib"; do
  [ -e "$f" ] || { echo "run-diff: $f not found (build the difftest and pario targets)" >&2; exit 2; }
done
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/pario-diff.XXXXXX")
  tmpwork=1
else
  mkdir -p "$work"
  tmpwork=0
fi

# run_one IMPL SEED DIR: one run of difftest, native or pario; its exit status.
# Open MPI's OMPIO: the data-sieving read-modify-write of its collective write aggregators
# races on interleaved ranges (lost updates in 2 of 6 runs of seed 1 at 4 ranks); the native
# oracle runs with write data sieving off (README.md).
run_one() {
  local impl=$1 s=$2 d=$3 pre=() expect=--expect-native env=()
  if [ "$impl" = pario ]; then pre=(--pario "$lib"); expect=--expect-pario; fi
  [ "$impl" = native ] && env=(OMPI_MCA_fbtl_posix_write_datasieving=0)
  env "${env[@]}" timeout "$limit" "$run" "$flavour" "$np" "${pre[@]}" "$prog" --seed "$s" --ops "$ops" \
    --file "$d/$impl.dat" --log "$d/$impl.log" "${model[@]}" "${args[@]}" "$expect" >"$d/$impl.out" 2>&1
  local rc=$?
  [ $rc -eq 124 ] && echo "timed out after ${limit}s" >>"$d/$impl.out"
  return $rc
}

# show FILE: the interesting lines of a run's output
show() { grep -v -e '^\s*$' -e 'served by' -e '^-----' "$1" | head -15 | sed 's/^/    /'; }

# one_seed SEED: 0 pass, 1 fail
one_seed() {
  local s=$1 what="$flavour, $np ranks, seed $s, $ops ops${args:+ ${args[*]}}"
  local d=$work/diff.$flavour.np$np.s$s${args:+.$(echo "${args[*]}" | tr -dc 'a-z')}
  rm -rf "$d" && mkdir -p "$d"
  run_one pario "$s" "$d"
  local prc=$?
  if [ "$mode" = model ]; then
    if [ $prc -eq 0 ]; then echo "PASS: pario agrees with the model ($what)"; rm -rf "$d"; return 0; fi
    echo "FAIL: pario run exited $prc ($what):"; show "$d/pario.out"; echo "    (files in $d)"
    echo "    (rerun: $0 $flavour $np $s $ops $prog $lib $work $mode ${args[*]})"
    return 1
  fi
  run_one native "$s" "$d"
  local nrc=$?
  if [ $nrc -eq 4 ] && [ ${#model[@]} -gt 0 ]; then
    echo "NOTE: the native $flavour MPI-IO contradicts the model ($what):"
    grep -m3 -e 'MODEL MISMATCH' -e 'SELF-CHECK' "$d/native.out" | sed 's/^/    /'
    if [ $prc -eq 0 ]; then
      echo "PASS: pario agrees with the model; native not used as the oracle ($what)"
      rm -rf "$d"; return 0
    fi
    echo "FAIL: pario run exited $prc ($what):"; show "$d/pario.out"; echo "    (files in $d)"
    return 1
  fi
  if [ $nrc -ne 0 ]; then
    echo "FAIL: the native run exited $nrc, so there is no oracle ($what):"; show "$d/native.out"
    echo "    (files in $d)"
    return 1
  fi
  local status=0
  if [ $prc -ne 0 ]; then
    echo "FAIL: the pario run exited $prc ($what):"; show "$d/pario.out"
    status=1
  fi
  if ! cmp "$d/native.dat" "$d/pario.dat" >"$d/cmp.txt" 2>&1; then
    echo "FAIL: the files differ ($what): $(head -1 "$d/cmp.txt")"
    status=1
  fi
  local r
  for ((r = 0; r < np; r++)); do
    if ! diff "$d/native.log.$r" "$d/pario.log.$r" >"$d/log.$r.diff" 2>&1; then
      echo "FAIL: rank $r logs differ (< native, > pario; first difference):"
      sed -n '1,/^---/{p};/^---/{n;p;q}' "$d/log.$r.diff" | head -6 | cut -c1-400 | sed 's/^/    /'
      status=1
    fi
  done
  if [ $status -eq 0 ]; then
    echo "PASS: files and logs identical ($what)"
    rm -rf "$d"
  else
    echo "    (files, logs and diffs in $d; rerun: $0 $flavour $np $s $ops $prog $lib $work $mode ${args[*]})"
  fi
  return $status
}

status=0
for ((i = 1; i <= rounds; i++)); do
  s=$seed
  if [ "$seed" = random ] || [ "$rounds" -gt 1 ]; then s=$(( (RANDOM << 15 | RANDOM) + 1000 )); fi
  one_seed "$s" || { status=1; break; }
done
[ $tmpwork -eq 1 ] && [ $status -eq 0 ] && rm -rf "$work"
exit $status
