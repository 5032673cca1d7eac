#!/usr/bin/env bash
# Run a command beside a pario-server started for it: a fresh root directory and secret in
# WORKDIR, the server on a free port of 127.0.0.1. The command sees PARIO_TEST_URL
# (x-rio://127.0.0.1:PORT), PARIO_TEST_DIR (the server's root) and PARIO_RIO_SECRET_FILE;
# the server is stopped afterwards, whatever happens.
# usage: with-server.sh SERVER WORKDIR COMMAND...   (SERVER: the pario-server binary)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 work=$2; shift 2
. "$here/server.sh"
rio_server_start "$server" "$work"
trap rio_server_stop EXIT
export PARIO_TEST_URL=x-rio://127.0.0.1:$RIO_PORT PARIO_TEST_DIR=$RIO_ROOT PARIO_RIO_SECRET_FILE=$RIO_SECRET
"$@"
