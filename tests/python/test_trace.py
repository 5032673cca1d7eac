"""`pario trace`: a synthetic trace directory (two ranks with different clock offsets, one server
aligned through a client's ping) whose statistics are computed by hand below; the merged JSON
checked against the trace-event schema; OTF2 read back with otf2.reader; the CLI's errors (the report: test_trace_report.py)."""

import json
import os
import shutil
import subprocess

import pytest

from pario import cli
from pario import trace as tr
from needs import need
from synthtrace import span as _span, write_lines as _write

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "fixtures", "trace-event.schema.json")
SERVER = "server 127.0.0.1:5000"


def _header(kind, name, pid, offset=0, err=-1, rank=None):
    h = {"type": "header", "format": "pario-trace", "version": 1, "kind": kind, "pid": pid, "host": "node1",
         "name": name, "clock_offset_ns": offset, "clock_err_ns": err}
    if rank is not None:
        h["rank"] = rank
    return h


@pytest.fixture
def tdir(tmp_path):
    d = tmp_path / "tr"
    d.mkdir()
    _write(d / "client-0-100.jsonl", [
        _header("client", "rank 0", 100, 0, 0, rank=0),
        {"type": "file", "id": 9, "name": "/data/out.dat", "nprocs": 2},
        {"type": "server_clock", "name": SERVER, "offset_ns": 500, "err_ns": 50},
        _span(1000, 10000, "MPI_File_write_all", "api", file=9, coll=1, bytes=4096),
        _span(1100, 900, "wait_allgather", "coll"),
        _span(2000, 500, "plan", "coll", rounds=1, me_aggr=0),
        _span(2600, 6000, "round", "coll", round=0, aggr=0, sent=0, recv=2048),
        _span(2700, 1000, "exchange", "coll"),
        _span(4000, 3000, "pwritev", "driver", flow=7, file=9, offset=0, len=4096, done=4096),
        _span(9000, 1500, "wait_done", "coll"),
        _span(20000, 2000, "MPI_File_read", "api", file=9, coll=0, bytes=100),
        _span(20500, 1000, "preadv", "driver", flow=8, file=9, offset=0, len=100, done=100),
        {"type": "counter", "t": 1500, "tid": 1, "thread": "pario-io-0", "name": "queue_depth", "value": 1},
    ])
    _write(d / "client-1-101.jsonl", [
        _header("client", "rank 1", 101, -200, 30, rank=1),
        _span(1300, 9500, "MPI_File_write_all", "api", file=9, coll=1, bytes=4096),
        _span(1400, 2000, "wait_allgather", "coll"),
        _span(3500, 5000, "round", "coll", round=0, aggr=-1, sent=2048, recv=0),
        _span(3600, 4000, "exchange", "coll"),
    ])
    _write(d / "server-5000-200.jsonl", [
        _header("server", SERVER, 200),
        _span(3600, 400, "recv", "net", flow=7, bytes=4096),
        _span(4000, 2000, "write", "storage", flow=7, bytes=4096),
        _span(6000, 1000, "write", "storage", bytes=2048),
        _span(7000, 100, "send", "net", flow=7, bytes=16),
        {"type": "counter", "t": 1000, "tid": 0, "thread": "main", "name": "cpu_pct", "value": 10},
        {"type": "counter", "t": 8000, "tid": 0, "thread": "main", "name": "cpu_pct", "value": 30},
    ])
    return str(d)


# Hand computation. Rank 0's clock is the reference; rank 1's offset is -200 ns; the server
# has no offset of its own and takes rank 0's measurement, +500 ns. The trace runs from rank
# 0's first event (1000) to the end of its read (22000): 21000 ns.
SECS = 21000e-9


