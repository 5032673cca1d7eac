#!/usr/bin/env bash
# A fault in the middle of a collective write across namespace nodes (README.md here):
#   kill   every process of node2 (its ranks, the MPI daemon there, its holder) is killed
#   link   node2's link is pulled: ip link set down on its veth, in the bridge's namespace
#   server rank 0 alone is killed while every rank writes through addproc's shared pointer,
#          whose server thread rank 0 runs and whose requests travel over TCP across nodes
#          (PARIO_NS_FAULT_PHASE2=shared: phase 2 is write_shared records, fault.c)
#   holder every process of node2 is killed while every rank writes through addproc's shared
#          pointer: its ranks hold the lease in turn (lease.c), so S is lost with them and the
#          ranks waiting for it must fail (EIO) instead of waiting
# nsfault (fault.c) writes and syncs phase 1, then runs aggregated collective writes (phase 2);
# the fault comes once phase 2 has finished ROUND rounds. Passes when the launcher exits
# non-zero within BOUND s of the fault (a hang, which the fixture's timeout ends, fails), no
# rank outlives the launcher by more than 10 s (each ends by its error and MPI_Abort or by the
# launcher's teardown), phase 1's bytes are intact (checked from the host), pario served the run, and the
# nodes leave nothing behind (nslib.sh).
# usage: fault.sh kill|link|server|holder FLAVOUR N PPN LIBPARIO NSFAULT WORKDIR
# Open MPI's daemons notice a lost node by TCP keepalive, after 2 s here
# (OMPI_MCA_oob_tcp_keepalive_time=2, _intvl=1, _probes=3; its default starts after 300 s);
# PARIO_NS_FAULT_TCP=default leaves Open MPI's settings alone. PARIO_NS_FAULT_TIMEOUT=S: the
# ranks run with the hint pario_timeout S (a PARIO_HINTS file). The limits:
# PARIO_NS_FAULT_ROUND (3), PARIO_NS_FAULT_BOUND (90 s), PARIO_NS_FAULT_LIMIT (the job's, 120 s).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in --help|-h) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
[ $# = 7 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
fault=$1 flavour=$2 n=$3 ppn=$4 lib=$5 prog=$6 work=$7
case "$fault" in kill|link) ;; server|holder) export PARIO_NS_FAULT_PHASE2=shared ;;
  *) echo "fault.sh: unknown fault '$fault' (kill, link, server or holder)" >&2; exit 2 ;; esac
ROUND=${PARIO_NS_FAULT_ROUND:-3} BOUND=${PARIO_NS_FAULT_BOUND:-90} LIMIT=${PARIO_NS_FAULT_LIMIT:-120}
. "$here/nslib.sh"
ns_begin "$work" "$n"
if [ "${PARIO_NS_FAULT_TCP:-short}" = short ]; then # PARIO_NS_FAULT_TCP=default: Open MPI's own
  export OMPI_MCA_oob_tcp_keepalive_time=2 OMPI_MCA_oob_tcp_keepalive_intvl=1 OMPI_MCA_oob_tcp_keepalive_probes=3
fi
file=$work/nsfault.$$
rm -f "$file" "$file".*
NS_CLEAN=("$file" "$file.phase1" "$file.progress" "$work/out.$$")
if [ -n "${PARIO_NS_FAULT_TIMEOUT:-}" ]; then # pario_timeout, in a hints file every node sees
  printf 'pario_timeout %s\n' "$PARIO_NS_FAULT_TIMEOUT" > "$file.hints" || exit 1
  export PARIO_HINTS=$file.hints
  NS_CLEAN+=("$file.hints")
fi
"$NSNODES" run "$NS_ST" "$flavour" "$n" "$ppn" --pario "$lib" --timeout "$LIMIT" "$prog" "$file" 1000000 \
  > "$work/out.$$" 2>&1 &
