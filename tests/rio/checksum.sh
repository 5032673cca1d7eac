#!/usr/bin/env bash
# CHECKSUM end to end (run by with-server.sh, the server at --max-request 1M): files written
# through libpario to the server; the server's sum (pario-checksum on x-rio://) must equal the
# local copy's (pario-checksum on the root's file) and an independent one (Python's zlib for
# Adler-32, a bitwise CRC32C below), for a file of several request pieces, ranges and an empty
# file; the same through a forwarder whose max_request (64M) is larger than the server's; a
# missing file fails with MPI_ERR_NO_SUCH_FILE naming it.
# usage: checksum.sh PARIO-CHECKSUM SUM-HELPER PARIO-SERVER
set -euo pipefail
tool=$1 helper=$2 server=$3
work=$(mktemp -d)
FWD_PID=
cleanup() {
  if [ -n "$FWD_PID" ]; then kill "$FWD_PID" 2>/dev/null || true; wait "$FWD_PID" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "checksum: FAIL: $*" >&2; exit 1; }
ref() { # ref ALGO FILE OFFSET LEN: the reference value and bytes, as the helper prints them
  python3 - "$@" <<'PY'
import sys, zlib
algo, path, off, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d = open(path, "rb").read()[off:]
d = d[:n] if n else d
def crc32c(b):
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    c = 0xFFFFFFFF
    for x in b:
        c = (c >> 8) ^ t[(c ^ x) & 0xFF]
    return c ^ 0xFFFFFFFF
print("%08x %d" % (zlib.adler32(d) if algo == "adler32" else crc32c(d), len(d)))
PY
}
t0=$(date +%s)
# 2.5 MiB + 7 bytes: three pieces at --max-request 1M, the last one short
head -c $((5 * 524288 + 7)) /dev/urandom > "$work/big"
: > "$work/empty"
printf 'Wikipedia' > "$work/wiki"
for f in big empty wiki; do
  timeout 60 "$helper" put "$work/$f" "$PARIO_TEST_URL/$f" || fail "writing $f through libpario"
  cmp "$work/$f" "$PARIO_TEST_DIR/$f" || fail "$f differs on the server"
done
for algo in adler32 crc32c; do
  for f in big empty wiki; do
    remote=$(timeout 60 "$tool" --algo "$algo" "$PARIO_TEST_URL/$f") || fail "$algo of x-rio $f"
    loc=$(timeout 60 "$tool" --algo "$algo" "$PARIO_TEST_DIR/$f") || fail "$algo of local $f"
    want=$(ref "$algo" "$work/$f" 0 0)
    [ "$remote" = "${want% *}  $PARIO_TEST_URL/$f" ] || fail "$algo $f: server says '$remote', want ${want% *}"
    [ "$loc" = "${want% *}  $PARIO_TEST_DIR/$f" ] || fail "$algo $f: local says '$loc', want ${want% *}"
  done
  # ranges: inside one piece, across pieces, past the end, from the end, to the end
  for r in "3 100" "1000000 100000" "2000000 2000000" "2621447 5" "1048576 0" "5 0"; do
    set -- $r
    for where in "$PARIO_TEST_URL/big" "$PARIO_TEST_DIR/big"; do
      got=$(timeout 60 "$helper" sum "$algo" "$where" "$1" "$2") || fail "$algo range $r of $where: $got"
      want=$(ref "$algo" "$work/big" "$1" "$2")
      [ "$got" = "$want" ] || fail "$algo range $r of $where: '$got', want '$want'"
    done
  done
done
[ "$(ref crc32c "$work/wiki" 0 0)" = "2d0e3663 9" ] && [ "$(ref adler32 "$work/wiki" 0 0)" = "11e60398 9" ] ||
  fail "the reference sums are wrong"
# through a forwarder told 64M while the server sums 1M per request: the client must not take a
# short piece for the end of the file
"$server" --forward-to "127.0.0.1:${PARIO_TEST_URL##*:}" --listen 127.0.0.1:0 --secret-file "$PARIO_RIO_SECRET_FILE" \
  --allow-root > >(sed -u -n '1s/.*://p' > "$work/fport") 2>>"$work/forwarder.log" &
FWD_PID=$!
for _ in $(seq 200); do [ -s "$work/fport" ] && break; sleep 0.05; done
[ -s "$work/fport" ] || fail "the forwarder wrote no port"
for algo in adler32 crc32c; do
  got=$(timeout 60 "$tool" --algo "$algo" "x-rio://127.0.0.1:$(cat "$work/fport")/big") || fail "$algo through the forwarder"
  want=$(ref "$algo" "$work/big" 0 0)
  [ "${got%% *}" = "${want% *}" ] || fail "$algo through the forwarder: '$got', want ${want% *}"
done
# a missing file: exit 1, one line naming the file, MPI_ERR_NO_SUCH_FILE
if err=$(timeout 60 "$tool" "$PARIO_TEST_URL/missing" 2>&1); then fail "a missing file succeeded: $err"; fi
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [[ $err == *"$PARIO_TEST_URL/missing"* ]] &&
  [[ $err == *MPI_ERR_NO_SUCH_FILE* ]] || fail "missing file: '$err'"
# an unknown algorithm in the library call: MPI_ERR_ARG
got=$(timeout 60 "$helper" sum md5 "$PARIO_TEST_URL/wiki" 0 0 || true)
[[ $got == "error ARG"*md5* ]] || fail "unknown algorithm: '$got'"
echo "checksum: ok ($(( $(date +%s) - t0 )) s)"
