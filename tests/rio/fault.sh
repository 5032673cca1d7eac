#!/usr/bin/env bash
# The server goes away in the middle of collective writes: stopped (SIGSTOP: connections stay
# open and nothing answers) or killed. Every rank must fail with MPI_ERR_IO (the program sets
# pario_rio_timeout to 3 s) instead of hanging, and once the server is back (SIGCONT, or a new
# server on the same port) a new open must work. The program (rio fault URL WORKDIR) and this
# script meet through files in WORKDIR: ready (kill now), failed, restarted.
# usage: fault.sh SERVER stop|kill WORKDIR LAUNCHER...   (LAUNCHER: the MPI launch of the rio
#        program; "fault URL WORKDIR" is appended, "fault_nb URL WORKDIR" with
#        RIO_FAULT_MODE=fault_nb: nonblocking writes in flight, the error at MPI_Wait)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 mode=$2 work=$3; shift 3
rm -rf "$work"
mkdir -p "$work"
. "$here/server.sh"
rio_server_start "$server" "$work"
trap rio_server_stop EXIT
export PARIO_RIO_SECRET_FILE=$RIO_SECRET
"$@" "${RIO_FAULT_MODE:-fault}" "x-rio://127.0.0.1:$RIO_PORT" "$work" &
prog=$!
wait_for() { # file, seconds
  for _ in $(seq $(($2 * 20))); do [ -e "$1" ] && return 0; kill -0 $prog 2>/dev/null || return 1; sleep 0.05; done
  return 1
}
wait_for "$work/ready" 60 || { echo "fault.sh: the program never got going" >&2; wait $prog; exit 1; }
if [ "$mode" = stop ]; then
  kill -STOP "$RIO_PID"
  echo "fault.sh: server stopped (SIGSTOP)"
else
  kill -KILL "$RIO_PID"
  wait "$RIO_PID" 2>/dev/null || true
  RIO_PID=
  echo "fault.sh: server killed (SIGKILL)"
fi
if wait_for "$work/failed" 90; then
  if [ "$mode" = stop ]; then
    kill -CONT "$RIO_PID"
  else
    port=$RIO_PORT
    rio_server_start "$server" "$work" "$port"
  fi
  echo "fault.sh: server back on port $RIO_PORT"
  touch "$work/restarted"
fi
wait $prog
