#!/usr/bin/env bash
# pario-server's command line: cli.sh PARIO_SERVER. --help and --version succeed; every bad
# option is one line on stderr with exit status 2; an unusable root or secret exits 1.
set -euo pipefail
server=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/pario-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "cli: FAILED: $*"; exit 1; }
"$server" --help | grep -q "^usage: pario-server --root DIR --listen HOST:PORT --secret-file F" || fail "--help"
"$server" --version | grep -Eq "^pario-server [0-9.]+ \(remote I/O protocol 1\)$" || fail "--version"
head -c 40 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
printf short >"$work/short"
mkdir "$work/root"
ok=(--root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/secret")
# expect STATUS ARGS...: exit status and exactly one line on stderr
expect() {
  local want=$1
  shift
  local st=0
  "$server" "$@" >/dev/null 2>"$work/err" </dev/null || st=$?
  [ "$st" = "$want" ] || fail "$* -> status $st, expected $want ($(cat "$work/err"))"
  [ "$(wc -l <"$work/err")" = 1 ] || fail "$* -> not one line: $(cat "$work/err")"
}
expect 2 --bogus
expect 2 "${ok[@]}" --threads 0
expect 2 "${ok[@]}" --threads many
expect 2 "${ok[@]}" --max-request 10
expect 2 "${ok[@]}" --max-request 2G
expect 2 "${ok[@]}" --idle-timeout -1
expect 2 "${ok[@]}" --log-level loud
expect 2 "${ok[@]}" --emulate net_latency=fast
expect 2 "${ok[@]}" --emulate color=blue
expect 2 "${ok[@]}" --tls-cert "$work/secret"
expect 2 "${ok[@]}" extra
expect 2 --listen 127.0.0.1:0 --secret-file "$work/secret"
expect 2 --root "$work/root" --secret-file "$work/secret"
expect 2 --root "$work/root" --listen 127.0.0.1:0
expect 2 --root "$work/root" --listen nocolon --secret-file "$work/secret"
expect 2 --root "$work/root" --listen 127.0.0.1:99999 --secret-file "$work/secret"
expect 2 "${ok[@]}" --forward-to 127.0.0.1:1
expect 1 --root "$work/none" --listen 127.0.0.1:0 --secret-file "$work/secret"
expect 1 --root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/short"
expect 1 --root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/missing"
expect 1 --forward-to 127.0.0.1:1 --listen 127.0.0.1:0 --secret-file "$work/secret"
echo "cli: passed"
