#!/usr/bin/env bash
# pario-server with TLS: tls.sh PARIO_SERVER TEST_RIO_BASIC RIO_LOAD TEST_RIO_PRIV. Makes a
# self-signed certificate for 127.0.0.1 with the openssl command, runs rio_basic's checks through
# TLS (the client verifies the certificate and the host), checks that a client speaking plain TCP
# to the TLS server is refused and the refusal logged, and that a flood of silent connections
# (no TLS handshake) does not lock a TLS client out. Loopback only.
set -euo pipefail
server=$1 basic=$2 load=$3 priv=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/pario-tls.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
PARIO_RIO_TEST_TLS_CA=$work/cert.pem "$basic" "$server" --tls-cert "$work/cert.pem" --tls-key "$work/key.pem"
echo "tls: rio_basic through TLS passed"
PARIO_RIO_TEST_TLS_CA=$work/cert.pem "$priv" "$server" --flood --tls-cert "$work/cert.pem" --tls-key "$work/key.pem"
echo "tls: a flood of silent connections did not lock a TLS client out"

head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
mkdir "$work/root"
"$server" --root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/secret" --allow-root --tls-cert "$work/cert.pem" \
  --tls-key "$work/key.pem" >"$work/out" 2>"$work/log" &
pid=$!
for _ in $(seq 200); do grep -q ':[0-9]*$' "$work/out" 2>/dev/null && break; sleep 0.05; done
addr=$(head -1 "$work/out")
if "$load" "$addr" "$work/secret" --clients 1 --steps 1 --piece 10 >/dev/null 2>&1; then
  echo "tls: FAILED: a plain-TCP client was served by the TLS server"
  exit 1
fi
PARIO_RIO_TEST_TLS_CA=$work/cert.pem "$load" "$addr" "$work/secret" --clients 2 --steps 3 --piece 1000
kill -TERM $pid
wait $pid
grep -q "TLS handshake failed" "$work/log" || { cat "$work/log"; echo "tls: FAILED: refusal not logged"; exit 1; }
# a wrong certificate or key is a one-line error
if "$server" --root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/secret" --allow-root --tls-cert "$work/secret" \
  --tls-key "$work/key.pem" >/dev/null 2>"$work/err"; then
  echo "tls: FAILED: a bad certificate was accepted"
  exit 1
fi
[ "$(wc -l <"$work/err")" = 1 ] || { cat "$work/err"; echo "tls: FAILED: not a one-line error"; exit 1; }
echo "tls: passed"
