#!/usr/bin/env bash
# Run one client program natively or under pario, in a fresh scratch directory (its working
# directory), then check who served its MPI-IO calls.
#   usage: run-client.sh --mode pario|native --np N [--pario LIBPARIO] [--probe PROBE.so]
#                        [--preload LIB] [--need FILE] [--scratch BASE] [--name NAME]
#                        [--verdict REGEX]... [--after WORD]...
#                        --run LAUNCHER-WORD... -- PROGRAM ARGS
# --run words make the launcher (scripts/mpirun.sh FLAVOUR, i.e. the build's PARIO_RUN); it is
# called as LAUNCHER NP [--pario PRELOAD] PROGRAM ARGS. With --probe, probe.so is preloaded
# first and check-probe.sh decides afterwards (pario: every MPI_File_open served by libpario;
# native: none). Without --probe the program checks by itself (it is given the mode).
# --preload LIB goes first in LD_PRELOAD in both modes (a PMPI tool above pario; not with --probe).
# --linked: the program has libpario linked in (-lpario), so pario mode preloads nothing.
# --need FILE: when FILE is missing, say why (FILE.why, if there) and exit 77 (skipped).
# The literal word @MODE@ in ARGS is replaced by the mode. A word ::: separates programs run
# one after the other in the same directory (a writer, then a reader); a program preceded by
# the word ! must exit non-zero (HDF5's t_pflush1 ends every run with a failure on purpose).
# --verdict REGEX (repeatable): the programs' output (stdout and stderr) must also have a line
# matching each REGEX (grep -E): the test suites whose programs say " No Errors" and exit 0
# even when they found errors.
# --after words (repeatable, in order) make a command run once the programs have succeeded, in
# the same directory, neither launched by MPI nor with anything preloaded; it must exit 0
# (PnetCDF's tests: ncvalidator on the files the run made).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode="" np="" pario="" probe="" pre="" linked=0 base="${TMPDIR:-/tmp}" name=client
launcher=() verdicts=() after=()
while [ $# -gt 0 ]; do
  case "$1" in
    --mode) mode=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --pario) pario=$2; shift 2 ;;
    --probe) probe=$2; shift 2 ;;
    --preload) pre=$2; shift 2 ;;
    --linked) linked=1; shift ;;
    --need)
      if [ ! -e "$2" ]; then
        why="not built"
        [ -f "$2.why" ] && why=$(cat "$2.why")
        echo "run-client: skipped: $2: $why"
        exit 77
      fi
      shift 2 ;;
    --scratch) base=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --run) launcher+=("$2"); shift 2 ;;
    --verdict) verdicts+=("$2"); shift 2 ;;
    --after) after+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "run-client: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$mode" in pario|native) ;; *) echo "run-client: --mode pario|native" >&2; exit 2 ;; esac
[ -n "$np" ] && [ ${#launcher[@]} -gt 0 ] && [ $# -gt 0 ] || { echo "run-client: bad usage" >&2; exit 2; }
if [ "$mode" = pario ] && [ -z "$pario" ] && [ $linked = 0 ]; then
  echo "run-client: --mode pario needs --pario or --linked" >&2; exit 2
fi

args=()
for a in "$@"; do args+=("${a//@MODE@/$mode}"); done

mkdir -p "$base"
work=$(mktemp -d "$base/pario-clients.$name.XXXXXX")
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
cd "$work"

preload=$pre
if [ -n "$probe" ]; then
  mkdir -p "$work/.probe"
  export PARIO_CLIENTS_PROBE_DIR=$work/.probe
  preload="${preload:+$preload }$probe"
fi
[ "$mode" = pario ] && [ $linked = 0 ] && preload="${preload:+$preload }$pario"
# Under pario every error pario raises is printed as raised (clients that hide HDF5's error
# stack still show the cause); scripts/mpirun.sh passes PARIO_LOG to the ranks.
[ "$mode" = pario ] && export PARIO_LOG=${PARIO_LOG:-1}

echo "run-client: $name, $mode, $np rank(s), in $work"
run_one() {
  if [ -n "$preload" ]; then
    "${launcher[@]}" "$np" --pario "$preload" "$@"
  else
    "${launcher[@]}" "$np" "$@"
  fi
}
launch() { # with --verdict, the output is kept (in the scratch directory) to be read after
  if [ ${#verdicts[@]} -gt 0 ]; then
    run_one "$@" 2>&1 | tee -a "$work/.output"
  else
    run_one "$@"
  fi
}
rc=0
cmd=()
for a in "${args[@]}" :::; do
  if [ "$a" = ::: ]; then
    if [ ${#cmd[@]} -gt 0 ] && [ "${cmd[0]}" = "!" ]; then
      if launch "${cmd[@]:1}"; then
        echo "run-client: ${cmd[1]} exited 0, but it must fail" >&2
        rc=1
        break
      fi
      echo "run-client: ${cmd[1]} failed, as it must"
    elif [ ${#cmd[@]} -gt 0 ]; then
      launch "${cmd[@]}" || { rc=$?; break; }
    fi
    cmd=()
  else
    cmd+=("$a")
  fi
done
if [ $rc -ne 0 ]; then
  echo "run-client: $name ($mode, np $np) exited $rc" >&2
  [ -n "$probe" ] && cat "$work"/.probe/probe.* 2>/dev/null | head -20 >&2
  exit $rc
fi
for v in ${verdicts[@]+"${verdicts[@]}"}; do
  if ! grep -Eq -- "$v" "$work/.output"; then
    echo "run-client: $name ($mode, np $np): no line of its output matches '$v' (the program's verdict)" >&2
    exit 1
  fi
done
if [ ${#after[@]} -gt 0 ] && ! "${after[@]}"; then
  echo "run-client: $name ($mode, np $np): the check after the run failed: ${after[*]}" >&2
  exit 1
fi
if [ -n "$probe" ]; then
  "$here/check-probe.sh" "$work/.probe" "$mode" "$np"
fi
echo "run-client: $name ($mode, np $np) passed"
