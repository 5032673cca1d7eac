#!/usr/bin/env bash
# Clients and server on one timeline: mpi_rio (basic) through libpario against a pario-server,
# both traced into DIR (PARIO_TRACE for the ranks, --trace for the server), then trace-e2e.py
# checks the request ids link client and server spans, the server clock, the merged JSON's
# flow arrows and the server statistics.
# usage: trace-e2e.sh SERVER WORKDIR PYTHON NP LAUNCH...   (LAUNCH: launcher words with --pario LIB)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 work=$2 py=$3 np=$4
shift 4
rm -rf "$work" && mkdir -p "$work/trace"
RIO_SERVER_ARGS="--trace $work/trace" "$here/with-server.sh" "$server" "$work" \
  env PARIO_TRACE="$work/trace" sh -c 'exec "$@" basic "$PARIO_TEST_URL"' sh "$@"
"$py" "$here/trace-e2e.py" "$work/trace" "$np"
