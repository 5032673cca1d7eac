# Sourced by the namespace-node test scripts here (fault.sh, remote.sh, diff.sh): nodes brought
# up for one test and torn down whatever happens, with a check that nothing is left.
#   ns_begin WORKDIR N   skip (77) where namespaces cannot be made (or with PARIO_NS_FULL_ONLY=1
#                        but not PARIO_MULTINODE_FULL=1, as nsnodes.sh with); else N nodes up in a fresh
#                        state directory under WORKDIR (NS_ST); ns_end runs on exit, also after
#                        a failure, Ctrl-C (INT) or TERM
#   ns_procs [K...]      the processes (PIDs) in node K's namespaces (network or mount), every
#                        node's without K, the holders included
#   NS_CLEAN             paths ns_end removes (rm -rf) before the nodes go
#   ns_end               nsnodes.sh down, then: no process left in any node's network or mount
#                        namespace (the private /dev/shm, /tmp and sysfs mounts live only
#                        there) and the state directory gone; a leftover fails the test
NSNODES=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/nsnodes.sh
NS_ST="" NS_LINKS=() NS_CLEAN=()

ns_begin() {
  local work=$1 n=$2 k f
  if [ "${PARIO_NS_FULL_ONLY:-}" = 1 ] && [ "${PARIO_MULTINODE_FULL:-}" != 1 ]; then
    echo "multinode: a long namespace-node test, run by make test-multinode (PARIO_MULTINODE_FULL=1): skipped"
    exit 77
  fi
  "$NSNODES" check || exit 77
  mkdir -p "$work"
  NS_ST=$(mktemp -d "$(readlink -f "$work")/pn-nodes.XXXXXX") && rmdir "$NS_ST" || { echo "cannot make a state directory in $work" >&2; exit 1; }
  trap ns_end EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  "$NSNODES" up "$NS_ST" "$n" || exit 1
  for k in $(seq 0 "$n"); do # the namespaces by name (net:[N], mnt:[N]): they outlive a killed holder's PID
    for f in net mnt; do NS_LINKS[$k]+=" $(readlink "/proc/$(cat "$NS_ST/pid.$k")/ns/$f")"; done
  done
}

ns_procs() {
  local ks=("$@") k l match=()
  [ ${#ks[@]} -gt 0 ] || ks=("${!NS_LINKS[@]}")
  for k in "${ks[@]}"; do
    for l in ${NS_LINKS[$k]:-}; do
      [ "${l#mnt:}" != "$l" ] && [ "$k" = 0 ] && continue # the bridge shares the caller's mounts
      l=${l//[/\\[}
      match+=(-o -lname "${l//]/\\]}")
    done
  done
  [ ${#match[@]} -gt 0 ] || return 0
  find /proc -mindepth 3 -maxdepth 3 \( -path '/proc/[0-9]*/ns/net' -o -path '/proc/[0-9]*/ns/mnt' \) \
    \( "${match[@]:1}" \) 2>/dev/null | cut -d/ -f3 | sort -u
}

ns_end() {
  local rc=$? left i
  trap - EXIT INT TERM
  [ -n "$NS_ST" ] || exit "$rc"
  "$NSNODES" down "$NS_ST"
  [ ${#NS_CLEAN[@]} = 0 ] || rm -rf "${NS_CLEAN[@]}" # after down: ranks may still be writing them
  for i in $(seq 20); do
    left=$(ns_procs)
    [ -z "$left" ] && break
    sleep 0.2
  done
  if [ -n "$left" ]; then
    echo "FAIL: processes left in the nodes after nsnodes.sh down:" $(for p in $left; do echo "$p/$(cat /proc/$p/comm 2>/dev/null)"; done) >&2
    kill -KILL $left 2>/dev/null
    rc=1
  fi
  [ -e "$NS_ST" ] && { echo "FAIL: $NS_ST left after nsnodes.sh down" >&2; rm -rf "$NS_ST"; rc=1; }
  [ "$rc" = 0 ] || [ -n "$left" ] || echo "(nodes torn down after a failure or signal: nothing left)"
  [ "$rc" = 0 ] && echo "nodes torn down: no process, namespace, mount or state left"
  exit "$rc"
}
