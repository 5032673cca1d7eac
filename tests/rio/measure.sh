#!/usr/bin/env bash
# Measurements of pario-server on loopback (numbers in server/README.md), each bounded:
#   measure.sh PARIO_SERVER RIO_LOAD forward   requests/s at the server and client MB/s, with and
#                                             without a forwarder merging collective requests
#   measure.sh PARIO_SERVER RIO_LOAD slowlink  the same over an emulated slow link
#   measure.sh PARIO_SERVER RIO_LOAD tls       throughput with and without TLS
#   measure.sh PARIO_SERVER RIO_LOAD integrity plain TCP (version 1), records with a MAC (version 2)
#                                             and TLS: 1 MiB WRITE and READ MB/s, 4 KiB READ
#                                             requests/s; ROUNDS rounds (5) alternating, medians
#   measure.sh PARIO_SERVER RIO_LOAD smoke     a few steps of each path (ctest rio_measure_smoke)
# Extra rio-load options come from LOAD_ARGS; the emulated link from EMULATE.
set -euo pipefail
server=$1 load=$2 what=${3:-forward}
work=$(mktemp -d "${TMPDIR:-/tmp}/pario-measure.XXXXXX")
trap 'for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
mkdir -p "$work/root"

# start NAME ARGS...: a server (or forwarder) in the background; its HOST:PORT in $addr.
start() {
  local name=$1
  shift
  rm -f "$work/$name.out" # a previous run's address must not be read
  "$server" --listen 127.0.0.1:0 --secret-file "$work/secret" --allow-root "$@" >"$work/$name.out" 2>"$work/$name.log" &
  echo $! >"$work/$name.pid"
  for _ in $(seq 200); do
    grep -q ':[0-9]*$' "$work/$name.out" 2>/dev/null && break
    sleep 0.05
  done
  addr=$(head -1 "$work/$name.out")
  [ -n "$addr" ] || { cat "$work/$name.log"; echo "measure: $name did not start"; exit 1; }
}
stop() {
  local pid
  pid=$(cat "$work/$1.pid")
  kill -TERM "$pid"
  wait "$pid" || true
}
tls_cert() {
  [ -f "$work/cert.pem" ] && return
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
}
served() { grep -o 'served [0-9]* requests ([^)]*)' "$work/server.log" | tail -1; }

# run LABEL FORWARD(0|1) SERVER_ARGS... -- LOAD_ARGS...
run() {
  local label=$1 fwd=$2
  shift 2
  local sargs=() largs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  largs=("$@")
  [ "${KEEP_FILE:-0}" = 1 ] || [[ " $* " == *" --op read "* ]] || rm -f "$work/root/load.dat"
  start server --root "$work/root" "${sargs[@]}"
  local target=$addr t0 t1
  if [ "$fwd" = 1 ]; then start forwarder --forward-to "$target"; target=$addr; fi
  t0=$(date +%s.%N)
  local out
  out=$("$load" "$target" "$work/secret" "${largs[@]}")
  t1=$(date +%s.%N)
  [ "$fwd" = 1 ] && stop forwarder
  stop server
  local s n
  s=$(served)
  n=$(sed -E 's/served ([0-9]+) requests.*/\1/' <<<"$s")
  printf '%-34s %s\n%-34s server: %s = %.0f requests/s at the server\n' "$label" "$out" "" "$s" \
    "$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { print n / (b - a) }')"
}

