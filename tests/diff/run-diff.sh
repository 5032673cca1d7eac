#!/usr/bin/env bash
# Differential test: replay one seed's random MPI-IO call sequence with the native MPI-IO and
# with pario, on a file pre-filled with a known pattern. pario must agree with the harness's
# independent model (built with MPI_Pack/MPI_Unpack only); the two files must be byte-identical
# and the logs (return codes, counts, data checksums) identical, except where the native run
# itself contradicts the model, which is reported as a bug of the native MPI-IO.
# With MODE "model" only the pario run is checked, against the model (for an MPI whose own
# MPI-IO is a poor oracle: Open MPI's OMPIO computes seek(END) and short counts differently).
# usage: run-diff.sh FLAVOUR NP SEED OPS DIFFTEST LIBPARIO WORKDIR [diff|model]
set -uo pipefail
flavour=$1 np=$2 seed=$3 ops=$4 prog=$5 lib=$6 work=$7 mode=${8:-diff}
here=$(cd "$(dirname "$0")" && pwd)
run=$here/../../scripts/mpirun.sh
d=$work/diff.$flavour.np$np.s$seed
rm -rf "$d" && mkdir -p "$d"
"$run" "$flavour" "$np" --pario "$lib" "$prog" --seed "$seed" --ops "$ops" --file "$d/pario.dat" \
  --log "$d/pario.log" --model --expect-pario >"$d/pario.out" 2>&1
prc=$?
if [ "$mode" = model ]; then
  [ $prc -eq 0 ] && { echo "PASS: pario agrees with the model ($flavour, $np ranks, seed $seed)"; rm -rf "$d"; exit 0; }
  echo "FAIL: pario run (seed $seed, $np ranks, $flavour) exited $prc:"; grep -v '^\s*$' "$d/pario.out" | head -20
  exit 1
fi
"$run" "$flavour" "$np" "$prog" --seed "$seed" --ops "$ops" --file "$d/native.dat" \
  --log "$d/native.log" --model --expect-native >"$d/native.out" 2>&1
nrc=$?
if [ $prc -ne 0 ]; then
  echo "FAIL: pario run (seed $seed, $np ranks, $flavour) exited $prc:"; grep -v '^\s*$' "$d/pario.out" | head -20
  exit 1
fi
if [ $nrc -eq 4 ]; then
  echo "native $flavour contradicts the model (its own bug); pario agrees with the model:"
  grep -m3 'MODEL MISMATCH' "$d/native.out"
  echo "PASS (pario checked against the model only)"
  exit 0
fi
[ $nrc -ne 0 ] && { echo "FAIL: native run exited $nrc"; head -20 "$d/native.out"; exit 1; }
status=0
if ! cmp "$d/native.dat" "$d/pario.dat"; then echo "FAIL: files differ"; status=1; fi
for r in $(seq 0 $((np - 1))); do
  if ! diff <(grep -v '^sync_point' "$d/native.log.$r") <(grep -v '^sync_point' "$d/pario.log.$r") >"$d/log.$r.diff"; then
    echo "FAIL: rank $r logs differ:"; head -10 "$d/log.$r.diff"; status=1
  fi
done
[ $status -eq 0 ] && { echo "PASS: files and logs identical ($flavour, $np ranks, seed $seed, $ops ops)"; rm -rf "$d"; }
exit $status
