#!/usr/bin/env bash
# A relay on the path (relay.c) between libpario and pario-server on loopback attacks the
# client's stream after the handshake: each attack must end the connection on the server (a
# MAC error logged), fail the client's write with an error, leave "victim" in place and never
# put the flipped byte into the file; "pass" (no attack) must work through the same relay.
# usage: relay.sh SERVER RELAY WORKDIR LAUNCH... CLIENT   (LAUNCH: the launcher words for 1 rank)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 relay=$2 work=$3
shift 3
rm -rf "$work" && mkdir -p "$work"
. "$here/server.sh"
rio_server_start "$server" "$work"
relay_pid=
cleanup() { [ -n "$relay_pid" ] && kill "$relay_pid" 2>/dev/null; rio_server_stop; }
trap cleanup EXIT
export PARIO_RIO_SECRET_FILE=$RIO_SECRET PARIO_RIO_TIMEOUT=5
fails=0
bad() { echo "relay: $mode: $*" >&2; fails=$((fails + 1)); }
# PARIO_RIO_TLS takes yes/no words; one it does not know fails the open with MPI_ERR_ARG
# (before it silently meant off).
mode=tls-word
out=$(PARIO_RIO_TLS=off timeout 60 "$@" "x-rio://127.0.0.1:$RIO_PORT" 2>&1) || bad "PARIO_RIO_TLS=off failed: $out"
out=$(PARIO_RIO_TLS=maybe PARIO_LOG=1 timeout 60 "$@" "x-rio://127.0.0.1:$RIO_PORT" 2>&1) && bad "PARIO_RIO_TLS=maybe worked"
echo "$out" | grep -q "MPI_ERR_ARG" || bad "PARIO_RIO_TLS=maybe: not MPI_ERR_ARG: $out"
echo "$out" | grep -q "PARIO_RIO_TLS is 'maybe'" || bad "PARIO_RIO_TLS=maybe: no message naming it: $out"
# A wrong secret: a refusal whose MPI error string (not only the log) names the secret file.
mode=wrong-secret
(umask 077 && echo "another secret, long enough" > "$work/wrong")
out=$(PARIO_RIO_SECRET_FILE=$work/wrong timeout 60 "$@" "x-rio://127.0.0.1:$RIO_PORT" 2>&1) && bad "worked"
echo "$out" | grep -q "MPI_File_open: 127.0.0.1 refused the secret in $work/wrong: use the server's secret file" ||
  bad "no message naming the secret file: $out"
for mode in pass inject drop reorder replay flip; do
  echo precious > "$RIO_ROOT/victim"
  rm -f "$RIO_ROOT/data" "$work/rport"
  before=$(grep -c "failed its MAC check\|not from the authenticated peer" "$work/server.log" || true)
  "$relay" "$RIO_PORT" "$mode" > "$work/rport" &
  relay_pid=$!
  for _ in $(seq 100); do [ -s "$work/rport" ] && break; sleep 0.05; done
  [ -s "$work/rport" ] || { echo "relay: the relay did not start" >&2; exit 1; }
  out=$(timeout 60 "$@" "x-rio://127.0.0.1:$(cat "$work/rport")" 2>&1) && rc=0 || rc=$?
  wait "$relay_pid" 2>/dev/null || true
  relay_pid=
  after=$(grep -c "failed its MAC check\|not from the authenticated peer" "$work/server.log" || true)
  [ -f "$RIO_ROOT/victim" ] || bad "victim was deleted"
  if [ "$mode" = pass ]; then
    [ "$rc" = 0 ] || bad "the write failed without an attack: $out"
    # the bytes are on the server: pario served the write (no other MPI-IO opens x-rio:// names)
    python3 - "$RIO_ROOT/data" <<'PY' || bad "the server's file does not hold the 256 KiB written"
import os, sys
p = sys.argv[1]
d = open(p, 'rb').read() if os.path.exists(p) else b''
sys.exit(len(d) != 256 << 10 or any(b != i % 251 for i, b in enumerate(d)))
PY
    continue
  fi
  [ "$rc" != 0 ] || bad "the client reported success"
  echo "$out" | grep -q MPI_ERR_IO || bad "not MPI_ERR_IO: $out"
  [ "$after" -gt "$before" ] || bad "the server logged no MAC failure"
  if [ "$mode" = flip ] && [ -f "$RIO_ROOT/data" ]; then
    python3 - "$RIO_ROOT/data" <<'PY' || bad "altered bytes reached the file"
import sys
d = open(sys.argv[1], 'rb').read()
sys.exit(any(b != i % 251 for i, b in enumerate(d)))
PY
  fi
  echo "relay: $mode: refused ($(echo "$out" | tail -1))"
done
[ "$fails" = 0 ] && echo "relay: all attacks detected" || exit 1
