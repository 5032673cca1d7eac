#!/usr/bin/env bash
# Namespace nodes: N "machines" on one kernel that share nothing but the file system.
# Each node is one holder process (sleep) in its own network, UTS, IPC and mount namespaces:
# hostname nodeK, address 10.77.0.K/24 on a veth whose peer sits on a bridge in a network
# namespace of its own, private tmpfs on /dev/shm and /tmp, its own /etc/hosts. Nothing is
# made in the caller's network namespace (names start with "pn" anyway), so fixtures of
# concurrent tests never clash. Processes enter a node with nsenter -t HOLDER -n -u -i -m; an
# ssh stand-in (STATE/ssh HOST CMD...) does that for the MPI launchers. Each node mounts its
# own sysfs too: UCX finds network devices in /sys/class/net, which must list the node's
# own. README.md here.
#
# usage: nsnodes.sh check                       exit 0 if namespaces can be made here, else
#                                               77 and one line saying why
#        nsnodes.sh up STATE N                  bring up N nodes (STATE: a new directory)
#        nsnodes.sh down STATE                  kill everything in the nodes, remove STATE
#        nsnodes.sh run STATE FLAVOUR N PPN [--pario LIB] [--timeout S] PROGRAM [ARGS...]
#                                               mpiexec of FLAVOUR (mpich, openmpi) in node1,
#                                               PPN ranks on each of nodes 1..N; MPICH:
#                                               $PARIO_NS_FINSHIM (libpario-finshim.so)
#                                               preloaded first where set
#        nsnodes.sh with N FLAVOUR PPN [...]    up + run + down in one (a temporary STATE
#                                               under $PARIO_TEST_DIR or the build dir), down
#                                               even on failure or Ctrl-C; with
#                                               PARIO_NS_FULL_ONLY=1 it runs only when
#                                               PARIO_MULTINODE_FULL=1 (else skipped: 77)
#        nsnodes.sh --help | --version
set -uo pipefail
VERSION=1
me=$(readlink -f "$0")
NET=10.77.0

die() { echo "nsnodes: $*" >&2; exit 1; }

check() {
  local why=""
  [ "$(id -u)" = 0 ] || why="not root"
  for t in unshare nsenter ip timeout; do
    [ -n "$why" ] || command -v "$t" >/dev/null || why="$t is missing"
  done
  [ -n "$why" ] || unshare -n -u -i -m --propagation private true 2>/dev/null || why="unshare -n -u -i -m is refused"
  [ -n "$why" ] || unshare -n sh -c 'ip link add pnchk type bridge && ip link add pnchkv type veth peer name pnchkp' \
    2>/dev/null || why="no bridge or veth devices in a new network namespace"
  if [ -n "$why" ]; then
    echo "multinode namespace nodes cannot be made here ($why): skipped"
    return 77
  fi
  return 0
}

# A holder: unshare execs sh in the new namespaces (no --fork: its PID is the namespaces'
# handle); sh sets the node up, says "ready" and becomes sleep. $1: node number (0: the bridge).
holder() {
  local k=$1 st=$2
  if [ "$k" = 0 ]; then
    unshare -n sh -c 'echo $$ > "$1/pid.0"; ip link set lo up; ip link add pnbr type bridge &&
      ip link set pnbr up && echo ready > "$1/ready.0"; exec sleep 86400' sh "$st" \
      </dev/null >/dev/null 2>"$st/holder.0.err" & disown
  else
    unshare -n -u -i -m --propagation private sh -c '
      st=$1 k=$2
      echo $$ > "$st/pid.$k"
      hostname "node$k" && mount --bind "$st/hosts" /etc/hosts &&
      mount -t tmpfs -o mode=1777,size=256m pn-shm /dev/shm &&
      mount -t tmpfs -o mode=1777,size=256m pn-tmp /tmp && mount -t sysfs pn-sys /sys &&
      ip link set lo up && echo ready > "$st/ready.$k"
      exec sleep 86400' sh "$st" "$k" </dev/null >/dev/null 2>"$st/holder.$k.err" & disown
  fi
}

wait_file() { # wait up to 10 s for $1
  local i
  for i in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  return 1
}

in_ns() { local pid=$1; shift; nsenter -t "$pid" -n "$@"; }

