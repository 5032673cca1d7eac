#!/usr/bin/env bash
# Remote files across namespace nodes (README.md here): pario-server runs in a node of its own
# (node3, 10.77.0.3, its root in the shared build tree), the ranks in node1 and node2 (PPN
# each) reach it over the nodes' network only, as x-rio://10.77.0.3:PORT/...: the rio
# program's basic (every file operation, errors) and noncontig (bytes checked) modes, then
# its gen mix written once to a local file
# and once through the server, compared byte for byte from the host. The server and the nodes
# go whatever happens (nslib.sh). Each launch is limited to 60 s (a hang fails).
# usage: remote.sh FLAVOUR PPN LIBPARIO SERVER RIOPROG WORKDIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in --help|-h) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
[ $# = 6 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
flavour=$1 ppn=$2 lib=$3 server=$4 prog=$5 work=$6
. "$here/nslib.sh"
ns_begin "$work" 3
d=$work/remote.$$
NS_CLEAN=("$d")
mkdir -p "$d/root"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$d/secret")
nsenter -t "$(cat "$NS_ST/pid.3")" -n -u -i -m "$server" --root "$d/root" --secret-file "$d/secret" \
  --listen 10.77.0.3:0 --allow-root > >(sed -u -n '1s/.*://p' > "$d/port") 2> "$d/server.log" &
for _ in $(seq 200); do [ -s "$d/port" ] && break; sleep 0.05; done
[ -s "$d/port" ] || { echo "FAIL: pario-server did not start in node3"; cat "$d/server.log"; exit 1; }
url=x-rio://10.77.0.3:$(cat "$d/port")
echo "remote.sh: pario-server in node3 at $url; ranks in node1 and node2, $ppn each ($flavour)"
export PARIO_RIO_SECRET_FILE=$d/secret PARIO_TEST_URL=$url PARIO_TEST_DIR=$d/root
status=0
step() { # step WHAT ARGS...: the rio program across node1 and node2
  local what=$1; shift
  if "$NSNODES" run "$NS_ST" "$flavour" 2 "$ppn" --pario "$lib" --timeout 60 "$prog" "$@" > "$d/out" 2>&1; then
    echo "ok: $what"
  else
    echo "FAIL: $what (exit $?):"; grep -v -e '^\s*$' "$d/out" | head -20 | cut -c1-300 | sed 's/^/    /'
    status=1
  fi
}
step "basic: every file operation on $url" basic "$url"
step "noncontig: 32 B regions written and read back" noncontig "$url"
step "gen to a local file" gen "$d/local"
step "gen through the server" gen "$url/remote"
if [ $status = 0 ]; then
  if cmp "$d/local" "$d/root/remote"; then
    echo "PASS: remote files across nodes ($flavour, 2 x $ppn): $(stat -c %s "$d/local") bytes through node3's server identical to the local run"
  else
    status=1
  fi
fi
exit $status
