#!/usr/bin/env bash
# external32 on an x-rio:// file (a remote file takes every representation a local one takes):
# tests/datarep's ext32 program writes every access path through pario to the server, the
# files in the server's root are checked against the standard's bytes, then pario reads them
# back. Runs inside with-server.sh (PARIO_TEST_URL, PARIO_TEST_DIR).
# usage: ext32.sh NP EXE LAUNCH...   (LAUNCH: the launcher words, with --pario LIB)
set -euo pipefail
np=$1 exe=$2
shift 2
"$@" "$exe" write "$PARIO_TEST_URL"
"$exe" check "$PARIO_TEST_DIR" "$np"
"$@" "$exe" read "$PARIO_TEST_URL"
