#!/usr/bin/env bash
# The shared file pointer acceptance matrix: pario-bench sharedfp with verification for every
# component forced with pario_sharedfp x modes 1-4 x rank counts x variability 0 and 20 %.
# Every run must exit 0 with every measurement "ok" and verified, and MPI_File_get_info must
# report the component that was asked for.
# usage: sharedfp-matrix.sh RUN LIBPARIO BENCH DIR [RANKS] [COMPONENTS]
#   RUN         launcher taking "NP [--pario LIB] PROGRAM ARGS" (scripts/mpirun.sh FLAVOUR)
#   RANKS       default "1 2 3 4 5 6 7 8"
#   COMPONENTS  default "sm rma addproc lockedfile individual"
# Extra pario-bench arguments can be given in SFP_MATRIX_ARGS (default: -d 4K -i 8).
set -u
if [ $# -lt 4 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2
fi
read -r -a run <<<"$1"
lib=$2 bench=$3 dir=$4
ranks=${5:-1 2 3 4 5 6 7 8}
components=${6:-sm rma addproc lockedfile individual}
read -r -a extra <<<"${SFP_MATRIX_ARGS:--d 4K -i 8}"
mkdir -p "$dir"
failed=0 total=0
for c in $components; do
  for np in $ranks; do
    for v in 0 20; do
      total=$((total + 1))
      res=$dir/matrix-$c-$np-$v.jsonl
      rm -f "$res"
      start=$(date +%s.%N)
      if ! out=$("${run[@]}" "$np" --pario "$lib" "$bench" sharedfp -m 1,2,3,4 -v "$v" \
                 "${extra[@]}" -H "pario_sharedfp=$c" --dir "$dir" -o "$res" 2>&1); then
        printf '%s\n' "$out" | tail -20
        echo "FAIL $c np=$np v=$v: exit status"; failed=$((failed + 1)); continue
      fi
      if ! verdict=$(python3 - "$res" "$c" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
want = sys.argv[2]
modes = sorted(r["params"]["mode"] for r in rows)
bad = [r for r in rows if r["status"] != "ok" or r["verified"] is not True
       or r["params"].get("sharedfp_component") != want]
if modes != [1, 2, 3, 4] or bad:
    print("modes %s, bad: %s" % (modes, [(r["params"]["mode"], r["status"], r["verified"],
          r["params"].get("sharedfp_component")) for r in bad]))
    sys.exit(1)
print(sum(r["metrics"]["records"] for r in rows), "records")
EOF
      ); then
        echo "FAIL $c np=$np v=$v: $verdict"; failed=$((failed + 1)); continue
      fi
      printf 'ok   %-10s np=%d v=%-2s %s (%.1f s)\n' "$c" "$np" "$v" "$verdict" \
             "$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')"
    done
  done
done
echo "sharedfp matrix: $((total - failed)) of $total passed"
[ "$failed" -eq 0 ]
