#!/usr/bin/env bash
# Read the lines probe.so wrote (see probe.c) and decide who served MPI_File_open.
#   usage: check-probe.sh DIR pario|native NP
# pario:  every open was served by libpario and every successful one reports pario_sharedfp;
# native: none was served by libpario and none reports pario_sharedfp (the test's own sanity:
#         it shows the check can fail).
# Both: at least one open, and every rank 0..NP-1 opened something.
set -euo pipefail
dir=$1 expect=$2 np=$3
shopt -s nullglob
files=("$dir"/probe.*)
if [ ${#files[@]} -eq 0 ]; then
  echo "check-probe: no MPI_File_open reached the probe (nothing in $dir)" >&2
  exit 1
fi
cat "${files[@]}" | awk -v expect="$expect" -v np="$np" '
  {
    n++
    rank = by = sfp = rc = ""
    for (i = 2; i <= 5; i++) {
      if ($i ~ /^rank=/) rank = substr($i, 6)
      else if ($i ~ /^by=/) by = substr($i, 4)
      else if ($i ~ /^sharedfp=/) sfp = substr($i, 10)
      else if ($i ~ /^rc=/) rc = substr($i, 4)
    }
    seen[rank] = 1
    obj = by; sub(/.*\//, "", obj)
    pario = (obj ~ /^libpario/)
    byobj[obj]++
    if (expect == "pario") {
      if (!pario) { bad++; print "check-probe: MPI_File_open not served by pario: " $0 > "/dev/stderr" }
      else if (rc == "0" && sfp == "none") { bad++; print "check-probe: pario handle without pario_sharedfp: " $0 > "/dev/stderr" }
    } else {
      if (pario) { bad++; print "check-probe: native run served by pario: " $0 > "/dev/stderr" }
      else if (sfp != "none") { bad++; print "check-probe: native handle reports pario_sharedfp: " $0 > "/dev/stderr" }
    }
    if (rc == "0") ok++
  }
  END {
    for (r = 0; r < np; r++) if (!(r in seen)) { bad++; print "check-probe: rank " r " opened no file" > "/dev/stderr" }
    if (ok == 0) { bad++; print "check-probe: no MPI_File_open succeeded" > "/dev/stderr" }
    s = ""; for (o in byobj) s = s " " o "(" byobj[o] ")"
    printf "check-probe: %d MPI_File_open calls (%d succeeded), served by:%s; expected %s: %s\n",
           n, ok, s, expect, bad ? "FAIL" : "ok"
    exit bad ? 1 : 0
  }'
