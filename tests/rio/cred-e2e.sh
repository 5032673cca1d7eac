#!/usr/bin/env bash
# A read-only credential end to end (issue 31 item 4): pario-server with --credentials naming
# "reader" (ro, its own secret), the MPI program run with PARIO_RIO_USER=reader and that
# secret: it reads, and opening for writing or deleting fails with MPI_ERR_ACCESS.
# usage: cred-e2e.sh SERVER WORKDIR RUN NP PARIO_ARGS... MPI_RIO
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 work=$2; shift 2
rm -rf "$work" && mkdir -p "$work"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/reader.secret")
(umask 077 && printf 'reader ro %s\n' "$work/reader.secret" >"$work/creds")
export RIO_SERVER_ARGS="--credentials $work/creds"
exec "$here/with-server.sh" "$server" "$work" sh -c \
  'PARIO_RIO_USER=reader PARIO_RIO_SECRET_FILE=$0 exec "$@" readonly "$PARIO_TEST_URL" "$PARIO_TEST_DIR"' \
  "$work/reader.secret" "$@"
