#!/usr/bin/env bash
# x-rio:// files through TLS: a pario-server with a self-signed certificate for 127.0.0.1 (made
# here with the openssl command); the ranks verify it against that certificate
# (PARIO_RIO_TLS_CA) and the rio program's basic and noncontig modes and a byte comparison run
# through TLS. A client without TLS, and a TLS client trusting another certificate, must fail.
# usage: tls-client.sh SERVER WORKDIR LAUNCHER...   (LAUNCHER: the MPI launch of the rio program)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 work=$2; shift 2
rm -rf "$work"
mkdir -p "$work"
for c in good other; do
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/$c.key" -out "$work/$c.pem" -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
done
. "$here/server.sh"
RIO_SERVER_ARGS="--tls-cert $work/good.pem --tls-key $work/good.key" rio_server_start "$server" "$work"
trap rio_server_stop EXIT
url=x-rio://127.0.0.1:$RIO_PORT
export PARIO_RIO_SECRET_FILE=$RIO_SECRET PARIO_TEST_DIR=$RIO_ROOT PARIO_RIO_TIMEOUT=10
PARIO_RIO_TLS=true PARIO_RIO_TLS_CA=$work/good.pem "$@" basic "$url"
PARIO_RIO_TLS=true PARIO_RIO_TLS_CA=$work/good.pem "$@" noncontig "$url"
PARIO_RIO_TLS=true PARIO_RIO_TLS_CA=$work/good.pem "$@" gen "$url/tls"
"$@" gen "$work/local"
cmp "$work/local" "$RIO_ROOT/tls"
echo "tls-client.sh: TLS file identical to the local one"
if "$@" gen "$url/plain" >"$work/plain.out" 2>&1; then
  echo "tls-client.sh: FAILED: a client without TLS was served"; exit 1
fi
grep -q "open .*x-rio" "$work/plain.out" || { cat "$work/plain.out"; echo "tls-client.sh: FAILED: no open error"; exit 1; }
if PARIO_RIO_TLS=true PARIO_RIO_TLS_CA=$work/other.pem "$@" gen "$url/other" >"$work/other.out" 2>&1; then
  echo "tls-client.sh: FAILED: a certificate the client does not trust was accepted"; exit 1
fi
grep -q "the TLS certificate of 127.0.0.1 was refused (.*): check pario_rio_tls_ca" "$work/other.out" ||
  { cat "$work/other.out"; echo "tls-client.sh: FAILED: no message on the refused certificate"; exit 1; }
echo "tls-client.sh: refused without TLS and with an untrusted certificate"
