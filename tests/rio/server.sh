# Sourced by the rio test scripts: start and stop a pario-server for a test.
# rio_server_start SERVER WORKDIR [PORT] sets RIO_PORT, RIO_ROOT, RIO_SECRET, RIO_PID.

rio_server_start() {
  local server=$1 work=$2 port=${3:-0}
  RIO_ROOT=$work/root RIO_SECRET=$work/secret
  mkdir -p "$RIO_ROOT"
  if [ ! -s "$RIO_SECRET" ]; then
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$RIO_SECRET")
  fi
  rm -f "$work/port"
  # pario-server prints HOST:PORT as its first line once it accepts connections
  "$server" --root "$RIO_ROOT" --secret-file "$RIO_SECRET" --listen "127.0.0.1:$port" --allow-root \
    ${RIO_SERVER_ARGS:-} > >(sed -u -n '1s/.*://p' > "$work/port") 2>>"$work/server.log" &
  RIO_PID=$!
  for _ in $(seq 200); do
    [ -s "$work/port" ] && break
    kill -0 "$RIO_PID" 2>/dev/null || { echo "rio: the server did not start" >&2; return 1; }
    sleep 0.05
  done
  [ -s "$work/port" ] || { echo "rio: the server wrote no port" >&2; return 1; }
  RIO_PORT=$(cat "$work/port")
}

rio_server_stop() {
  if [ -n "${RIO_PID:-}" ]; then
    kill -CONT "$RIO_PID" 2>/dev/null || true
    kill "$RIO_PID" 2>/dev/null || true
    wait "$RIO_PID" 2>/dev/null || true
    RIO_PID=
  fi
}
