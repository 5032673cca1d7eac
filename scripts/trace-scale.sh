#!/bin/bash
# Measure `pario trace merge -o` and `pario trace stats` on synthetic traces (issue 32, item 4):
# wall time, CPU time (user + sys, workers included) and peak memory (/usr/bin/time -v's maximum
# resident set size: that of the largest process; merge's workers are each as bounded as the
# main process), the median of RUNS runs, at each size given (events; default 1e6 1e7). Not part
# of `make test`: 10^7 events are 1.6 GB of trace and about a minute of CPU per command and run.
#
#   scripts/trace-scale.sh                 # 10^6 and 10^7 events, 3 runs each
#   RUNS=1 scripts/trace-scale.sh 1e5      # a quick look
#   JOBS=1 COMMANDS="merge report otf2" scripts/trace-scale.sh 1e6
#   PARIO_PYTHONPATH=/tmp/old/python scripts/trace-scale.sh 1e6   # another version's python/ (before/after)
#
# Environment: PY (default build/venv/bin/python, `make venv`), RUNS (3), RANKS (4), COMMANDS
# (default "merge stats"; also report, otf2: all four stream, in bounded memory), JOBS (merge's
# --jobs; default its own: the CPUs), WORK (a scratch directory, default /tmp/pario-trace-scale;
# the traces stay there for reuse).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$root/build/venv/bin/python}
RUNS=${RUNS:-3}
RANKS=${RANKS:-4}
COMMANDS=${COMMANDS:-merge stats}
JOBS=${JOBS:-}
WORK=${WORK:-/tmp/pario-trace-scale}
[ -x "$PY" ] || { echo "trace-scale: no $PY (run make venv)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "trace-scale: no /usr/bin/time (apt-get install time)" >&2; exit 2; }
pp=${PARIO_PYTHONPATH:-$root/python}
mkdir -p "$WORK"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1e6 1e7)

# one run: prints "wall cpu rss_kb"
measure() {
  local log="$WORK/time.log"
  PYTHONPATH="$pp" /usr/bin/time -v "$PY" -m pario trace "$@" > "$WORK/out.log" 2> "$log" || {
    echo "trace-scale: pario trace $* failed:" >&2; tail -5 "$log" >&2; exit 1; }
  awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
              /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { m = $2 }
              END { printf "%.2f %.2f %d\n", w, u + s, m }' "$log"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf "%-9s %-6s %10s %10s %12s %10s %12s %10s\n" events command "wall (s)" "CPU (s)" "events/s" "" "events/s" "peak (MB)"
printf "%-9s %-6s %10s %10s %12s %10s %12s %10s\n" "" "" "" "" "(wall)" "" "(CPU)" ""
for n in "${sizes[@]}"; do
  dir="$WORK/trace-$n-$RANKS"
  if [ ! -f "$dir/.done" ]; then
    rm -rf "$dir"
    "$PY" "$root/tests/python/synthtrace.py" "$dir" "$n" "$RANKS" | awk '{ print $2 }' > "$dir.events"
    touch "$dir/.done"
  fi
  events=$(cat "$dir.events")
  for cmd in $COMMANDS; do
    rm -f "$WORK/runs"
    for _ in $(seq "$RUNS"); do
      rm -rf "$WORK/merged.json" "$WORK/otf2" "$WORK/report.html"
      case $cmd in
        merge) measure merge "$dir" -o "$WORK/merged.json" ${JOBS:+-j "$JOBS"};;
        stats) measure stats "$dir";;
        report) measure report "$dir" -o "$WORK/report.html";;
        otf2) measure merge "$dir" --otf2 "$WORK/otf2";;
        *) echo "trace-scale: unknown command $cmd (merge, stats, report, otf2)" >&2; exit 2;;
      esac >> "$WORK/runs"
    done
    wall=$(awk '{ print $1 }' "$WORK/runs" | median)
    cpu=$(awk '{ print $2 }' "$WORK/runs" | median)
    rss=$(awk '{ print $3 }' "$WORK/runs" | median)
    awk -v n="$events" -v c="$cmd" -v w="$wall" -v u="$cpu" -v m="$rss" 'BEGIN {
      printf "%-9d %-6s %10.2f %10.2f %12.0f %10s %12.0f %10.0f\n", n, c, w, u, n / w, "", n / u, m / 1024 }'
  done
  rm -rf "$WORK/merged.json" "$WORK/otf2" "$WORK/report.html"
done
echo "(median of $RUNS run(s); merge --jobs ${JOBS:-default}; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); python: $pp)"
