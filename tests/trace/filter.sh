#!/usr/bin/env bash
# Record-time filtering (issue 32): filter.sh LIBPARIO MANY SRC RUN... Two ranks each write and
# read back N records (tests/trace/many.c) under PARIO_TRACE_FILTER or the hint
# pario_trace_filter, and the trace holds exactly what the filter lets through: calls by name
# (with what ran inside them), files by name, one data call in N, a size cap; a "filter" line
# counts what was left out, and a bad filter is one stderr line with the trace unfiltered.
set -euo pipefail
lib=$1 many=$2 src=$3
shift 3
launcher=("$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/pario-filter.XXXXXX")
trap 'rm -rf "$work"' EXIT
n=200
run() { # NAME FILTER [HINTS-FILE [DATA-FILE]]: trace into $work/NAME, stderr into $work/NAME.err
  local name=$1 filter=$2 hints=${3:-} data=${4:-$work/$1.dat}
  PARIO_TRACE="$work/$name" PARIO_TRACE_FILTER="$filter" PARIO_HINTS="$hints" \
    "${launcher[@]}" 2 --pario "$lib" "$many" "$data" $n >"$work/$name.out" 2>"$work/$name.err" \
    || { cat "$work/$name.err"; echo "filter.sh: $name: the program failed"; exit 1; }
  grep -q "records: ok" "$work/$name.out"
}
count() { # DIR PYTHON-EXPR-ON-e: events (all ranks) for which the expression holds
  python3 - "$1" "$2" <<'PY'
import glob, json, os, sys
n = 0
for p in glob.glob(os.path.join(sys.argv[1], "client-*.jsonl")):
    for line in open(p):
        e = json.loads(line)
        n += bool(eval(sys.argv[2]))
print(n)
PY
}
expect() { # WHAT GOT WANT
  [ "$2" = "$3" ] || { echo "filter.sh: $1: got $2, expected $3"; exit 1; }
  echo "  $1: $2"
}
api='e.get("type") == "span" and e.get("cat") == "api"'

echo "calls=write* (writes and opens/closes traced, reads and what ran inside them not):"
run calls "calls=write*"
expect "write_at spans" "$(count "$work/calls" "$api and e['name'] == 'MPI_File_write_at'")" $((2 * n))
expect "read_at spans" "$(count "$work/calls" "$api and e['name'] == 'MPI_File_read_at'")" 0
expect "driver reads" "$(count "$work/calls" "e.get('cat') == 'driver' and 'read' in e.get('name', '')")" 0
expect "opens" "$(count "$work/calls" "$api and e['name'] == 'MPI_File_open'")" 2
expect "calls left out (filter lines)" "$(count "$work/calls" "e.get('type') == 'filter' and e['spec'] == 'calls=write*' and e['calls'] == $n")" 2

echo "sample=10 (one data call in ten):"
run sample "sample=10"
expect "data calls traced" "$(count "$work/sample" "$api and ('read' in e['name'] or 'write' in e['name'])")" $((2 * 2 * n / 10))
expect "filter lines counting the rest" "$(count "$work/sample" "e.get('type') == 'filter' and e['calls'] == $((2 * n - 2 * n / 10))")" 2

echo "files=*nomatch* (the file is not traced at all):"
run files "files=*nomatch*"
expect "spans naming a file" "$(count "$work/files" "e.get('type') == 'span' and 'file' in e.get('args', {})")" 0
expect "file lines" "$(count "$work/files" "e.get('type') == 'file'")" 0

echo "max_size=16K (the file stops growing; the loss is counted and said once):"
run cap "max_size=16K"
for f in "$work"/cap/client-*.jsonl; do
  size=$(( $(wc -c <"$f") - $(tail -n 2 "$f" | wc -c) )) # without the two closing lines
  [ "$size" -le 16384 ] || { echo "filter.sh: $f: $size bytes before its closing lines, over the cap"; exit 1; }
done
expect "dropped lines citing the cap" "$(count "$work/cap" "e.get('type') == 'dropped' and 'size cap of 16384' in e['reason'] and e['events'] > 0")" 2
expect "stderr lines" "$(grep -c "size cap of 16384 bytes" "$work/cap.err")" 2

echo "the hint pario_trace_filter in a PARIO_HINTS file:"
echo "pario_trace_filter calls=read*" >"$work/hints"
run hint "" "$work/hints"
expect "write_at spans" "$(count "$work/hint" "$api and e['name'] == 'MPI_File_write_at'")" 0
expect "read_at spans" "$(count "$work/hint" "$api and e['name'] == 'MPI_File_read_at'")" $((2 * n))

echo "a bad filter (one line per rank, traced unfiltered):"
run bad "callz=write*"
expect "stderr lines" "$(grep -c "pario: trace: PARIO_TRACE_FILTER: unknown key 'callz' (calls, files, tools, sample, max_size); tracing without a filter" "$work/bad.err")" 2
expect "read_at spans" "$(count "$work/bad" "$api and e['name'] == 'MPI_File_read_at'")" $((2 * n))

echo "a tool's own file (Darshan's log name by default, or tools=GLOB) is marked, and left out of the totals:"
run darshan "" "" "$work/app_id1.darshan_partial"
expect "file lines marked tool" "$(count "$work/darshan" "e.get('type') == 'file' and e.get('tool') == 1")" 2
run mytool "tools=*.mylog" "" "$work/x.mylog"
expect "file lines marked tool" "$(count "$work/mytool" "e.get('type') == 'file' and e.get('tool') == 1")" 2
PYTHONPATH="$src/python" python3 -c "
import sys
from pario import tracefile, tracestats
for r in tracestats.rank_stats(tracefile.load(sys.argv[1])):
    assert (r.calls, r.bytes_written, r.tool_calls) == (0, 0, 2 * int(sys.argv[2]) + 2), r
" "$work/darshan" $n

PYTHONPATH="$src/python" python3 -c "
import sys
from pario import tracefile
t = tracefile.load(sys.argv[1])
assert any('not recorded' in w and 'calls=write*' in w for w in t.warnings), t.warnings
" "$work/calls"
echo "filter.sh: ok"
