#!/usr/bin/env bash
# Runs one pario-bench ctest and judges it: the exit status, and every line of the results file
# against the contract of bench/README.md (keys, types, per-suite params and metrics).
# usage: ctest-check.sh MODE RESULTS_FILE COMMAND...
#   ok           exit 0, every measurement "ok" and verified (true, or null when nothing written)
#   supported    exit 0, every measurement "ok" or "unsupported" (runs under pario)
#   reject       the checker must reject injected corruption: exit != 0, "verification failed"
#                printed, and a measurement with verified false and status "failed"
#   limits       as ok, and every measurement has the spread of --repeat (params.repeat, and
#                <metric>_min <= <metric> <= <metric>_max for its figures) and, where the suite
#                measures the machine's limit, the limit and share = figure / limit
#   cold         as ok, and every read (noncontig --cold) fetched at least its requested bytes
#                from storage (device_read_amplification >= 0.99): the page cache was dropped.
#                Not checked where the results' directory is on tmpfs (nothing is fetched) or
#                /proc/self/io is absent (the metric is omitted, with device_read_reason)
# In every mode, a metric given with _min and _max must lie between them.
set -u
mode=$1 results=$2
shift 2
rm -f "$results"
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
fail() { echo "ctest-check: FAIL: $*" >&2; exit 1; }
case $mode in
  ok|supported|limits|cold) [ "$rc" -eq 0 ] || fail "exit status $rc" ;;
  reject)
    [ "$rc" -ne 0 ] || fail "corrupted data was accepted (exit status 0)"
    grep -q "verification failed" <<<"$out" || fail "no 'verification failed' message" ;;
  *) fail "unknown mode $mode" ;;
esac
[ -s "$results" ] || fail "no results written to $results"
command -v python3 >/dev/null || { echo "ctest-check: python3 missing, results contract not checked"; exit 0; }
python3 - "$mode" "$results" "$(stat -f -c %T "$(dirname "$results")")" <<'EOF' || exit 1
import json, re, sys
mode, path, fstype = sys.argv[1], sys.argv[2], sys.argv[3]
PARAMS = {
    "overlap": "size elements iterations fill_elements fill_iterations scenario io_ratio api regime hints",
    "cfs": "test block_size file_size groups api preallocate repeat hints",
    "noncontig": "region_size region_count region_spacing mem file access op sync hints",
    "sharedfp": "mode data_size loops variability sizing hints",
    "btio": "n iterations write_every mode compute_cost hints",
    "remote": "test mode block_size size_per_rank depth servers repeat hints",
    "datarep": "datarep access size hints",
    "viewswitch": "iterations piece block info repeat hints",
    "metascale": "mode ranks iterations runs block counted irregular hints",
}
METRICS = {
    "overlap": "reduce_p_time reduce_s_time ratio reduce_ps_time p_avg_calc p_avg_io s_avg_calc "
               "s_avg_io avg_time_diff quality",
    "cfs": "seconds mb_per_s", "noncontig": "seconds mb_per_s",
    "sharedfp": "seconds mb_per_s records_per_s records", "btio": "compute_s io_s total_s mb_per_s",
    "remote": "seconds mb_per_s mb_per_s_min mb_per_s_max requests_per_s",
    "datarep": "seconds mb_per_s",
    "viewswitch": "seconds us_per_iter mb_per_s",
    "metascale": "seconds us_per_iter peak_rss_kib_mean peak_rss_kib_max",
}
# limits mode: the figures with a spread, and (metric, limit, how share is computed) per test.
SPREAD = {"overlap": "ratio seconds mb_per_s ideal_ratio share", "noncontig": "seconds mb_per_s",
          "sharedfp": "seconds mb_per_s records_per_s", "btio": "compute_s io_s total_s mb_per_s",
          "viewswitch": "seconds us_per_iter mb_per_s"}
def limit_of(m):
    s, t = m["suite"], m["test"]
    if s == "sharedfp" and t in ("write_shared", "iwrite_shared"):
        return "records_per_s", "limit_records_per_s", lambda v, l: v / l
    if s == "noncontig" and t.startswith("collective-"):
        return "mb_per_s", "device_mb_per_s", lambda v, l: v / l
    if s == "overlap":
        return None, "ideal_ratio", None      # share: median of per-run ideal / ratio
    return None
