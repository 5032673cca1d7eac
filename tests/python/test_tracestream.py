"""The streaming readers (`pario trace merge -o` and `stats`: python/pario/tracestream.py)
against the trace in memory and against the definitions computed the direct way (nesting
per thread, unions of intervals, overlaps with the collective calls), on a synthetic trace
in the writers' order and on one that is not."""

import collections
import json
import os

import pytest

from pario import cli
from pario import trace as tr
from pario.tracefile import by_thread, outermost, overlap
from synthtrace import write_big


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("big") / "tr")
    n = write_big(d, 4000, ranks=3)
    assert n >= 4000
    return d


def _union(ivs):
    total, end = 0, None
    for a, b in sorted(ivs):
        if b <= a:
            continue
        if end is None or a >= end:
            total, end = total + b - a, b
        elif b > end:
            total, end = total + b - end, b
    return total


def _direct(p, win):
    """A rank's times the direct way: the definitions of docs/trace-format.md, all spans at once."""
    o = p.offset
    clip = lambda ivs: [(max(a + o, win[0]), min(b + o, win[1])) if win else (a + o, b + o) for a, b in ivs]
    api = lambda e: e["cat"] == "api" and e["name"].startswith("MPI_File_")
    coll = lambda e: e["args"].get("coll") == 1 and e["cat"] == "api"
    io = cl = exch = fa = 0
    for spans in by_thread(p).values():
        io += _union(clip(outermost(spans, api)))
        ivs = clip(outermost(spans, coll))
        cl += _union(ivs)
        exch += sum(overlap(e["t"] + o, e["t"] + e["d"] + o, ivs) for e in spans if e["name"] == "exchange")
        fa += sum(overlap(e["t"] + o, e["t"] + e["d"] + o, ivs) for e in spans if e["cat"] == "driver")
    inside = [e for e in p.spans if api(e) and (win is None or win[0] <= e["t"] + o < win[1])]
    return io / 1e9, cl / 1e9, exch / 1e9, fa / 1e9, sum(e["args"]["bytes"] for e in inside)


@pytest.mark.parametrize("window", [None, (0.0005, 0.003)])
def test_stats_stream_equal_memory_and_direct(big, window):
    mem, st = tr.load(big), tr.scan(big)
    assert all(not p.spans and p.ordered and p.events for p in st.procs)  # nothing kept, the writers' order
    assert sum(p.events for p in st.procs) == sum(len(p.spans) + len(p.instants) + len(p.counters)
                                                   for p in mem.procs)
    assert st.bounds() == mem.bounds()
    w = None if window is None else tr.window_of(mem, *window)
    assert tr.rank_stats(st, w) == tr.rank_stats(mem, w)
    assert tr.server_stats(st, window=w) == tr.server_stats(mem, window=w)
    for p, r in zip(mem.clients, tr.rank_stats(st, w)):
        io, coll, exch, fa, nbytes = _direct(p, w)
        assert (r.io_time, r.coll_time, r.exchange, r.file_access) == pytest.approx((io, coll, exch, fa), abs=1e-12)
        assert r.bytes_written + r.bytes_read == nbytes and r.coll_time > 0 and r.exchange > 0
    s, = tr.server_stats(st, window=w)
    srv = mem.servers[0]
    assert s.storage_ops == sum(1 for e in srv.spans if e["cat"] == "storage" and
                                (w is None or w[0] < e["t"] + srv.offset + e["d"] and e["t"] + srv.offset < w[1]))


def _events(path):
    with open(path) as fh:
        doc = json.load(fh)
    c = collections.Counter()
    for e in doc["traceEvents"]:
        if e["name"] == "bytes/s":  # sums of floats: the order of the additions differs
            e = dict(e, args={"bytes/s": round(e["args"]["bytes/s"], 3)})
        c[json.dumps(e, sort_keys=True)] += 1
    return doc, c