def test_server_stats_by_hand(tdir):
    t = tr.load(tdir)
    assert [p.name for p in t.procs] == ["rank 0", "rank 1", SERVER]
    assert t.bounds() == (1000, 22000)
    s, = tr.server_stats(t)
    assert t.servers[0].offset == 500 and t.servers[0].err == 50
    # The server is active from its first span (recv at 3600 + 500) to its last (send ending
    # at 7100 + 500): 3500 ns; loads and rates are over that, not over the 21000 ns trace.
    busy = 3500e-9
    assert s.active == pytest.approx(busy)
    assert s.net_ops == 2 and s.storage_ops == 2 and s.meta_ops == 0
    assert s.net_load == pytest.approx(500 / 3500)           # 400 + 100 ns of 3500
    assert s.storage_load == pytest.approx(3000 / 3500)      # 2000 + 1000 ns
    assert s.net_rate == pytest.approx(2 / busy)
    assert s.storage_rate == pytest.approx(2 / busy)
    assert s.storage_kinds == "write"
    assert s.bytes_per_op == pytest.approx((4096 + 2048) / 2)
    assert s.cpu_pct == pytest.approx(20.0)
    assert s.throughput == pytest.approx(6144 / 1e6 / busy)


def test_every_kind_of_call_by_hand(tmp_path):
    """Bytes and times of blocking, nonblocking (bytes on the job, time in MPI_Wait), split,
    shared, ordered, large-count and remote calls; opens and closes apart; a server idle for
    most of the trace; and a time window."""
    d = tmp_path / "kinds"
    d.mkdir()
    io = dict(tid=1, thread="pario-io-0")
    _write(d / "client-0-100.jsonl", [
        _header("client", "rank 0", 100, 0, 0, rank=0),
        _span(0, 1000, "MPI_File_open", "api", file=9, rc=0),
        _span(2000, 1000, "MPI_File_write_at", "api", file=9, coll=0, bytes=100),
        _span(4000, 500, "MPI_File_iwrite_at", "api", file=9, coll=0, bytes=0),           # returns at once
        _span(4600, 20000, "job", "async", job=5, op="MPI_File_iwrite_at", bytes=65536, coll=0, **io),
        _span(10000, 15000, "MPI_Wait", "api", file=9, job=5, requests=1),             # waits for it
        _span(26000, 1000, "MPI_File_write_all_begin", "api", file=9, coll=1, bytes=0),
        _span(27500, 2000, "job", "async", job=6, op="MPI_File_write_all_begin", bytes=300, coll=1, **io),
        _span(30000, 2000, "MPI_File_write_all_end", "api", file=9, coll=1, bytes=300),
        _span(33000, 1000, "MPI_File_write_shared", "api", file=9, coll=0, bytes=64),
        _span(35000, 1000, "MPI_File_write_ordered", "api", file=9, coll=1, bytes=32),
        _span(37000, 1000, "MPI_File_read_at_all_c", "api", file=9, coll=1, bytes=7),
        _span(39000, 1000, "MPI_File_set_view", "api", file=9, rc=0),
        _span(41000, 3000, "MPI_File_read", "api", file=10, coll=0, bytes=4096),      # an x-rio file
        _span(41500, 2000, "read", "driver", flow=77, file=10, offset=0, len=4096, done=4096),
        _span(45000, 1000, "MPI_File_close", "api", file=9, rc=0),
        {"type": "server_clock", "name": SERVER, "offset_ns": 0, "err_ns": 10},
        {"type": "file", "id": 11, "name": "/logs/app_id7.darshan_partial", "nprocs": 1, "tool": 1},
        _span(50000, 9000, "MPI_File_write_at_all", "api", file=11, coll=1, bytes=999),  # Darshan's log
        _span(50500, 1000, "pwritev", "driver", file=11, offset=0, len=999, done=999),
    ])
    _write(d / "server-5000-200.jsonl", [
        _header("server", SERVER, 200),
        _span(41600, 100, "recv READ", "net", flow=77, bytes=64),
        _span(41700, 200, "open", "storage", flow=77, bytes=0),
        _span(41900, 1000, "pread", "storage", flow=77, bytes=4096),
        _span(42900, 100, "send READ", "net", flow=77, bytes=4112),
    ])
    t = tr.load(str(d))
    r, = tr.rank_stats(t)
    assert r.bytes_written == 100 + 65536 + 300 + 64 + 32       # the iwrite's bytes from its job; split once
    assert r.bytes_read == 7 + 4096
    assert (r.calls, r.open_close, r.other_calls, r.tool_calls) == (8, 2, 1, 1)  # the tool's call apart
    # In I/O: every MPI_File_* call (1000 x 8 + 500 + 2000 + 3000 = 13500) and the wait (15000).
    assert r.io_time == pytest.approx(28500e-9)
    assert r.wait_time == pytest.approx(15000e-9)
    s, = tr.server_stats(t)
    assert s.active == pytest.approx(1400e-9)                   # 41600 .. 43000, not the whole 46 us
    assert (s.storage_ops, s.meta_ops, s.bytes_per_op) == (1, 1, 4096.0)  # the open is not a data op
    assert s.throughput == pytest.approx(4096 / 1e6 / 1400e-9)
    w = tr.window_of(t, 0.000026, 0.000036)                     # 26 us .. 36 us: the split, shared, ordered calls
    rw, = tr.rank_stats(t, w)
    assert (rw.calls, rw.bytes_written, rw.bytes_read, rw.open_close) == (4, 300 + 64 + 32, 0, 0)
    assert rw.io_time == pytest.approx(5000e-9)
    assert tr.server_stats(t, window=w)[0].net_ops == 0
    text = tr.stats_text(t, w)
    assert "window 0.000026 s .. 0.000036 s" in text


