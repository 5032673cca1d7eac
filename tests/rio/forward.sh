#!/usr/bin/env bash
# MPI ranks through a forwarder (pario-server --forward-to): a collective strided write (the
# rio program's collw mode) in independent and two-phase mode, blocking and nonblocking (run by
# the engine's threads). The collective layer hands each rank's driver calls the call's tag
# (coll_id), the forwarder merges the tagged requests: every mode must have WRITEs merged (the
# forwarder's log), the server must handle fewer WRITE requests than the ranks sent, and the
# file must equal a local run's byte for byte.
# usage: forward.sh SERVER WORKDIR LAUNCHER...   (LAUNCHER ends with the program)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 work=$2; shift 2
rm -rf "$work"
mkdir -p "$work/local"
. "$here/server.sh"
FWD_PID=
stop_all() {
  if [ -n "$FWD_PID" ]; then kill "$FWD_PID" 2>/dev/null || true; wait "$FWD_PID" 2>/dev/null || true; FWD_PID=; fi
  rio_server_stop
}
trap stop_all EXIT
rio_server_start "$server" "$work"
# --merge-wait 1000: a loaded machine must not turn the merge into a timeout (which is only slower)
"$server" --forward-to "127.0.0.1:$RIO_PORT" --listen 127.0.0.1:0 --secret-file "$RIO_SECRET" --allow-root --log-level debug \
  --merge-wait 1000 \
  > >(sed -u -n '1s/.*://p' > "$work/fport") 2>>"$work/forwarder.log" &
FWD_PID=$!
for _ in $(seq 200); do [ -s "$work/fport" ] && break; sleep 0.05; done
[ -s "$work/fport" ] || { echo "forward.sh: the forwarder wrote no port"; exit 1; }
fport=$(cat "$work/fport")
sent=0
merges() { grep -c "requests merged into one WRITE" "$work/forwarder.log" || true; }
for how in indep twophase indep-nb twophase-nb; do
  m0=$(merges)
  out=$(PARIO_RIO_SECRET_FILE=$RIO_SECRET "$@" collw "x-rio://127.0.0.1:$fport/collw.$how" $how)
  echo "$out"
  n=$(sed -n -E 's/.* ([0-9]+) WRITE requests sent/\1/p' <<<"$out")
  [ -n "$n" ] || { echo "forward.sh: FAILED: no request count from the $how run"; exit 1; }
  sent=$((sent + n))
  "$@" collw "$work/local/collw.$how" $how > /dev/null
  cmp "$work/local/collw.$how" "$RIO_ROOT/collw.$how"
  echo "forward.sh: $how: $(stat -c %s "$RIO_ROOT/collw.$how") bytes, identical on the server and locally"
  m=$(( $(merges) - m0 ))
  [ "$m" -gt 0 ] || { echo "forward.sh: FAILED: $how: no WRITE merged by the forwarder (requests not tagged)"; exit 1; }
  echo "forward.sh: $how: $m merged WRITEs at the forwarder"
done
stop_all
served=$(grep "served .* requests" "$work/server.log" | tail -1)
merged=$(grep "forward: .* tagged requests" "$work/forwarder.log" | tail -1)
writes=$(sed -E 's/.*WRITE ([0-9]+).*/\1/' <<<"$served")
echo "forward.sh: server: $served"
echo "forward.sh: forwarder: $merged"
[ "$writes" -lt "$sent" ] || { echo "forward.sh: FAILED: $writes WRITE requests at the server for $sent sent: no merge"; exit 1; }
echo "forward.sh: the ranks sent $sent WRITE requests, the server handled $writes"
