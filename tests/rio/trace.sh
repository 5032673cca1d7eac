#!/usr/bin/env bash
# pario-server --trace DIR: trace.sh PARIO_SERVER RIO_LOAD. Runs a small bounded load, stops the
# server, and checks the trace file: the header line, every line valid JSON, network and storage
# spans for the requests (recv/send WRITE, pwrite with the bytes written, flow = request id),
# the cpu_pct and dirty_kb counters.
set -euo pipefail
server=$1 load=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/pario-trace.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
mkdir "$work/root" "$work/trace"
"$server" --root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/secret" --allow-root --trace "$work/trace" \
  >"$work/out" 2>"$work/log" &
pid=$!
for _ in $(seq 200); do grep -q ':[0-9]*$' "$work/out" 2>/dev/null && break; sleep 0.05; done
addr=$(head -1 "$work/out")
"$load" "$addr" "$work/secret" --clients 2 --steps 20 --piece 5000
sleep 0.3 # a few counter samples
kill -TERM $pid
wait $pid
port=${addr##*:}
python3 - "$work/trace/server-$port-$pid.jsonl" "$port" "$pid" <<'PY'
import json, sys
path, port, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [json.loads(l) for l in open(path)]
h = lines[0]
assert h["type"] == "header" and h["format"] == "pario-trace" and h["version"] == 1, h
assert h["kind"] == "server" and h["pid"] == pid and h["name"] == f"server 127.0.0.1:{port}", h
assert h["clock_offset_ns"] == 0 and h["clock_err_ns"] == -1 and h["host"], h
spans = [e for e in lines[1:] if e["type"] == "span"]
ctrs = [e for e in lines[1:] if e["type"] == "counter"]
names = {e["name"] for e in spans}
for want in ("recv WRITE", "recv WRITE data", "send WRITE", "pwrite", "recv OPEN", "send OPEN", "open"):
    assert want in names, (want, names)
for e in spans:
    assert e["cat"] in ("net", "storage") and e["d"] >= 0 and e["t"] > 0 and e["tid"] > 0 and e["thread"], e
    assert "bytes" in e["args"] and "offset" in e["args"], e
written = sum(e["args"]["bytes"] for e in spans if e["name"] == "pwrite")
assert written == 2 * 20 * 5000, written
writes = [e for e in spans if e["name"] == "recv WRITE"]
assert len(writes) == 40 and all(e.get("flow") for e in writes), len(writes)
flows = {e["flow"] for e in writes}
assert flows <= {e.get("flow") for e in spans if e["name"] == "pwrite"}, "pwrite spans carry their request's id"
assert {c["name"] for c in ctrs} >= {"cpu_pct", "dirty_kb"}, ctrs[:4]
print(f"trace: {len(spans)} spans, {len(ctrs)} counter samples, {written} bytes in pwrite spans: ok")
PY
