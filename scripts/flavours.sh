#!/usr/bin/env bash
# The MPI flavours of cmake/flavours.txt, for the Makefile and scripts/demo.sh.
#   flavours.sh list                     every flavour, one line
#   flavours.sh present BUILD [F...]     those of F... (default: every flavour) whose MPI is
#                                        installed, one line each; each missing one is named on
#                                        stderr ("skipping"); a name that is no flavour is a
#                                        one-line error (exit 2)
#   flavours.sh where F                  debian or venv (cmake/flavours.txt)
set -euo pipefail
table=$(cd "$(dirname "${BASH_SOURCE[0]}")/../cmake" && pwd)/flavours.txt
all=$(awk '/^[a-z]/ {print $1}' "$table")
case "${1:-}" in
  list) echo "$all" ;;
  where) awk -v f="$2" '$1 == f {print $3}' "$table" ;;
  present)
    build=$2; shift 2
    [ $# -gt 0 ] || set -- $all
    for f in "$@"; do
      row=$(awk -v f="$f" '$1 == f' "$table")
      if [ -z "$row" ]; then
        echo "pario: '$f' names no known MPI flavour ($(echo $all | sed 's/ /, /g'); cmake/flavours.txt)" >&2
        exit 2
      fi
      read -r _ _ where mpicc _ <<<"$row"
      if [ "$where" = venv ]; then
        [ -x "$build/mpi/$f/bin/$mpicc" ] && echo "$f" ||
          echo "pario: skipping $f: its MPI is not installed (no $build/mpi/$f/bin/$mpicc; make deps installs it)" >&2
      else
        command -v "$mpicc" >/dev/null && echo "$f" ||
          echo "pario: skipping $f: its MPI is not installed (no $mpicc on PATH; make deps installs it)" >&2
      fi
    done ;;
  *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