case $what in
  forward)
    args=(--clients 8 --steps 400 --piece 4096 --max-seconds 20 ${LOAD_ARGS:-})
    run "direct, 8 clients, 4 KiB" 0 -- "${args[@]}"
    run "via forwarder, 8 clients, 4 KiB" 1 -- "${args[@]}"
    ;;
  slowlink)
    emu=${EMULATE:-net_latency=20ms,net_bw=20MB/s}
    args=(--clients 8 --steps 20 --piece 262144 --max-seconds 30 ${LOAD_ARGS:-})
    run "direct, $emu" 0 --emulate "$emu" -- "${args[@]}"
    run "via forwarder, $emu" 1 --emulate "$emu" -- "${args[@]}"
    ;;
  tls)
    tls_cert
    tls=(--tls-cert "$work/cert.pem" --tls-key "$work/key.pem")
    for op in write read; do
      args=(--clients 4 --steps 64 --piece 1048576 --coll 0 --op $op --max-seconds 20 ${LOAD_ARGS:-})
      run "plain TCP, 4 clients, 1 MiB $op" 0 -- "${args[@]}"
      PARIO_RIO_TEST_TLS_CA=$work/cert.pem run "TLS, 4 clients, 1 MiB $op" 0 "${tls[@]}" -- "${args[@]}"
    done
    ;;
  integrity)
    # One rio-load run per (round, measurement, transport), the transports alternating inside
    # each round; a fresh server each run, the file written by the round's WRITEs read back
    # from the page cache. rio-load names the transport its connections used: a run that did
    # not get the one asked for fails the measurement.
    tls_cert
    tls=(--tls-cert "$work/cert.pem" --tls-key "$work/key.pem")
    res=$work/results
    : >"$res"
    rounds=${ROUNDS:-5}
    for r in $(seq "$rounds"); do
      for m in "write 1048576 4 64 MB/s" "read 1048576 4 64 MB/s" "read 4096 8 400 requests/s"; do
        read -r op piece clients steps unit <<<"$m"
        for t in plain mac tls; do
          sargs=()
          [ "$t" = tls ] && sargs=("${tls[@]}")
          out=$(
            [ "$t" = mac ] && export PARIO_RIO_TEST_MAC=1
            [ "$t" = tls ] && export PARIO_RIO_TEST_TLS_CA=$work/cert.pem
            run x 0 "${sargs[@]}" -- --clients "$clients" --steps "$steps" --piece "$piece" --coll 0 --op "$op" \
              --max-seconds 20 ${LOAD_ARGS:-}
          )
          grep -q " transport $t:" <<<"$out" || { echo "$out"; echo "measure: run did not use $t"; exit 1; }
          ! grep -q ERRORS <<<"$out" || { echo "$out"; echo "measure: rio-load reported errors"; exit 1; }
          v=$(grep -o "[0-9.]* $unit" <<<"$out" | head -1 | cut -d' ' -f1)
          printf 'round %d %-5s %-5s %7s %-10s %s\n' "$r" "$t" "$op" "$piece" "$unit" "$v"
          echo "$op-$piece $t $v" >>"$res"
        done
      done
    done
    echo
    echo "medians of $rounds (min-max); loopback, file in the page cache"
    printf '%-22s %-26s %-26s %-26s\n' measurement plain "mac (v2 records)" tls
    for k in write-1048576 read-1048576 read-4096; do
      line=$(printf '%-22s' "$k")
      for t in plain mac tls; do
        line+=$(awk -v k="$k" -v t="$t" '$1 == k && $2 == t { print $3 }' "$res" | sort -g |
          awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                 printf " %-26s", sprintf("%.0f (%.0f-%.0f)", m, v[1], v[NR]) }')
      done
      echo "$line"
    done
    ;;
  smoke)
    out=$(PARIO_RIO_TEST_MAC=1 run "smoke direct, MAC records" 0 -- --clients 2 --steps 5 --piece 100000 \
      --max-seconds 10)
    echo "$out"
    grep -q " transport mac:" <<<"$out" || { echo "measure: the MAC run did not use records"; exit 1; }
    run "smoke direct" 0 -- --clients 2 --steps 5 --piece 1000 --max-seconds 10
    run "smoke forwarder" 1 -- --clients 2 --steps 5 --piece 1000 --max-seconds 10
    run "smoke slow link" 0 --emulate net_latency=1ms,net_bw=50MB/s -- --clients 2 --steps 3 --piece 100000
    ;;
  *) echo "measure: unknown measurement $what"; exit 2 ;;
esac
