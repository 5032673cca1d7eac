#!/usr/bin/env bash
# Requests counted at the server: the rio program's hpio mode (each rank writes 4096 pieces of
# 32 B through a noncontiguous view, 64 KiB windows) against a fresh pario-server; after the
# server stops, its log's count of WRITE requests must be 2 per rank (one per window), not one
# per piece.  usage: count.sh SERVER WORKDIR NP LAUNCHER...   (LAUNCHER ends with the program)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 work=$2 np=$3; shift 3
rm -rf "$work"
mkdir -p "$work"
. "$here/server.sh"
rio_server_start "$server" "$work"
trap rio_server_stop EXIT
PARIO_RIO_SECRET_FILE=$RIO_SECRET "$@" hpio "x-rio://127.0.0.1:$RIO_PORT"
rio_server_stop
line=$(grep "served .* requests" "$work/server.log" | tail -1)
writes=$(sed -E 's/.*WRITE ([0-9]+).*/\1/' <<<"$line")
echo "count.sh: server: $line"
[ "$writes" = $((2 * np)) ] || { echo "count.sh: FAILED: $writes WRITE requests at the server, want $((2 * np))"; exit 1; }
echo "count.sh: $writes WRITE requests for $np x 4096 pieces: one per window"