def test_merge_stream_equal_memory(big, tmp_path):
    a, b = str(tmp_path / "stream.json"), str(tmp_path / "memory.json")
    n = tr.merge_json(tr.scan(big), a)
    assert tr.merge_json(tr.load(big), b) == n
    doc, got = _events(a)
    assert got == _events(b)[1] and sum(got.values()) == n
    mem = tr.load(big)
    spans = sum(len(p.spans) for p in mem.procs)
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == spans
    # one arrow per request that reached the server: a start, then a step or finish per server span
    ids = {e["flow"] for p in mem.clients for e in p.spans if e.get("flow")}
    served = collections.Counter(e["flow"] for p in mem.servers for e in p.spans if e.get("flow") in ids)
    flow = collections.Counter(e["ph"] for e in doc["traceEvents"] if e["ph"] in "stf")
    assert flow == {"s": len(served), "f": len(served), "t": sum(served.values()) - len(served)}


def test_out_of_order_file_read_in_memory(big, tmp_path):
    """A file whose spans are not in the writers' order (parents first) is sorted in memory:
    the same statistics."""
    d = tmp_path / "shuffled"
    d.mkdir()
    for name in os.listdir(big):
        with open(os.path.join(big, name)) as fh:
            lines = fh.readlines()
        if name.startswith("client-0"):
            lines = lines[:3] + sorted(lines[3:], key=lambda x: json.loads(x).get("t", 0))
        (d / name).write_text("".join(lines))
    st = tr.scan(str(d))
    assert [p.ordered for p in st.clients] == [False, True, True]
    assert tr.rank_stats(st) == tr.rank_stats(tr.load(big))


def test_cli_streams_with_losses(big, tmp_path, capsys):
    """A bad line and a cut last line: the same warnings, the same totals as in memory."""
    d = tmp_path / "lossy"
    d.mkdir()
    for name in os.listdir(big):
        text = open(os.path.join(big, name)).read()
        if name.startswith("client-1"):
            text = text.replace("\n", "\n{oops\n", 1) + '{"type":"span","t":3'
        (d / name).write_text(text)
    assert cli.main(["trace", "stats", "--json", str(d)]) == 0
    cap = capsys.readouterr()
    assert "rank 1: 1 line(s) skipped" in cap.err and "last line incomplete" in cap.err
    mem = tr.load(str(d))
    assert json.loads(cap.out)["ranks"][1]["io_time"] == tr.rank_stats(mem)[1].io_time
    out = str(tmp_path / "m.json")
    assert cli.main(["trace", "merge", str(d), "-o", out]) == 0
    assert "rank 1: 1 line(s) skipped" in capsys.readouterr().err
    assert _events(out)[1] == collections.Counter(json.dumps(
        dict(e, args={"bytes/s": round(e["args"]["bytes/s"], 3)}) if e["name"] == "bytes/s" else e, sort_keys=True)
        for e in json.loads(json.dumps(tr.chrome_events(mem))))


def test_merge_without_server(big, tmp_path):
    """Requests that reached no server of the trace: no arrow, and the rest merged."""
    d = tmp_path / "clients"
    d.mkdir()
    for name in os.listdir(big):
        if name.startswith("client-"):
            (d / name).write_text(open(os.path.join(big, name)).read())
    out = str(tmp_path / "m.json")
    n = tr.merge_json(tr.scan(str(d)), out)
    doc, got = _events(out)
    assert sum(got.values()) == n and not [e for e in doc["traceEvents"] if e["ph"] in "stf"]
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == sum(len(p.spans) for p in tr.load(str(d)).procs)


def test_merge_spilled_and_parallel_same_bytes(big, tmp_path, monkeypatch):
    """The request hops spilled to a temporary file and linked bucket by bucket, and the
    processes' files merged by worker processes: the same bytes as the table sorted in memory
    by one process; no temporary file left behind."""
    import tempfile
    from pario import traceflows
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    ref = tmp_path / "ref.json"
    tr.merge_json(tr.scan(big), str(ref))  # one process, the hops sorted in memory
    monkeypatch.setattr(traceflows.Flows, "LIMIT", 64)
    out = {}
    for jobs in (1, 2, 3):
        path = tmp_path / f"j{jobs}.json"
        tr.merge_json(tr.scan(big, jobs), str(path), jobs)
        out[jobs] = path.read_bytes()
    assert out[1] == out[2] == out[3] == ref.read_bytes()
    assert sum(1 for e in json.loads(ref.read_bytes())["traceEvents"] if e["ph"] == "s") > 64
    assert not list(scratch.iterdir()) and not list(tmp_path.glob("*.tmp"))
    assert cli.main(["trace", "merge", big, "-o", str(tmp_path / "c.json"), "-j", "2"]) == 0
    assert (tmp_path / "c.json").read_bytes() == out[1]
    assert cli.main(["trace", "merge", big, "-o", str(tmp_path / "c.json"), "-j", "0"]) == 2