up() {
  local st=$1 n=$2 k
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 32 ] || die "up: N must be 1..32"
  mkdir "$st" || die "up: cannot make $st"
  st=$(readlink -f "$st")
  case "$st" in /tmp/*|/dev/shm/*) rmdir "$st"; die "up: $st would be hidden in the nodes (private /tmp, /dev/shm): put it elsewhere";; esac
  { echo "127.0.0.1 localhost"; for k in $(seq "$n"); do echo "$NET.$k node$k"; done; } > "$st/hosts"
  echo "$n" > "$st/nodes"
  holder 0 "$st"
  wait_file "$st/ready.0" || { cat "$st/holder.0.err" >&2; return 1; }
  local br; br=$(cat "$st/pid.0")
  for k in $(seq "$n"); do holder "$k" "$st"; done
  for k in $(seq "$n"); do
    wait_file "$st/ready.$k" || { echo "nsnodes: node$k did not come up:" >&2; cat "$st/holder.$k.err" >&2; return 1; }
    local pid; pid=$(cat "$st/pid.$k")
    in_ns "$br" ip link add "pnv$k" type veth peer name "pne$k" &&
      in_ns "$br" ip link set "pnv$k" master pnbr up &&
      in_ns "$br" ip link set "pne$k" netns "$pid" &&
      in_ns "$pid" ip addr add "$NET.$k/24" dev "pne$k" &&
      in_ns "$pid" ip link set "pne$k" up || { echo "nsnodes: cannot wire node$k" >&2; return 1; }
  done
  # The ssh stand-in: "ssh [-opts...] HOST CMD..." runs CMD with sh -c in HOST's namespaces,
  # in the current directory (the shared file system), with the caller's environment.
  cat > "$st/ssh" <<EOF
#!/bin/sh
# ssh stand-in for the namespace nodes in $st (nsnodes.sh)
while [ \$# -gt 0 ]; do
  case "\$1" in
    -[1246AaCfgKkMNnqsTtVvXxYy]*) shift ;;
    -*) shift 2 ;;
    *) break ;;
  esac
done
host=\$1; shift
case "\$host" in *@*) host=\${host#*@} ;; esac
k=\${host#node}
[ -f "$st/pid.\$k" ] || { echo "ssh stand-in: no node '\$host'" >&2; exit 255; }
exec nsenter -t "\$(cat "$st/pid.\$k")" -n -u -i -m --wd="\$PWD" sh -c "\$*"
EOF
  chmod +x "$st/ssh"
  # every node answers every other (the bridge forwards at once: no STP delay on new ports)
  local last; last=$(cat "$st/pid.$n")
  command -v ping >/dev/null || return 0 # no ping here: trust the links
  for k in $(seq "$n"); do
    local i ok=0
    for i in $(seq 50); do in_ns "$last" ping -c1 -W1 "$NET.$k" >/dev/null 2>&1 && { ok=1; break; }; sleep 0.1; done
    [ "$ok" = 1 ] || { echo "nsnodes: node$k does not answer" >&2; return 1; }
  done
  return 0
}

# Kill what runs in the nodes (MPI daemons and ranks the tests started there: processes whose
# network namespace is a node's), then the holders; the namespaces and links go with them.
down() {
  local st=$1 f pid ns sig holders="" match=()
  [ -d "$st" ] || return 0
  for f in "$st"/pid.*; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    holders="$holders $pid"
    ns=$(readlink "/proc/$pid/ns/net" 2>/dev/null) || continue
    ns=${ns//[/\\[}
    match+=(-o -lname "${ns//]/\\]}") # net:[N], brackets escaped for find's pattern
  done
  # one find over /proc per round (a readlink per process took minutes on a busy machine)
  for sig in TERM KILL; do
    [ ${#match[@]} -gt 0 ] || break
    for pid in $(find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/net' \( "${match[@]:1}" \) 2>/dev/null |
                 cut -d/ -f3); do
      case " $holders " in *" $pid "*) ;; *) kill -"$sig" "$pid" 2>/dev/null ;; esac
    done
    [ "$sig" = TERM ] && sleep 0.3
  done
  for f in "$st"/pid.*; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
  rm -rf "$st"
}

# mpiexec inside node1 across nodes 1..N. MPICH: hydra's ssh launcher with the stand-in.
# Open MPI: the rsh launcher with the stand-in; TCP between nodes (UCX cannot be opened in the
# namespaces, so pml ob1), vader within a node, both restricted to the nodes' subnet. Every
# PARIO_* variable of the caller reaches the ranks (-x for Open MPI, -genvall for MPICH).
run() {
  local st; st=$(readlink -f "$1"); local flavour=$2 n=$3 ppn=$4; shift 4
  local preload="" limit=240 hosts k
  while [ $# -gt 0 ]; do
    case "$1" in
      --pario) preload=$2; shift 2 ;;
      --timeout) limit=$2; shift 2 ;;
      *) break ;;
    esac
  done
  [ $# -ge 1 ] || die "run: no program"
  [ -x "$st/ssh" ] || die "run: $st has no nodes (nsnodes.sh up first)"
  local np=$((n * ppn)) args=() v
  case "$flavour" in
    mpich)
      hosts=$(for k in $(seq "$n"); do printf 'node%s:%s,' "$k" "$ppn"; done)
      args=(mpiexec.mpich -launcher ssh -launcher-exec "$st/ssh" -hosts "${hosts%,}" -bind-to none -genvall)
      # the finalize shim (finshim.c) first, when the tests name it (README.md, finding 2)
      [ -n "${PARIO_NS_FINSHIM:-}" ] && preload="$PARIO_NS_FINSHIM${preload:+ $preload}"
      [ -n "$preload" ] && args+=(-genv LD_PRELOAD "$preload")
      export UCX_WARN_UNUSED_ENV_VARS=n ;;
    openmpi)
      hosts=$(for k in $(seq "$n"); do printf 'node%s:%s,' "$k" "$ppn"; done)
      export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HWLOC_COMPONENTS=${HWLOC_COMPONENTS:--x86}
      args=(mpiexec.openmpi --host "${hosts%,}" --oversubscribe --mca plm_rsh_agent "$st/ssh"
            --mca btl self,vader,tcp --mca pml ob1 --mca btl_tcp_if_include "$NET.0/24"
            --mca oob_tcp_if_include "$NET.0/24" --mca hwloc_base_binding_policy none
            --mca rmaps_base_oversubscribe 1 -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
            -x HWLOC_COMPONENTS)
      [ -n "$preload" ] && args+=(-x "LD_PRELOAD=$preload")
      for v in $(compgen -e | grep -E '^(PARIO_|ASAN_OPTIONS|UBSAN_OPTIONS|UCX_)'); do args+=(-x "$v"); done ;;
    *) die "run: unknown MPI flavour '$flavour' (mpich or openmpi)" ;;
  esac
  # The launcher runs in node1, as on a cluster's first node; timeout bounds the whole job
  # (a hang fails the test: 124), and kills the launcher's process group.
  # timeout makes its own process group, which a terminal's Ctrl-C does not reach: it runs in
  # the background and the shell waits (a trapped signal interrupts wait), passing INT and
  # TERM on to it (timeout kills the job with them).
  timeout -k 5 "$limit" nsenter -t "$(cat "$st/pid.1")" -n -u -i -m --wd="$PWD" "${args[@]}" -n "$np" "$@" &
  tpid=$!
  trap 'kill -TERM "$tpid" 2>/dev/null; exit 130' INT
  trap 'kill -TERM "$tpid" 2>/dev/null; exit 143' TERM
  wait "$tpid"
  local rc=$?
  trap - INT TERM
  if [ "$rc" = 124 ]; then
    echo "nsnodes: the job did not finish within $limit s (a hang): failed" >&2
    [ "$flavour" = mpich ] && [ -z "${PARIO_NS_FINSHIM:-}" ] && echo "nsnodes: (if the ranks had done their work, this may be Debian's MPICH 4.0.2 hanging in MPI_Finalize over UCX's TCP, which no setting cures; PARIO_NS_FINSHIM=libpario-finshim.so ends it: tests/multinode/README.md, finding 2)" >&2
  fi
  return "$rc"
}

case "${1:-}" in
  --help|-h) sed -n '2,/^set -uo/p' "$me" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --version) echo "nsnodes.sh $VERSION"; exit 0 ;;
  check) check; exit $? ;;
  up) [ $# = 3 ] || die "usage: nsnodes.sh up STATE N"; up "$2" "$3"; rc=$?; [ $rc = 0 ] || down "$2"; exit $rc ;;
  down) [ $# = 2 ] || die "usage: nsnodes.sh down STATE"; down "$2"; exit 0 ;;
  run) [ $# -ge 5 ] || die "usage: nsnodes.sh run STATE FLAVOUR N PPN PROGRAM..."; run "${@:2}"; exit $? ;;
  with)
    [ $# -ge 4 ] || die "usage: nsnodes.sh with N FLAVOUR PPN [--pario LIB] [--timeout S] PROGRAM..."
    if [ "${PARIO_NS_FULL_ONLY:-}" = 1 ] && [ "${PARIO_MULTINODE_FULL:-}" != 1 ]; then
      echo "multinode: a long namespace-node test, run by make test-multinode (PARIO_MULTINODE_FULL=1): skipped"
      exit 77
    fi
    check >/dev/null || { check; exit 77; }
    n=$2 flavour=$3 ppn=$4; shift 4
    base=${PARIO_TEST_DIR:-$PWD}
    st=$(mktemp -d "$base/pn-nodes.XXXXXX") && rmdir "$st" || die "cannot make a state directory in $base"
    trap 'down "$st"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    up "$st" "$n" || exit 1 # run's own INT and TERM traps stop the job; EXIT then tears down
    run "$st" "$flavour" "$n" "$ppn" "$@"
    exit $? ;;
  *) die "unknown command '${1:-}' (try --help)" ;;
esac