job=$!
t0=$SECONDS
while kill -0 "$job" 2>/dev/null && [ "$(cat "$file.progress" 2>/dev/null || echo 0)" -lt "$ROUND" ]; do
  [ $((SECONDS - t0)) -lt 120 ] || break
  sleep 0.1
done
if ! kill -0 "$job" 2>/dev/null || [ "$(cat "$file.progress" 2>/dev/null || echo 0)" -lt "$ROUND" ]; then
  echo "FAIL: phase 2 did not reach round $ROUND (the job ended or took over 120 s); no fault injected"
  kill -TERM "$job" 2>/dev/null; wait "$job"
  sed 's/^/    /' "$work/out.$$" | head -30; rm -f "$work/out.$$"
  exit 1
fi
read -r np served fails pid0 < "$file.phase1"
echo "fault.sh: $flavour, $n nodes x $ppn, phase 2 at round $(cat "$file.progress"): $fault $([ "$fault" = server ] && echo "rank 0 (PID $pid0)" || echo node2)"
tf=$SECONDS
if [ "$fault" = kill ] || [ "$fault" = holder ]; then
  victims=$(ns_procs 2)
  kill -KILL $victims 2>/dev/null
  echo "fault.sh: killed node2's $(echo $victims | wc -w) processes"
elif [ "$fault" = server ]; then
  kill -KILL "$pid0" || exit 1
else
  nsenter -t "$(cat "$NS_ST/pid.0")" -n ip link set pnv2 down || exit 1
fi
wait "$job"
rc=$?
dt=$((SECONDS - tf))
status=0
echo "fault.sh: the launcher exited $rc, $dt s after the fault; the ranks said:"
grep -e '^nsfault' -e 'nsnodes:' -e 'rank [0-9]* FAIL' "$work/out.$$" | sort | uniq -c | head -20 | sed 's/^/    /'
if [ "$rc" = 0 ] || [ "$rc" = 2 ]; then echo "FAIL: the job did not fail ($rc)"; status=1; fi
# 137 is also Open MPI's exit when a rank was killed (128 + SIGKILL: the server fault): a hang
# only if the job ran to the fixture's limit
if [ "$rc" = 124 ] || { [ "$rc" = 137 ] && [ $((SECONDS - t0)) -ge "$LIMIT" ]; }; then
  echo "FAIL: the job hung until the fixture's limit ($LIMIT s)"; status=1
fi
[ "$dt" -le "$BOUND" ] || { echo "FAIL: the launcher took $dt s after the fault (bound $BOUND s)"; status=1; }
# no rank outlives the launcher (killed, torn down, or, cut off with MPICH, ended by fault.c's
# alarm after MPI_Abort)
for _ in $(seq 50); do
  left=$(for p in $(ns_procs $(seq 1 "$n")); do [ "$(cat /proc/$p/comm 2>/dev/null)" = "$(basename "$prog" | cut -c1-15)" ] && echo "$p"; done)
  [ -z "$left" ] && break
  sleep 0.2
done
[ -z "$left" ] || { echo "FAIL: ranks still running 10 s after the launcher exited:" $left; status=1; }
[ "$served" = 1 ] || { echo "FAIL: pario did not serve the run (phase 1 says served=$served)"; status=1; }
[ "$fails" = 0 ] || { echo "FAIL: $fails ranks failed phase 1's checks (read back, transport: above)"; status=1; }
"$prog" verify "$file" "$np" || status=1
echo "    (launcher output:)"
grep -v -e '^\s*$' -e '^---' "$work/out.$$" | head -$([ $status = 0 ] && echo 6 || echo 30) | cut -c1-300 | sed 's/^/    /'
what="node2 mid-collective"
[ "$fault" = server ] && what="rank 0, addproc's server, mid-write_shared"
[ "$fault" = holder ] && what="node2, holding addproc's lease in turn, mid-write_shared"
[ $status = 0 ] && echo "PASS: $fault $what ($flavour, $n x $ppn): the job failed in $dt s, no rank left, phase 1 intact"
exit $status