_RSS = """
import resource, sys
from pario import trace as tr, tracechrome, traceflows
traceflows.Flows.LIMIT, tracechrome.CLAMP_CAP = 4096, 256  # the bounds small, to reach them
tr.merge_json(tr.scan(sys.argv[1]), sys.argv[2])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_merge_memory_flat(tmp_path):
    """Peak memory of a merge does not grow with the trace: 3x10^4 and 1.2x10^5 events (about
    19,000 and 75,000 request hops, both far past the in-memory limit, which is set small
    here) within 1.5 MB of each other. (Before the spill, the hop table alone grew 10 MB.)"""
    import subprocess
    import sys
    rss = []
    for n in (30_000, 120_000):
        d = str(tmp_path / f"t{n}")
        write_big(d, n)
        r = subprocess.run([sys.executable, "-c", _RSS, d, str(tmp_path / "m.json")], capture_output=True,
                           text=True, check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        rss.append(int(r.stdout.split()[-1]))
    assert rss[1] - rss[0] < 1536, rss


_RSS_REPORT_OTF2 = """
import os, resource, sys
from pario import trace as tr, tracereport, tracesort, tracetables
tracesort.ThreadSort.CHUNK, tracereport.BUDGET, tracetables.COLLECTIVES = 2048, 2000, 50  # small, to reach them
t = tr.scan(sys.argv[1])
if sys.argv[3] == "report":
    tracereport.write_report(t, sys.argv[1], sys.argv[2])
else:
    tr.merge_otf2(t, sys.argv[2])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


@pytest.mark.parametrize("what", ["report", "otf2"])
def test_report_and_otf2_memory_flat(tmp_path, what):
    """Peak memory of `trace report` and of the OTF2 export does not grow with the trace
    (their bounds set small): 3x10^4 and 1.2x10^5 events within 2 MB of each other, beyond,
    for OTF2, what the OTF2 writer itself holds: python3-otf2 keeps the events it has written
    in memory until the archive closes (about the size of its .evt files; a loop of bare
    enter/leave events, without pario, grows as much), so that growth is allowed for. (Before
    they streamed, 10^6 events took 1.29 and 1.08 GB: about 1 KB an event, 90 MB here.)"""
    import subprocess
    import sys
    if what == "otf2":
        pytest.importorskip("otf2")
    rss, written = [], []
    for n in (30_000, 120_000):
        d = str(tmp_path / f"t{n}")
        write_big(d, n)
        out = str(tmp_path / f"out{n}" / ("r.html" if what == "report" else "otf2"))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        r = subprocess.run([sys.executable, "-c", _RSS_REPORT_OTF2, d, out, what], capture_output=True,
                           text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        assert r.returncode == 0, r.stderr
        rss.append(int(r.stdout.split()[-1]))
        written.append(sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(out) for f in fs
                           if f.endswith(".evt")) if what == "otf2" else 0)
    assert rss[1] - rss[0] < 2048 + (written[1] - written[0]) // 1024, (rss, written)


def test_otf2_interrupted_leaves_nothing(tmp_path, monkeypatch):
    """Ctrl-C in the middle of the OTF2 export: no half-written archive, no temporary files
    (the on-disk sort's runs, the request peers' database)."""
    pytest.importorskip("otf2")
    import tempfile
    from pario import tracesort
    d = str(tmp_path / "t")
    write_big(d, 20_000)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(tracesort.ThreadSort, "CHUNK", 512)
    calls = [0]
    real = tr._otf2_values

    def stop(*a):
        calls[0] += 1
        if calls[0] == 5000:
            raise KeyboardInterrupt
        return real(*a)
    monkeypatch.setattr(tr, "_otf2_values", stop)
    out = str(tmp_path / "otf2")
    with pytest.raises(KeyboardInterrupt):
        tr.merge_otf2(tr.scan(d), out)
    assert not os.path.exists(out) and os.listdir(tmp) == []
    assert calls[0] == 5000
