#!/usr/bin/env bash
# A stranger attacks addproc's TCP counter listener while an MPI program uses it: starts
# tests/mpi/tcpstranger.c in MODE, then tests/mpi/tcpattack.c under pario with addproc over TCP
# (PARIO_ADDPROC_TRANSPORT=tcp) and rank 0 holding its open HOLD_MS after listening
# (PARIO_TEST_TCPCTR_PORTFILE, PARIO_TEST_TCPCTR_HOLD_MS, and for impostor
# PARIO_TEST_TCPCTR_DECOY: src/sharedfp/tcpctr.c). Both must pass:
# the stranger checks the server's answers to it, the MPI program its records, transport and times.
# usage: tcpattack.sh LAUNCHER... -- NP LIBPARIO PROGRAM STRANGER MODE EXPECT HOLD_MS DIR
#   LAUNCHER...  the MPI test launcher (scripts/mpirun.sh FLAVOUR), before "--"
#   EXPECT       the transport every rank must report: tcp (lease), or mpi (the stranger took a place)
# PARIO_TCPATTACK_TRANSPORT=lease: addproc's lease over the same listener instead of tcp.
#   DIR          a folder for the port file and markers (made if missing; this run's files removed)
set -uo pipefail
launcher=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do launcher+=("$1"); shift; done
if [ $# -ne 9 ] || [ "${2:-}" = --help ]; then
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
shift
np=$1 lib=$2 prog=$3 stranger=$4 mode=$5 expect=$6 hold=$7 dir=$8
mkdir -p "$dir" || exit 2
base=$dir/tcpattack.$mode.$np.$$
files=("$base.port" "$base.port.tmp" "$base.opened" "$base.done")
rm -f "${files[@]}"
spid=
cleanup() {
  if [ -n "$spid" ]; then kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; fi
  rm -f "${files[@]}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$stranger" "$mode" "$base.port" "$base.opened" "$base.done" &
spid=$!
# impostor: rank 0 names 127.0.0.2, where the stranger listens, before its own address.
decoy=
[ "$mode" = impostor ] && decoy=127.0.0.2
PARIO_TEST_TCPCTR_DECOY=$decoy PARIO_ADDPROC_TRANSPORT=${PARIO_TCPATTACK_TRANSPORT:-tcp} PARIO_TEST_TCPCTR_PORTFILE=$base.port PARIO_TEST_TCPCTR_HOLD_MS=$hold \
  "${launcher[@]}" "$np" --pario "$lib" "$prog" "$expect" "$hold" "$base.opened" "$base.done"
mpi=$?
if [ $mpi != 0 ] && [ ! -e "$base.done" ]; then kill "$spid" 2>/dev/null; fi
wait "$spid"
st=$?
spid=
[ $mpi = 0 ] || echo "tcpattack.sh: the MPI program failed ($mpi)" >&2
[ $st = 0 ] || echo "tcpattack.sh: the stranger saw the server misbehave ($st)" >&2
[ $mpi = 0 ] && [ $st = 0 ]
