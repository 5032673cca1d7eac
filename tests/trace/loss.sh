#!/usr/bin/env bash
# Traces that cannot be written (issue 32): loss.sh LIBPARIO MANY PARIO_SERVER RIO_LOAD SRC RUN...
# (RUN...: the MPI launcher, e.g. scripts/mpirun.sh mpich).
# On a 1 MiB tmpfs that fills up, and into a read-only directory: the program and the server go
# on and succeed, each process says so once on stderr at the first failure (whatever PARIO_LOG
# says), every trace file holds only complete lines, the losses are counted (a "dropped" marker,
# or a last stderr line where even that cannot be written), and `pario trace` reads what there is
# and names what each rank lost. Needs root (mounts); exits 77 (skipped) where it cannot mount.
set -euo pipefail
lib=$1 many=$2 server=$3 load=$4 src=$5
shift 5
launcher=("$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/pario-loss.XXXXXX")
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  umount "$work/full" "$work/ro" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/full" "$work/ro"
if ! mount -t tmpfs -o size=1m tmpfs "$work/full" 2>/dev/null || ! mount -t tmpfs -o ro,size=64k tmpfs "$work/ro" 2>/dev/null; then
  echo "loss.sh: cannot mount a small tmpfs here (needs root): skipped"
  exit 77
fi
check_lines() { # every line of every trace file is one complete JSON object; prints the count
  python3 - "$@" <<'PY'
import glob, json, os, sys
n = 0
for d in sys.argv[1:]:
    for p in glob.glob(os.path.join(d, "*.jsonl")):
        data = open(p, encoding="utf-8").read()
        assert data == "" or data.endswith("\n"), f"{p}: last line cut"
        for line in data.splitlines():
            assert isinstance(json.loads(line), dict), (p, line)
            n += 1
print(n)
PY
}

# 1. A full file system under four ranks.
PARIO_TRACE="$work/full/t" "${launcher[@]}" 4 --pario "$lib" "$many" "$work/data" 3000 >"$work/out" 2>"$work/err" \
  || { cat "$work/out" "$work/err"; echo "loss.sh: the traced program failed on a full file system"; exit 1; }
grep -q "many: 4 ranks x 3000 records: ok" "$work/out"
first=$(grep -c "pario: trace: cannot write $work/full/t/client-" "$work/err" || true)
[ "$first" -ge 1 ] && [ "$first" -le 4 ] || { cat "$work/err"; echo "loss.sh: expected one 'cannot write' line per rank that lost events, got $first"; exit 1; }
for r in 0 1 2 3; do
  k=$(grep -c "pario: trace: cannot write $work/full/t/client-$r-" "$work/err" || true)
  [ "$k" -le 1 ] || { echo "loss.sh: rank $r said it $k times"; exit 1; }
done
! grep -q "pario: pario:" "$work/err" || { echo "loss.sh: doubled prefix"; exit 1; }
lines=$(check_lines "$work/full/t")
echo "full file system: $first rank(s) lost events, $lines complete lines kept"
# The losses are counted: in the marker, or (no room for it) on stderr.
python3 - "$work/full/t" "$work/err" <<'PY'
import glob, json, os, re, sys
d, err = sys.argv[1], open(sys.argv[2]).read()
lost = {}
for p in glob.glob(os.path.join(d, "*.jsonl")):
    for line in open(p):
        o = json.loads(line)
        if o.get("type") == "dropped":
            assert o["events"] > 0 and "No space left on device" in o["reason"], o
            lost[os.path.basename(p)] = o["events"]
for m in re.finditer(r"pario: trace: rank (\d+) lost (\d+) events \(cannot write (\S+): No space left on device\)", err):
    lost[os.path.basename(m.group(3))] = int(m.group(2))
said = set(re.findall(r"cannot write \S+/(client-\d+-\d+\.jsonl)", err))
assert said and said <= set(lost), (said, lost)
print("losses counted:", sorted(lost.items()))
PY
PYTHONPATH="$src/python" python3 -c "
import glob, json, os, sys
from pario import tracefile
t = tracefile.load(sys.argv[1])
assert t.clients, 'no rank read'
print('pario trace reads', len(t.clients), 'rank(s);', len(t.warnings), 'warning(s):')
print('\n'.join('  ' + w for w in t.warnings))
# every loss the files record is reported, naming the rank (losses only on stderr, where the
# marker found no room, are counted above)
for p in glob.glob(os.path.join(sys.argv[1], '*.jsonl')):
    lines = [json.loads(l) for l in open(p)]
    if not lines:
        assert any(os.path.basename(p) in w and 'empty' in w for w in t.warnings), (p, t.warnings)
    elif any(o.get('type') == 'dropped' for o in lines):
        assert any('rank %d: lost' % lines[0]['rank'] in w for w in t.warnings), (p, t.warnings)
" "$work/full/t"

# 2. A read-only directory, and one whose parent cannot be made: one line each, the run succeeds.
PARIO_TRACE="$work/ro" "${launcher[@]}" 2 --pario "$lib" "$many" "$work/data2" 50 >"$work/out" 2>"$work/err"
grep -q "ok" "$work/out"
k=$(grep -c "pario: trace: cannot open $work/ro/client-.*Read-only file system" "$work/err" || true)
[ "$k" = 2 ] || { cat "$work/err"; echo "loss.sh: read-only directory: expected one line per rank, got $k"; exit 1; }
PARIO_TRACE="$work/ro/sub/t" "${launcher[@]}" 2 --pario "$lib" "$many" "$work/data3" 50 >"$work/out" 2>"$work/err"
grep -q "ok" "$work/out"
grep -q "pario: trace: cannot make the trace directory $work/ro/sub/t (PARIO_TRACE): Read-only file system" "$work/err" \
  || { cat "$work/err"; echo "loss.sh: no message for a directory that cannot be made"; exit 1; }
echo "read-only directories: one line per rank, programs succeeded"

# 3. The server: a missing trace directory is made; a full one loses lines, logged, never cut.
umount "$work/full"
mount -t tmpfs -o size=64k tmpfs "$work/full"
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
mkdir -p "$work/root"
extra=()
"$server" --help | grep -q -- "--allow-root" && [ "$(id -u)" = 0 ] && extra=(--allow-root)
"$server" --root "$work/root" --listen 127.0.0.1:0 --secret-file "$work/secret" --trace "$work/full/new/dir" \
  "${extra[@]}" >"$work/sout" 2>"$work/slog" &
spid=$!
for _ in $(seq 200); do grep -q ':[0-9]*$' "$work/sout" 2>/dev/null && break; sleep 0.05; done
"$load" "$(head -1 "$work/sout")" "$work/secret" --clients 2 --steps 400 --piece 512 >/dev/null
kill -TERM $spid
wait $spid
grep -q "trace: cannot write $work/full/new/dir/server-" "$work/slog" || { cat "$work/slog"; echo "loss.sh: the server did not say it lost trace events"; exit 1; }
# Counted: in the marker when the cut freed room for it, else in the log's last trace line.
grep -q '"type":"dropped","events":[1-9]' "$work"/full/new/dir/server-*.jsonl || grep -q "trace: lost [1-9][0-9]* events" "$work/slog" \
  || { cat "$work/slog"; echo "loss.sh: the server did not count its lost events"; exit 1; }
slines=$(check_lines "$work/full/new/dir")
echo "server: made the missing directory, lost events logged, $slines complete lines kept"
echo "loss.sh: ok"
