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
ok=(--root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/secret" --allow-root)
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
expect 1 --root "$work/none" --listen 127.0.0.1:0 --secret-file "$work/secret" --allow-root
expect 1 --root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/short" --allow-root
expect 1 --root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/missing" --allow-root
expect 1 --forward-to 127.0.0.1:1 --listen 127.0.0.1:0 --secret-file "$work/secret" --allow-root
expect 2 "${ok[@]}" --forward-user alice                                  # only with --forward-to
expect 2 "${ok[@]}" --forward-tls-ca "$work/secret"
expect 2 --forward-to 127.0.0.1:1 --listen 127.0.0.1:0 --secret-file "$work/secret" --forward-user ""
expect 1 --forward-to 127.0.0.1:1 --listen 127.0.0.1:0 --secret-file "$work/secret" --allow-root \
  --forward-secret-file "$work/short"
grep -q "short: the secret in the secret file is .* bytes, shorter than 16 bytes" "$work/err" ||
  fail "--forward-secret-file with a short secret: $(cat "$work/err")"
expect 2 "${ok[@]}" --auth-timeout 0
expect 2 "${ok[@]}" --auth-timeout 61
expect 2 "${ok[@]}" --max-unauth-per-peer 0
expect 2 "${ok[@]}" --user no-such-user-pario
# --credentials (issue 31 item 4): each refusal one line, exit 1; the line names the cause.
refused() { # refused PATTERN: --credentials $work/creds alone exits 1 with a line matching PATTERN
  expect 1 --root "$work/root" --listen 127.0.0.1:0 --allow-root --credentials "$work/creds"
  grep -q "$1" "$work/err" || fail "credentials, want '$1': $(cat "$work/err")"
}
head -c 40 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/c1.secret"
chmod 600 "$work/c1.secret" "$work/short"
printf 'alice rw %s\n' "$work/c1.secret" >"$work/creds" && chmod 644 "$work/creds"
refused "creds: mode 0644 lets group or others read or write it"
chmod 600 "$work/creds" && chmod 640 "$work/c1.secret"
refused "c1.secret: mode 0640"
chmod 600 "$work/c1.secret"
printf '# ok\nalice rw %s\nbob rx %s\n' "$work/c1.secret" "$work/c1.secret" >"$work/creds"
refused "creds line 3: rights must be rw or ro"
printf 'al/ice rw %s\n' "$work/c1.secret" >"$work/creds"
refused "creds line 1: bad name"
printf 'alice rw\n' >"$work/creds"
refused "creds line 1: expected NAME RIGHTS SECRETFILE"
printf 'alice rw %s\nalice ro %s\n' "$work/c1.secret" "$work/c1.secret" >"$work/creds"
refused "creds line 2: duplicate credential name alice"
printf 'alice rw %s\n' "$work/short" >"$work/creds"
refused "creds line 1: .*shorter than 16 bytes"
printf 'alice rw %s ../up\n' "$work/c1.secret" >"$work/creds"
refused "creds line 1: subdirectory ../up"
printf 'alice rw %s nodir\n' "$work/c1.secret" >"$work/creds"
refused "creds line 1: subdirectory nodir"
# A good file alone (no --secret-file) serves.
printf 'alice ro %s\n' "$work/c1.secret" >"$work/creds"
timeout -s TERM 2 "$server" --root "$work/root" --listen 127.0.0.1:0 --allow-root --credentials "$work/creds" \
  >"$work/out" 2>"$work/err" </dev/null || true
grep -q "^127.0.0.1:[0-9]" "$work/out" || fail "a good credentials file: $(cat "$work/err")"
# As root: neither --user nor --allow-root is refused, saying what to give; --user root too.
# As another user: --user naming someone else is refused (only root switches users).
if [ "$(id -u)" = 0 ]; then
  expect 2 --root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/secret"
  grep -q "refusing to run as root: give --user NAME .* or --allow-root" "$work/err" || fail "root refusal: $(cat "$work/err")"
  expect 2 --root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/secret" --user root
  if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    chmod 755 "$work" && chmod 644 "$work/secret"
    st=0
    setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$server" --root "$work/root" --listen 127.0.0.1:0 \
      --secret-file "$work/secret" --user root >/dev/null 2>"$work/err" </dev/null || st=$?
    [ "$st" = 2 ] && grep -q "only root can switch users" "$work/err" || fail "non-root --user root: $st $(cat "$work/err")"
  fi
fi
echo "cli: passed"
