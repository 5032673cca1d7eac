#!/usr/bin/env bash
# Under with-server.sh: the same program run on a local file and on a file of the server
# must leave byte-identical files. usage: compare.sh LAUNCHER...  ("gen NAME" is appended)
set -euo pipefail
name=compare.$$
local=$PARIO_TEST_DIR/../$name.local
rm -f "$local" "$PARIO_TEST_DIR/$name"
"$@" gen "$local"
"$@" gen "$PARIO_TEST_URL/$name"
cmp "$local" "$PARIO_TEST_DIR/$name"
echo "compare.sh: $(stat -c %s "$local") bytes, identical on the server and locally"
rm -f "$local" "$PARIO_TEST_DIR/$name"
