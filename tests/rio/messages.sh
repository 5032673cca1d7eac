#!/usr/bin/env bash
# The one-line messages of issue 31, item 7, in the MPI error string of MPI_File_open (not only
# at PARIO_LOG=1), each saying what to do: a secret too short (its length and the minimum), a
# plain client at a TLS server, a TLS client at a plain server, a server refusing for load (its
# busy ERROR frame, on a plain and on a TLS client), a wrong secret.
# usage: messages.sh SERVER WORKDIR LAUNCHER...   (LAUNCHER: one rank of rio_relay_client)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 work=$2; shift 2
rm -rf "$work"
mkdir -p "$work"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/cert.key" -out "$work/cert.pem" -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
. "$here/server.sh"
HOLD_PID=
stop_all() {
  if [ -n "$HOLD_PID" ]; then kill "$HOLD_PID" 2>/dev/null || true; wait "$HOLD_PID" 2>/dev/null || true; HOLD_PID=; fi
  rio_server_stop
}
trap stop_all EXIT
export PARIO_RIO_TIMEOUT=10
fails=0
# expect WHAT PATTERN ENV...: the client must fail, and its MPI error string match PATTERN.
expect() {
  local what=$1 pattern=$2 out
  shift 2
  if out=$(env "$@" PARIO_RIO_SECRET_FILE="${SECRET:-$RIO_SECRET}" timeout 60 "${launcher[@]}" "$url" 2>&1); then
    echo "messages.sh: FAILED: $what: the open worked"; fails=$((fails + 1)); return
  fi
  local line
  line=$(grep -m1 "^open failed: .*MPI_File_open: " <<<"$out" || true)
  if [ -z "$line" ] || ! grep -qE -- "$pattern" <<<"$line"; then
    echo "messages.sh: FAILED: $what: no '$pattern' in the MPI error string:"; echo "$out"; fails=$((fails + 1)); return
  fi
  echo "messages.sh: $what: ${line#*MPI_File_open: }"
}
launcher=("$@")

# A plain server.
rio_server_start "$server" "$work/plain"
url=x-rio://127.0.0.1:$RIO_PORT
(umask 077 && printf 'short\n' > "$work/short" && echo "another secret, long enough" > "$work/wrong")
SECRET=$work/short expect "short secret" "$work/short: the secret in the secret file is 5 bytes, shorter than 16 bytes .*: make it 16 to 4096 bytes"
SECRET=$work/wrong expect "wrong secret" "refused the secret in $work/wrong: use the server's secret file \(pario_rio_secret_file\)"
expect "TLS client, plain server" "closed the connection at the TLS handshake, not TLS: unset pario_rio_tls" PARIO_RIO_TLS=true PARIO_RIO_TLS_CA="$work/cert.pem"
rio_server_stop

# A plain and a TLS server that take one connection, held by a silent one: busy.
for kind in plain tls; do
  args="--max-conns 1 --auth-timeout 60"
  envs=()
  if [ $kind = tls ]; then
    args="$args --tls-cert $work/cert.pem --tls-key $work/cert.key"
    envs=(PARIO_RIO_TLS=true PARIO_RIO_TLS_CA="$work/cert.pem")
  fi
  RIO_SERVER_ARGS=$args rio_server_start "$server" "$work/busy-$kind"
  url=x-rio://127.0.0.1:$RIO_PORT
  if [ $kind = tls ]; then
    expect "plain client, TLS server" "set pario_rio_tls=true"
  fi
  exec 3<>"/dev/tcp/127.0.0.1/$RIO_PORT" # the one connection, silent
  sleep 1 # accepted and counted before the client comes
  expect "busy server, $kind client" "refused the connection for load \(server busy\): try again later or raise its --max-conns" "${envs[@]}"
  exec 3<&-
  rio_server_stop
done
[ $fails = 0 ] || { echo "messages.sh: $fails FAILED"; exit 1; }
echo "messages.sh: every message in the MPI error string"