def num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)
TYPES = {"suite": str, "test": str, "impl": str, "impl_version": str, "mpi": str, "mpi_version": str,
         "ranks": int, "params": dict, "metrics": dict, "status": str, "time": str}
errors, lines = [], [l for l in open(path) if l.strip()]
rejected = False
for n, line in enumerate(lines, 1):
    where = f"{path}:{n}"
    try:
        m = json.loads(line)
    except ValueError as e:
        errors.append(f"{where}: not JSON: {e}"); continue
    for k, t in TYPES.items():
        if not isinstance(m.get(k), t):
            errors.append(f"{where}: key {k!r} missing or not {t.__name__}")
    if errors:
        continue
    s = m["suite"]
    if s not in PARAMS or m["impl"] not in ("native", "pario") or m["status"] not in ("ok", "unsupported", "failed"):
        errors.append(f"{where}: bad suite/impl/status"); continue
    if m.get("verified", 0) not in (True, False, None) or not (m.get("error") is None or isinstance(m["error"], str)):
        errors.append(f"{where}: bad verified/error")
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", m["time"]):
        errors.append(f"{where}: time not ISO-8601 UTC")
    errors += [f"{where}: params lacks {p}" for p in PARAMS[s].split() if p not in m["params"]]
    if m["status"] == "ok":
        errors += [f"{where}: metrics lacks number {k}" for k in METRICS[s].split()
                   if not isinstance(m["metrics"].get(k), (int, float))]
    met = m["metrics"]
    for k, v in met.items():
        lo, hi = met.get(k + "_min"), met.get(k + "_max")
        if num(v) and num(lo) and num(hi) and not lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9):
            errors.append(f"{where}: {k} {v} outside its spread [{lo}, {hi}]")
    if mode == "limits" and m["status"] == "ok":
        if not (isinstance(m["params"].get("repeat"), int) and m["params"]["repeat"] >= 1):
            errors.append(f"{where}: params lacks repeat")
        errors += [f"{where}: metrics lack {k}_min/{k}_max" for k in SPREAD.get(s, "").split()
                   if not (num(met.get(k + "_min")) and num(met.get(k + "_max")))]
        lim = limit_of(m)
        if lim:
            fig, lk, share = lim
            if not (num(met.get(lk)) and num(met.get("share")) and met[lk] > 0):
                errors.append(f"{where}: {m['test']}: no limit {lk} and share: "
                              f"{m['params'].get('limit_reason')}")
            elif share and abs(met["share"] - share(met[fig], met[lk])) > 1e-6 * met["share"]:
                errors.append(f"{where}: share {met['share']} is not {fig} / {lk}")
    if mode == "cold" and m["status"] == "ok" and m["params"].get("op") == "read":
        dra = met.get("device_read_amplification")
        if not m["params"].get("cold"):
            errors.append(f"{where}: {m['test']}: params.cold is not true")
        elif fstype == "tmpfs":
            print(f"ctest-check: {where}: test files on tmpfs: storage reads not checked")
        elif dra is None and not m["params"].get("device_read_reason"):
            errors.append(f"{where}: no device_read_amplification and no device_read_reason")
        elif dra is not None and dra < 0.99:
            errors.append(f"{where}: {m['test']}: cold read fetched {dra} bytes from storage per byte "
                          "requested (want >= 0.99: were the pages dropped?)")
    st, ver = m["status"], m.get("verified")
    rejected |= st == "failed" and ver is False
    if mode in ("ok", "limits", "cold") and (st != "ok" or ver is False):
        errors.append(f"{where}: {m['test']}: status {st}, verified {ver}: {m.get('error')}")
    if mode == "supported" and st == "failed":
        errors.append(f"{where}: {m['test']}: failed: {m.get('error')}")
if mode == "reject" and not rejected:
    errors.append(f"{path}: no measurement with status failed and verified false")
for e in errors:
    print("ctest-check: FAIL:", e, file=sys.stderr)
print(f"ctest-check: {len(lines)} result line(s) checked, {len(errors)} problem(s)")
sys.exit(1 if errors else 0)
EOF
