"""Checks the trace that tests/trace/traced.c leaves (ctest label trace): every rank wrote one
file with a valid header; on every thread the spans nest (enter/exit order); the main thread's
MPI_File calls come in program order; the collective write's decision, plan and rounds lie
inside the call, with the aggregators' driver writes inside their rounds; the independent
strided read is a sieving window; the nonblocking read's job was queued and ran; the ordered
write waited inside its call; the errhandler calls and c2f/f2c name the file; each completion
of a nonblocking request (MPI_Wait, MPI_Test, MPI_Waitall) is a span naming its job, after
the call that started it; every driver operation has its own request id; and the merged
JSON and OTF2 outputs are readable.

The trace files are read here, with the standard library, as docs/trace-format.md describes
them, not by the code under test (python/pario/tracefile.py): a line that is not a JSON object
fails the check instead of being skipped, and each thread's spans must come in the writers'
order (by their end, children before parents). pario's merge (JSON, OTF2) is then checked as
an output, read back by json and OTF2's own reader.

--clock=H: the clocks were measured at open and the ranks sit on H hosts (H = 1: every
offset and bound is exactly 0; more: ranks off rank 0's host have a bound, and since all
processes of the test share one real clock, the offset itself is the residual error and must
lie within the bound).

usage: check_trace.py DIR NP [--clock=H] [--otf2]"""

import glob
import json
import os
import re
import sys

EXPECTED_CALLS = ["MPI_File_open", "MPI_File_set_errhandler", "MPI_File_get_errhandler", "MPI_File_call_errhandler",
                  "MPI_File_c2f", "MPI_File_f2c", "MPI_File_set_view", "MPI_File_write_all", "MPI_File_read_at_all",
                  "MPI_File_read_at", "MPI_File_write_at", "MPI_File_iread_at", "MPI_File_iread_at", "MPI_File_iread_at",
                  "MPI_File_iread_at", "MPI_File_write_all_begin",
                  "MPI_File_write_all_end", "MPI_File_set_view", "MPI_File_write_ordered",
                  "MPI_File_write_shared", "MPI_File_sync", "MPI_File_read_at", "MPI_File_close"]
ABI_TWINS = {"MPI_File_toint": "MPI_File_c2f", "MPI_File_fromint": "MPI_File_f2c"}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


class Proc:
    """One client file: its header's name, rank and clock, the files it names, its events."""

    def __init__(self, path, header):
        self.path, self.name, self.rank = path, header["name"], header["rank"]
        self.offset = header.get("clock_offset_ns") or 0
        self.err = header["clock_err_ns"] if header.get("clock_err_ns") is not None else -1
        self.files, self.spans, self.instants = {}, [], []


