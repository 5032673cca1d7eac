#!/usr/bin/env bash
# The server is killed (SIGKILL) at a random moment while the ranks run every kind of collective
# call (killcoll.c remote), RUNS times, each run with a fresh server. A run passes when it ends
# within its own timeout (a hang is killed and fails), the program passed its checks (pario
# served it), and every rank reports the same call and the same error class as its first
# failure: a rank that stops on error never leaves the others in their next collective.
# usage: killcoll.sh SERVER WORKDIR RUNS NP LAUNCHER...   (LAUNCHER: the MPI launch of the
#        killcoll program; "remote URL DIR" is appended)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 work=$2 runs=$3 np=$4; shift 4
. "$here/server.sh"
trap rio_server_stop EXIT
bad=0 own=0 other=0
for run in $(seq "$runs"); do
  dir=$work/run$run
  rm -rf "$dir"
  mkdir -p "$dir"
  rio_server_start "$server" "$dir" || exit 1
  export PARIO_RIO_SECRET_FILE=$RIO_SECRET
  timeout -k 5 60 "$@" remote "x-rio://127.0.0.1:$RIO_PORT" "$dir" > "$dir/out" 2>&1 &
  prog=$!
  for _ in $(seq 1200); do [ -e "$dir/ready" ] || ! kill -0 $prog 2>/dev/null && break; sleep 0.05; done
  # a random moment in the next 1.5 s: any call of the round, any point of a call
  sleep "0.$(printf '%03d' $((RANDOM % 1000)))"
  [ $((RANDOM % 2)) = 1 ] && sleep 0.5
  kill -KILL "$RIO_PID" 2>/dev/null
  wait "$RIO_PID" 2>/dev/null
  RIO_PID=
  wait $prog
  rc=$?
  lines=$(grep -c '^killcoll: rank' "$dir/out")
  firsts=$(sed -n 's/^killcoll: rank [0-9]* \(call [0-9]* [^ ]* class [0-9]*\) .*/\1/p' "$dir/out" | sort -u)
  nfirsts=$(printf '%s\n' "$firsts" | grep -c .)
  own=$((own + $(grep -c '^killcoll: rank.*(own)' "$dir/out")))
  other=$((other + $(grep -c '^killcoll: rank.*(other)' "$dir/out")))
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    echo "killcoll.sh: run $run HUNG (killed after 60 s)"; bad=$((bad + 1))
  elif [ $rc != 0 ] || [ "$lines" != "$np" ] || [ "$nfirsts" != 1 ]; then
    echo "killcoll.sh: run $run FAILED (exit $rc, $lines of $np ranks reported, $nfirsts different first failures)"
    bad=$((bad + 1))
  else
    echo "killcoll.sh: run $run ok: every rank failed at $firsts"
    continue
  fi
  grep -v '^$' "$dir/out" | head -20 | sed 's/^/    /'
done
echo "killcoll.sh: $bad of $runs runs bad; ranks told their own error $own times, another rank's $other times"
[ $bad = 0 ] && rm -rf "$work"
[ $bad = 0 ]
