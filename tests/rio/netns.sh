#!/usr/bin/env bash
# Server and clients on different hosts, as far as the network goes: two network namespaces
# made here (one for pario-server, one for the MPI ranks) joined by a veth pair with
# link-local addresses that exist only inside them; the ranks reach the server over that
# link only. Runs the rio program's basic, noncontig and lazy modes and a byte comparison.
# Everything made is removed on exit; exits 77 (skipped) where namespaces cannot be made.
# usage: netns.sh SERVER WORKDIR LAUNCHER...   (LAUNCHER: the MPI launch of the rio program)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1 work=$2; shift 2
srv=pario-srv-$$ cli=pario-cli-$$ saddr=169.254.213.1 caddr=169.254.213.2
cleanup() {
  set +e
  [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
  ip netns del "$srv" 2>/dev/null
  ip netns del "$cli" 2>/dev/null
}
trap cleanup EXIT
if ! ip netns add "$srv" 2>"$work.err"; then
  echo "SKIP: cannot create network namespaces here ($(cat "$work.err")); needs root or CAP_SYS_ADMIN"
  rm -f "$work.err"
  exit 77
fi
rm -f "$work.err"
ip netns add "$cli"
ip link add "v$$s" netns "$srv" type veth peer name "v$$c" netns "$cli"
ip -n "$srv" addr add "$saddr/30" dev "v$$s"
ip -n "$cli" addr add "$caddr/30" dev "v$$c"
for ns in "$srv" "$cli"; do
  ip -n "$ns" link set lo up
done
ip -n "$srv" link set "v$$s" up
ip -n "$cli" link set "v$$c" up
rm -rf "$work"
mkdir -p "$work/root"
secret=$work/secret
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$secret")
ip netns exec "$srv" "$server" --root "$work/root" --secret-file "$secret" --listen "$saddr:0" --allow-root \
  > >(sed -u -n '1s/.*://p' > "$work/port") 2>"$work/server.log" &
spid=$!
for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || { echo "netns.sh: the server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
url=x-rio://$saddr:$(cat "$work/port")
echo "netns.sh: server in $srv at $url, ranks in $cli"
# The ranks' namespace has no route to 127.0.0.1 of the server's: only the veth link.
export PARIO_RIO_SECRET_FILE=$secret PARIO_TEST_URL=$url PARIO_TEST_DIR=$work/root
inside() { ip netns exec "$cli" "$@"; }
inside "$@" basic "$url"
inside "$@" noncontig "$url"
inside "$@" lazy "$url"
inside "$@" gen "$work/local"
inside "$@" gen "$url/remote"
cmp "$work/local" "$work/root/remote"
echo "netns.sh: $(stat -c %s "$work/local") bytes written across namespaces, identical to the local run"
