#!/usr/bin/env bash
# The collective figures of docs/collective.md (issue 34) in one bounded run: HPIO's 32-byte
# pattern and 1280-byte interleaved pieces (a 400 MiB file) written and read collectively,
# the HDF5-like view loop, and the pipelined rounds on/off, native and pario alternating in
# every round. Made to be carried to a machine with more cores (docs/collective.md, "On 16
# cores") as well as to run here.
#
# usage: collective-sweep.sh [STEP...]   steps: noncontig viewswitch pipeline (default all)
# environment:
#   MPIEXEC  the launcher (default: mpiexec.mpich); its ranks option is -n
#   BENCH    pario-bench (default build/mpich/bench/pario-bench)
#   LIB      libpario.so to preload for the pario side (default build/mpich/src/libpario.so)
#   DIR      directory for the test files (default /dev/shm/pario-sweep)
#   RANKS    rank counts (default "4 8 16")      ROUNDS  alternating rounds (default 5)
#   OUT      directory for results.jsonl (every launch's lines; "impl" names the side) and
#            sweep.err (default .)
#   I_NATIVE, I_PARIO  iterations per launch as "HPIO 1280-byte viewswitch", chosen so that
#            each timed part lasts at least 0.5 s on the machine (defaults "40 3 3000" and
#            "250 20 3000", for 16 cores; the 2-core VM needs fewer)
#   BUDGET   seconds after which no new launch starts (default 3600)
#   LAUNCH_ENV  extra "NAME=VALUE ..." passed to every rank (-genv), e.g. LD_LIBRARY_PATH=...
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec.mpich}
BENCH=${BENCH:-build/mpich/bench/pario-bench}
LIB=${LIB:-build/mpich/src/libpario.so}
DIR=${DIR:-/dev/shm/pario-sweep}
RANKS=${RANKS:-4 8 16}
ROUNDS=${ROUNDS:-5}
OUT=${OUT:-.}
BUDGET=${BUDGET:-3600}
read -r NI32 NI1280 NIVS <<<"${I_NATIVE:-40 3 3000}"
read -r PI32 PI1280 PIVS <<<"${I_PARIO:-250 20 3000}"
res=$OUT/results.jsonl
case "${1:-}" in -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
steps=${*:-noncontig viewswitch pipeline}
for step in $steps; do
  case $step in noncontig | viewswitch | pipeline) ;;
  *) echo "collective-sweep.sh: unknown step '$step' (noncontig, viewswitch, pipeline)" >&2; exit 2 ;;
  esac
done
start=$SECONDS
made_dir=0
[ -d "$DIR" ] || made_dir=1
mkdir -p "$DIR" "$OUT"
genv=()
for kv in ${LAUNCH_ENV:-}; do genv+=(-genv "${kv%%=*}" "${kv#*=}"); done

# iters SIDE KIND: the iteration count of one side (native/pario) for a kind (32, 1280, vs)
iters() { local v; v=$(echo "${1:0:1}" | tr np NP)I$2; echo "${!v}"; }

# launch SIDE NP RESULTS ARGS...: one pario-bench launch, natively or with pario preloaded
launch() {
  local side=$1 np=$2 res=$3; shift 3
  if (( SECONDS - start > BUDGET )); then echo "sweep: budget spent, skipping $side np=$np $*" >&2; return 0; fi
  local pre=()
  [ "$side" = pario ] && pre=(-genv LD_PRELOAD "$LIB")
  echo "sweep: [$((SECONDS - start)) s] $side np=$np $*" >&2
  local left=$(( BUDGET - (SECONDS - start) + 60 ))
  (( left > 240 )) && left=240
  timeout "$left" "$MPIEXEC" -n "$np" "${genv[@]}" "${pre[@]}" "$BENCH" "$@" --dir "$DIR" -o "$res" >/dev/null 2>>"$OUT/sweep.err" ||
    echo "sweep: launch failed ($side np=$np $*)" >&2
}

for step in $steps; do
  case $step in
  noncontig)
    for r in $(seq "$ROUNDS"); do
      for np in $RANKS; do
        for side in native pario; do
          launch $side "$np" "$res" noncontig --region-size 32 --region-count 32768 \
            --access collective -i "$(iters $side 32)"
          # 1280-byte pieces, 400 MiB in all whatever the rank count
          launch $side "$np" "$res" noncontig --region-size 1280 \
            --region-count $((327680 / np)) --access collective -i "$(iters $side 1280)"
        done
      done
    done ;;
  viewswitch)
    for r in $(seq "$ROUNDS"); do
      for np in $RANKS; do
        for side in native pario; do
          launch $side "$np" "$res" viewswitch -i "$(iters $side VS)"
        done
      done
    done ;;
  pipeline)
    np=${RANKS##* }
    for r in $(seq "$ROUNDS"); do
      for mode in false true; do
        launch pario "$np" "$res" noncontig --region-size 1280 \
          --region-count $((327680 / np)) --access collective -i "$PI1280" \
          -H romio_cb_write=enable -H romio_cb_read=enable \
          -H pario_coll_pipeline=$mode -H pario_coll_direct=$mode
      done
    done ;;
  esac
done
# pario-bench removes its own test files; the folder goes only if this run made it
[ "$made_dir" = 1 ] && rmdir "$DIR" 2>/dev/null
echo "sweep: done in $((SECONDS - start)) s" >&2
