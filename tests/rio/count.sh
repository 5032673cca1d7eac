#!/usr/bin/env bash
# Requests counted at the server: the rio program's hpio mode (each rank writes 4096 pieces of
# 32 B through a noncontiguous view, 64 KiB windows) against a fresh pario-server; after the
# server stops, its log's count of WRITE requests must be 2 per rank (one per window), not one
# per piece, and the file the server holds must have every rank's pieces where the view puts
# them and zeros in the gaps.  usage: count.sh SERVER WORKDIR NP LAUNCHER...   (LAUNCHER ends
# with the program)
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
# rio.c's hpio: rank r's piece k (32 B of 'a' + r) at r * 64 + k * np * 64, zeros between
python3 - "$np" "$RIO_ROOT"/hpio.* <<'PY'
import sys
np, paths = int(sys.argv[1]), sys.argv[2:]
assert len(paths) == 1, f"count.sh: FAILED: want one file the server wrote, found {paths}"
data = open(paths[0], "rb").read()
want = bytearray(((4096 - 1) * np + np - 1) * 64 + 32)
for r in range(np):
    for k in range(4096):
        off = r * 64 + k * np * 64
        want[off:off + 32] = bytes([ord("a") + r]) * 32
bad = sum(a != b for a, b in zip(data, want)) + abs(len(data) - len(want))
assert bad == 0, f"count.sh: FAILED: {bad} byte(s) of {paths[0]} differ from the pieces the ranks wrote"
print(f"count.sh: {len(data)} bytes read back from the server's file, as the view puts them")
PY