def test_rank_stats_by_hand(tdir):
    r0, r1 = tr.rank_stats(tr.load(tdir))
    # rank 0: write_all 10000 + read 2000 ns in calls; inside the collective: exchange 1000,
    # driver 3000 (the read's preadv is outside it), waits 900 + 1500, the rest 3600.
    assert (r0.io_time, r0.calls, r0.bytes_read, r0.bytes_written) == (pytest.approx(12e-6), 2, 100, 4096)
    assert (r0.open_close, r0.other_calls, r0.wait_time) == (0, 0, 0)
    assert r0.coll_time == pytest.approx(10e-6)
    assert r0.exchange == pytest.approx(1e-6)
    assert r0.file_access == pytest.approx(3e-6)
    assert r0.waiting == pytest.approx(2.4e-6)
    assert r0.other == pytest.approx(3.6e-6)
    assert (r1.io_time, r1.coll_time, r1.exchange, r1.file_access, r1.waiting, r1.other) == pytest.approx(
        (9.5e-6, 9.5e-6, 4e-6, 0, 2e-6, 3.5e-6))


def test_merge_json_valid_and_aligned(tdir, tmp_path):
    jsonschema = need("jsonschema", "apt-get install python3-jsonschema (scripts/install-deps.sh does)")
    out = str(tmp_path / "trace.json")
    tr.merge_json(tr.load(tdir), out)
    with open(out) as fh:
        doc = json.load(fh)
    with open(SCHEMA) as fh:
        jsonschema.validate(doc, json.load(fh))
    ev = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert names == {0: "rank 0 (node1)", 1: "rank 1 (node1)", 100000: SERVER + " (node1)"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert threads[(0, 1)] == "pario-io-0"
    x = {(e["pid"], e["name"]): e for e in ev if e["ph"] == "X"}
    # times in us from the trace's start, each process shifted by its offset
    assert x[(1, "MPI_File_write_all")]["ts"] == pytest.approx((1300 - 200 - 1000) / 1000)
    assert x[(100000, "recv")]["ts"] == pytest.approx((3600 + 500 - 1000) / 1000)
    assert x[(0, "MPI_File_write_all")]["args"]["file_name"] == "/data/out.dat"
    flow = [e for e in ev if e["ph"] in "stf"]
    assert [e["ph"] for e in flow] == ["s", "t", "t", "f"]  # driver write -> recv, write, send
    assert [e["pid"] for e in flow] == [0, 100000, 100000, 100000]
    assert len({e["id"] for e in flow}) == 1
    counters = {e["name"] for e in ev if e["ph"] == "C"}
    assert {"queue_depth", "cpu_pct", "bytes/s"} <= counters


def test_bytes_per_second_counter(tdir):
    ev = tr.chrome_events(tr.load(tdir))
    # every byte of the server's storage operations appears once in its bytes/s counter
    rates = [e for e in ev if e["ph"] == "C" and e["name"] == "bytes/s" and e["pid"] == 100000]
    width = max(1_000_000, 21000 // 200) / 1e9
    assert sum(e["args"]["bytes/s"] for e in rates) * width == pytest.approx(6144)


def test_otf2_read_back(tdir, tmp_path):
    otf2 = need("otf2", "apt-get install python3-otf2 (scripts/install-deps.sh does)")
    out = str(tmp_path / "otf2")
    tr.merge_otf2(tr.load(tdir), out)
    enters, groups, leaves = [], set(), 0
    with otf2.reader.open(os.path.join(out, "traces.otf2")) as r:
        for loc, e in r.events:
            groups.add(loc.group.name)
            if isinstance(e, otf2.events.Enter):
                enters.append((loc.group.name, e.region.name, e.time))
            leaves += isinstance(e, otf2.events.Leave)
    assert groups == {"rank 0", "rank 1", SERVER}
    assert len(enters) == leaves == 9 + 4 + 4
    assert ("rank 1", "MPI_File_write_all", 1300 - 200 - 1000) in enters
    assert (SERVER, "write", 4000 + 500 - 1000) in enters
    with pytest.raises(tr.TraceError):  # never over an existing archive
        tr.merge_otf2(tr.load(tdir), out)


def test_otf2_attributes_and_peers(tdir, tmp_path):
    """Enter events carry bytes, offset, file and the request id; a client request names the
    server that served it and the server's operations name the rank; otf2-print reads the
    archive without a warning."""
    otf2 = need("otf2", "apt-get install python3-otf2 (scripts/install-deps.sh does)")
    out = str(tmp_path / "otf2")
    tr.merge_otf2(tr.load(tdir), out)
    got = {}
    with otf2.reader.open(os.path.join(out, "traces.otf2")) as r:
        for loc, e in r.events:
            if isinstance(e, otf2.events.Enter):
                got.setdefault((loc.group.name, e.region.name), []).append(
                    {a.name: v for a, v in (e.attributes or {}).items()})
    assert got[("rank 0", "pwritev")] == [{"bytes": 4096, "offset": 0, "file": "/data/out.dat", "request id": 7,
                                           "server": SERVER}]
    assert got[("rank 0", "MPI_File_write_all")] == [{"bytes": 4096, "file": "/data/out.dat"}]
    assert got[(SERVER, "write")] == [{"bytes": 4096, "request id": 7, "client": "rank 0"}, {"bytes": 2048}]
    assert "server" not in got[("rank 0", "preadv")][0]  # request 8 reached no server in this trace
    exe = shutil.which("otf2-print")
    assert exe, "otf2-print is missing (Debian: apt-get install otf2-tools; scripts/install-deps.sh does)"
    run = subprocess.run([exe, "-A", os.path.join(out, "traces.otf2")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "warning" not in (run.stdout + run.stderr).lower(), run.stderr[-2000:]
    assert "request id" in run.stdout and "ENTER" in run.stdout


def test_cli_stats_merge_report(tdir, tmp_path, capsys):
    assert cli.main(["trace", "stats", tdir]) == 0
    out = capsys.readouterr().out
    assert SERVER in out and "rank 1" in out and "3072.0" in out and "20.00" in out
    assert cli.main(["trace", "stats", "--json", tdir]) == 0
    assert json.loads(capsys.readouterr().out)["servers"][0]["storage_ops"] == 2
    j = str(tmp_path / "m.json")
    assert cli.main(["trace", "merge", tdir, "-o", j]) == 0 and os.path.exists(j)
    assert cli.main(["trace", "report", tdir]) == 0
    assert os.path.exists(os.path.join(tdir, "report.html"))


@pytest.mark.parametrize("setup, message", [
    (lambda d: None, "no trace files"),
    (lambda d: open(os.path.join(d, "client-0-1.jsonl"), "w").write('{"type":"header"}\n'), "not a pario trace"),
    (lambda d: open(os.path.join(d, "client-0-1.jsonl"), "w").write(""), "no usable trace file"),
    (lambda d: open(os.path.join(d, "client-0-1.jsonl"), "w").write(
        json.dumps(dict(_header("client", "rank 0", 1, rank=0), version=2)) + "\n"), "'version' must be same as const definition: 1 (given 2)"),
])
def test_cli_errors_one_line(tmp_path, capsys, setup, message):
    d = str(tmp_path / "bad")
    os.mkdir(d)
    setup(d)
    assert cli.main(["trace", "stats", d]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pario: error: ") and message in err


def _write_raw(d, name, lines):
    """A trace file of JSON objects and raw strings (lines that are not valid JSON)."""
    with open(os.path.join(d, name), "w") as fh:
        fh.write("".join(json.dumps(x) + "\n" if not isinstance(x, str) else x for x in lines))


def test_partial_trace_is_used(tmp_path, capsys):
    """A trace that lost parts (a full file system, a killed rank) is read as far as it goes:
    every usable file and every complete line, with one warning per loss naming the rank."""
    d = str(tmp_path / "partial")
    os.mkdir(d)
    span = {"type": "span", "t": 1000, "d": 500, "tid": 0, "thread": "main", "cat": "api",
            "name": "write_at", "args": {"bytes": 4096}}
    _write_raw(d, "client-0-1.jsonl", [_header("client", "rank 0", 1, rank=0), span,
                                   {"type": "dropped", "events": 17, "reason": "cannot write x: No space left on device"}])
    _write_raw(d, "client-1-2.jsonl", [])  # nothing written at all
    _write_raw(d, "client-2-3.jsonl", [_header("client", "rank 2", 3, rank=2), "{oops\n", dict(span, t=2000),
                                   '{"type":"span","t":3'])  # a bad line, and a last line cut short
    assert cli.main(["trace", "stats", d]) == 0
    cap = capsys.readouterr()
    assert "client-1-2.jsonl: empty" in cap.err
    assert "rank 0: lost 17 event(s) while tracing (cannot write x: No space left on device)" in cap.err
    assert "rank 2: 1 line(s) skipped" in cap.err and "last line incomplete" in cap.err
    assert "rank 0" in cap.out and "rank 2" in cap.out
    assert "lost 17 events" in cap.out  # the stats say which rank lost what
    t = tr.load(d)
    assert [p.rank for p in t.clients] == [0, 2] and sum(len(p.spans) for p in t.procs) == 2


def test_cli_window(tdir, capsys):
    # rank 0's read (20000 .. 22000 on a trace from 1000) alone: 0.000018 s .. 0.000022 s
    assert cli.main(["trace", "stats", tdir, "--from", "0.000018", "--to", "0.000022", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    r0 = j["ranks"][0]
    assert (r0["calls"], r0["bytes_read"], r0["bytes_written"]) == (1, 100, 0) and j["window_ns"] == [19000, 23000]
    assert j["servers"][0]["net_ops"] == 0
    assert cli.main(["trace", "stats", tdir, "--from", "2", "--to", "1"]) == 2
    assert "must be after" in capsys.readouterr().err
    assert cli.main(["trace", "stats", tdir, "--from", "nan"]) == 2
    assert "must be 0 or more seconds" in capsys.readouterr().err
    assert cli.main(["trace", "report", tdir, "--from", "0.000018"]) == 0
    assert "tables and timeline over 0.000018 s" in open(os.path.join(tdir, "report.html")).read()


def test_cli_usage(tdir, capsys):
    assert cli.main(["trace", "merge", tdir]) == 2  # neither -o nor --otf2
    assert "needs -o" in capsys.readouterr().err
    assert cli.main(["trace", "stats", "/nonexistent/dir"]) == 2
    assert cli.main(["trace", "--help"]) == 0


def test_cut_last_line_is_a_warning(tdir, capsys):
    with open(os.path.join(tdir, "client-1-101.jsonl"), "a") as fh:
        fh.write('{"type":"span","t":5')  # the process died while writing
    assert cli.main(["trace", "stats", tdir]) == 0
    assert "last line incomplete" in capsys.readouterr().err
