#!/usr/bin/env bash
# Check the files a PnetCDF test program made, as PnetCDF's own parallel_run.sh does after each
# run: every file in the current directory (the run's scratch directory; not the hidden ones,
# which are run-client.sh's) must pass PnetCDF's ncvalidator. Some programs make several files
# (add_var: FILE, FILE2, FILE5; mcoll_perf: FILE.2.4.0.nc ... FILE.2.4.9.nc); the readers of
# test/cdf_format make none, and then there is nothing to check.
#   usage: validate.sh NCVALIDATOR      (run by run-client.sh --after, after the program)
set -euo pipefail
validator=$1
n=0 bad=0
for f in *; do
  [ -f "$f" ] || continue
  if "$validator" -q "$f" >/dev/null 2>&1; then
    n=$((n + 1))
  else
    echo "validate: $f is not a valid netCDF file ($validator):" >&2
    "$validator" "$f" 2>&1 | head -20 >&2 || true
    bad=$((bad + 1))
  fi
done
if [ $bad -gt 0 ]; then
  echo "validate: $bad file(s) failed $validator" >&2
  exit 1
fi
if [ $n -eq 0 ]; then
  echo "validate: the run made no file to check"
else
  echo "validate: $n file(s) valid ($validator -q)"
fi