def read_client(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if not check(text.endswith("\n"), f"{path}: the last line is cut"):
        return None
    lines = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            obj = json.loads(line)
        except ValueError as e:
            check(False, f"{path}:{n}: not JSON ({e})")
            return None
        if not check(isinstance(obj, dict) and isinstance(obj.get("type"), str), f"{path}:{n}: not an event: {line}"):
            return None
        lines.append(obj)
    h = lines[0] if lines else {}
    if not check(h.get("type") == "header" and h.get("format") == "pario-trace" and h.get("version") == 1
                 and h.get("kind") == "client" and isinstance(h.get("rank"), int), f"{path}: header {h}"):
        return None
    p = Proc(path, h)
    last = {}  # tid -> (end, -start) of its last span: the writers' order
    for n, e in enumerate(lines[1:], 2):
        typ = e["type"]
        if typ == "span":
            check(isinstance(e.get("t"), int) and isinstance(e.get("d"), int) and e["d"] >= 0,
                  f"{path}:{n}: span without an integer t and d >= 0")
            key = (e["t"] + e["d"], -e["t"])
            check(key >= last.get(e.get("tid", 0), key), f"{path}:{n}: {e['name']} written out of its thread's order")
            last[e.get("tid", 0)] = key
            p.spans.append(e)
        elif typ == "instant":
            p.instants.append(e)
        elif typ == "file":
            p.files[e["id"]] = e["name"]
        elif typ == "clock":  # a newer measurement than the header's: the last one counts
            p.offset, p.err = e["clock_offset_ns"], e["clock_err_ns"]
        elif typ == "dropped":
            check(False, f"{path}:{n}: the writer lost {e.get('events')} event(s): {e.get('reason')}")
    return p


def read_trace(d):
    """The client files of the directory, by rank."""
    paths = [x for x in sorted(glob.glob(os.path.join(d, "*.jsonl")))
             if re.fullmatch(r"client-\d+-\d+\.jsonl", os.path.basename(x))]
    procs = [p for p in map(read_client, paths) if p is not None]
    return sorted(procs, key=lambda p: p.rank)


def by_thread(p):
    """Each thread's spans by start, the longer first at equal starts (parents before children)."""
    out = {}
    for e in p.spans:
        out.setdefault(e.get("tid", 0), []).append(e)
    for v in out.values():
        v.sort(key=lambda e: (e["t"], -e["d"]))
    return out


def inside(child, parent):
    return parent["t"] <= child["t"] and child["t"] + child["d"] <= parent["t"] + parent["d"]


def check_nesting(p):
    for tid, spans in by_thread(p).items():
        stack = []
        for e in spans:
            while stack and stack[-1]["t"] + stack[-1]["d"] <= e["t"]:
                stack.pop()
            if stack and not check(inside(e, stack[-1]),
                                   f"{p.name} thread {tid}: {e['name']} overlaps {stack[-1]['name']} without nesting"):
                return
            stack.append(e)


def top_calls(p):
    main = [e for e in by_thread(p).get(0, []) if e["cat"] == "api" and e["name"].startswith("MPI_File_")]
    tops, end = [], -1
    for e in main:
        if e["t"] >= end:
            tops.append(e)
            end = e["t"] + e["d"]
    return tops


def check_collective(p, call):
    main = by_thread(p)[0]
    within = [e for e in main if inside(e, call) and e is not call]
    decide = [e for e in p.instants if e["name"] == "decide" and call["t"] <= e["t"] <= call["t"] + call["d"]]
    if not check(decide, f"{p.name}: no collective decision inside {call['name']}"):
        return
    check(decide[0]["args"].get("aggregate") == 1 and "enabled" in decide[0]["args"].get("why", ""),
          f"{p.name}: {call['name']} did not aggregate for the hint: {decide[0]['args']}")
    plans = [e for e in within if e["name"] == "plan"]
    rounds = [e for e in within if e["name"] == "round"]
    if not check(plans, f"{p.name}: no plan inside {call['name']}"):
        return
    check(len(rounds) == plans[0]["args"]["rounds"] and len(rounds) >= 2,
          f"{p.name}: {len(rounds)} rounds inside {call['name']}, plan says {plans[0]['args']['rounds']}")
    check([r["args"]["round"] for r in rounds] == list(range(len(rounds))), f"{p.name}: rounds out of order")
    writes = [e for e in within if e["cat"] == "driver" and e["name"] == "pwritev"]
    if plans[0]["args"]["me_aggr"] >= 0:
        check(writes and all(any(inside(w, r) for r in rounds) for w in writes),
              f"{p.name}: the aggregator's writes are not inside its rounds")
    else:
        check(not writes, f"{p.name}: a non-aggregator wrote to the file in a collective write")
    check(sum(r["args"]["sent"] for r in rounds) + sum(r["args"]["recv"] for r in rounds) > 0 or p.rank == 0,
          f"{p.name}: no bytes exchanged in the rounds")


def check_completions(p, calls, first, fid):
    """iread_at + MPI_Wait, iread_at + MPI_Test loop, two iread_at + MPI_Waitall: one span per
    completing call (none for the tests that found the request unfinished), each after its
    iread_at, naming the job its queued event named, and the file."""
    comp = sorted((e for e in by_thread(p)[0] if e["cat"] == "api" and e["name"] in
                   ("MPI_Wait", "MPI_Test", "MPI_Waitall")), key=lambda e: e["t"])
    if not check([e["name"] for e in comp] == ["MPI_Wait", "MPI_Test", "MPI_Waitall"],
                 f"{p.name}: completions {[e['name'] for e in comp]}, expected MPI_Wait, MPI_Test, MPI_Waitall"):
        return
    queued = sorted((e for e in p.instants if e["name"] == "queued" and e["args"].get("op") == "MPI_File_iread_at"),
                    key=lambda e: e["t"])
    if not check(len(queued) == 4, f"{p.name}: {len(queued)} iread_at jobs queued, expected 4"):
        return
    for e, q, start, n in zip(comp, (queued[0], queued[1], queued[2]), (first, first + 1, first + 2), (1, 1, 2)):
        a = e["args"]
        check(a.get("job") == q["args"]["job"] and a.get("file") == fid and a.get("requests") == n
              and a.get("rc") == 0, f"{p.name}: {e['name']} args {a}, expected job {q['args']['job']}, {n} request(s)")
        check(e["t"] >= calls[start]["t"] + calls[start]["d"], f"{p.name}: {e['name']} before its iread_at returned")


def check_rank(p, np):
    check(p.files and any(n.endswith(".dat") for n in p.files.values()), f"{p.name}: the file was not named")
    check_nesting(p)
    calls = top_calls(p)
    # The MPI standard ABI build converts handles with toint/fromint where the others c2f/f2c.
    names = [ABI_TWINS.get(c["name"], c["name"]) for c in calls]
    check(names == EXPECTED_CALLS, f"{p.name}: calls {[c['name'] for c in calls]}, expected {EXPECTED_CALLS}")
    if len(calls) != len(EXPECTED_CALLS):
        return
    check(all(c["args"].get("rc") == 0 for c in calls), f"{p.name}: a call failed")
    at = {n: i for i, n in reversed(list(enumerate(EXPECTED_CALLS)))}  # first index of each name
    wa = calls[at["MPI_File_write_all"]]
    check(wa["args"]["bytes"] == 4096 * 4 and wa["args"]["coll"] == 1
          and wa["args"]["type_size"] == 4, f"{p.name}: write_all's summary {wa['args']}")
    check_collective(p, wa)
    fid = wa["args"]["file"]
    for c in calls[1:6]:
        check(c["args"].get("file") == fid and fid, f"{p.name}: {c['name']} does not name the file: {c['args']}")
    check(calls[4]["args"].get("fint", 0) > 0 and calls[5]["args"].get("fint") == calls[4]["args"]["fint"],
          f"{p.name}: c2f/f2c Fortran handles {calls[4]['args']} {calls[5]['args']}")
    check_completions(p, calls, at["MPI_File_iread_at"], fid)
    main = by_thread(p)[0]
    sieve = [e for e in main if e["name"] == "read_window" and inside(e, calls[at["MPI_File_read_at"]])]
    check(sieve and np > 1, f"{p.name}: the strided independent read has no sieving window")
    queued = [e for e in p.instants if e["name"] == "queued" and e["args"].get("op") == "MPI_File_iread_at"]
    jobs = [e for e in p.spans if e["name"] == "job" and queued and e["args"]["job"] == queued[0]["args"]["job"]]
    check(queued and jobs and jobs[0]["args"]["bytes"] == 4096 * 4, f"{p.name}: the iread_at job was not traced")
    waits = [e for e in p.spans if e["name"] == "ordered_wait" and inside(e, calls[at["MPI_File_write_ordered"]])]
    check(waits, f"{p.name}: no ordered wait inside MPI_File_write_ordered")
    flows = [e.get("flow") for e in p.spans if e["cat"] == "driver" and e["name"] in ("preadv", "pwritev")]
    check(flows and all(flows) and len(set(flows)) == len(flows), f"{p.name}: driver request ids missing or reused")


def check_clock(clients, hosts):
    errs = [(p.rank, p.offset, p.err) for p in clients]
    check(all(e >= 0 for _, _, e in errs), f"clock not measured: {errs}")
    if hosts == 1:
        check(all(o == 0 and e == 0 for _, o, e in errs), f"one host, yet offsets {errs}")
        return
    off = [(r, o, e) for r, o, e in errs if e > 0]
    check(off, f"no rank off rank 0's host was measured: {errs}")
    check(all(abs(o) <= e for _, o, e in errs), f"an offset outside its bound: {errs}")
    for r, o, e in sorted(errs):
        print(f"check_trace: rank {r}: clock offset {o} ns (true 0), bound {e} ns")


def main():
    d, np = sys.argv[1], int(sys.argv[2])
    clients = read_trace(d)
    for a in sys.argv[3:]:
        if a.startswith("--clock="):
            check_clock(clients, int(a.split("=", 1)[1]))
    check(len(clients) == np, f"{len(clients)} client files for {np} ranks")
    check([p.rank for p in clients] == list(range(np)), "ranks missing")
    for p in clients:
        check_rank(p, np)
    # pario's merge, as an output: the code under test from here on
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    from pario import trace as tr
    t = tr.load(d)
    check(not t.warnings, f"pario's reader warned: {t.warnings}")
    out = os.path.join(d, "merged.json")
    tr.merge_json(t, out)
    with open(out) as fh:
        doc = json.load(fh)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"}
    check(all(any(n.startswith(f"rank {r}") for n in names) for r in range(np)), f"process names {names}")
    if "--otf2" in sys.argv:
        import otf2
        tr.merge_otf2(t, os.path.join(d, "otf2"))
        with otf2.reader.open(os.path.join(d, "otf2", "traces.otf2")) as r:
            n = sum(1 for _ in r.events)
        check(n > 0, "OTF2 archive has no events")
    for f in failures:
        print("check_trace: " + f, file=sys.stderr)
    print("check_trace: " + ("FAILED" if failures else f"ok ({np} ranks)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
