"""`pario trace report`: the tables checked against hand-computed values on test_trace's
synthetic trace, the timeline's rows, and the page driven in headless chromium over the
DevTools protocol (zoom by wheel and button, pan by drag, search, click on a request and its
server operations, colour by file, 10^6 spans with level of detail), with screenshots checked
for content."""

import json
import os

import pytest
from PIL import Image

from cdp import Page
from pario import cli, tracereport, tracetables
from pario.tracefile import TraceError, load
from pario.tracestream import scan
from pario.tracestats import rank_stats
from synthtrace import span as _span
from test_trace import SERVER, _header, tdir  # noqa: F401  (tdir: the fixture)


def test_tables_by_hand(tdir):
    t = load(tdir)
    cols, rows = tracetables.by_call(t)
    assert cols == ["call", "count", "bytes", "time (ms)", "mean (ms)"]
    # write_all: rank 0 10000 ns, rank 1 9500 ns, 4096 bytes each; rank 0's read: 2000 ns, 100 bytes
    assert rows == [["MPI_File_write_all", "2", "8192", "0.0195", "0.0097"],
                    ["MPI_File_read", "1", "100", "0.0020", "0.0020"]]
    # rank 1 names file 9 without a file record: only rank 0's calls have a name
    assert tracetables.by_file(t)[1] == [["/data/out.dat", "2", "4196", "0.0120"]]
    assert tracetables.size_histogram(t)[1] == [["64 B .. 128 B", "1", "0", "1", "0"],
                                                ["4 KiB .. 8 KiB", "0", "2", "0", "1"]]
    assert tracetables.slowest(t)[1] == [
        ["MPI_File_write_all", "rank 0", "/data/out.dat", "4096", "0.0100", "0.000000"],
        ["MPI_File_write_all", "rank 1", "", "4096", "0.0095", "0.000000"],
        ["MPI_File_read", "rank 0", "/data/out.dat", "100", "0.0020", "0.000019"]]
    # rank 0's write_all [1000, 11000): exchange 1000, pwritev 3000, waits 900 + 1500, the rest
    # (plan, round outside its children) 3600; rank 1's [1300, 10800): exchange 4000, wait 2000
    assert tracetables.collectives(t)[1] == [
        ["MPI_File_write_all", "rank 0", "0.000000", "0.0100", "0.0010", "0.0030", "0.0024", "0.0036"],
        ["MPI_File_write_all", "rank 1", "0.000000", "0.0095", "0.0040", "0.0000", "0.0020", "0.0035"]]
    assert tracetables.size_label(1) == "1 B .. 2 B" and tracetables.size_label(21) == "1 MiB .. 2 MiB"


def test_collective_parts_add_up_to_rank_totals(tdir):
    t = load(tdir)
    for p, r in zip(t.clients, rank_stats(t)):
        parts = [tracetables.collective_parts([s for s in p.spans if s.get("tid", 0) == e.get("tid", 0)], e)
                 for e in p.spans if e.get("cat") == "api" and e["args"].get("coll") == 1]
        assert [sum(x[k] for x in parts) / 1e9 for k in range(3)] == pytest.approx(
            [r.exchange, r.file_access, r.waiting], abs=1e-12)


def test_window_limits_tables(tdir):
    t = load(tdir)
    win = (1000 + 15000, 1000 + 21000)  # only rank 0's read starts in it
    assert [r[0] for r in tracetables.by_call(t, win)[1]] == ["MPI_File_read"]
    assert tracetables.collectives(t, win)[1] == []


def test_timeline_rows_remote_requests_named(tmp_path):
    d = tmp_path / "tr"
    d.mkdir()
    with open(d / "client-0-1.jsonl", "w") as fh:
        for obj in [_header("client", "rank 0", 1, rank=0),
                    _span(100, 1000, "MPI_File_write", "api", file=1, bytes=10),
                    _span(200, 300, "write", "net", tid=2, thread="thread-2", flow=5, bytes=10),
                    _span(600, 300, "reply", "net", tid=2, thread="thread-2", flow=5)]:
            fh.write(json.dumps(obj) + "\n")
    with open(d / "server-1-2.jsonl", "w") as fh:
        for obj in [_header("server", "srv", 2), _span(250, 200, "write", "storage", flow=5, bytes=10)]:
            fh.write(json.dumps(obj) + "\n")
    data = tracereport.timeline_data(load(str(d)))
    assert [(r["proc"], r["thread"]) for r in data["rows"]] == [
        ("rank 0", "main"), ("rank 0", "remote requests (thread-2)"), ("srv", "main")]
    s = data["spans"]
    assert s["row"] == [0, 1, 1, 2] and s["t"] == [0, 100, 500, 150] and s["d"] == [1000, 300, 300, 200]
    assert [data["flows"][f] for f in s["flow"]] == ["", "5", "5", "5"]


def test_missing_d3_is_one_line(tdir, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PARIO_JS_DIR", str(tmp_path))
    monkeypatch.setattr(tracereport, "SOURCE_JS", str(tmp_path))
    monkeypatch.setattr("sys.prefix", str(tmp_path / "venv"))
    with pytest.raises(TraceError, match="make venv"):
        tracereport.d3_path()
    assert cli.main(["trace", "report", tdir]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "npm install d3@" in err


def colours(png: str) -> int:
    """Distinct colours in a screenshot (each used by at least 20 pixels)."""
    img = Image.open(png).convert("RGB")
    return sum(1 for n, _ in img.getcolors(maxcolors=1 << 20) if n >= 20)


def test_report_interactive(tdir, tmp_path):
    out = str(tmp_path / "r.html")
    assert cli.main(["trace", "report", tdir, "-o", out]) == 0
    html = open(out).read()
    assert "<script src" not in html and "https://" not in html.split("<script>", 1)[0]
    page = Page("file://" + out)
    try:
        assert page.js("pario.spans") == 17
        assert page.js("pario.visibleRange()") == [0, 21000]
        x0 = page.js("document.getElementById('tl').getBoundingClientRect().left")
        y0 = page.js("document.getElementById('tl').getBoundingClientRect().top")
        page.wheel(x0 + 700, y0 + 40, -300)  # wheel: zoom in around the pointer
        a, b = page.js("pario.visibleRange()")
        assert b - a < 21000 * 0.8 and a > 0  # narrower, around the pointer
        page.js("document.getElementById('zin').click()")
        a2, b2 = page.js("pario.visibleRange()")
        assert (b2 - a2) == pytest.approx((b - a) / 2, rel=1e-6)
        page.drag(x0 + 700, y0 + 40, 200)  # drag right: earlier times come into view
        a3, b3 = page.js("pario.visibleRange()")
        assert a3 < a2 and (b3 - a3) == pytest.approx(b2 - a2, rel=1e-6)
        page.js("document.getElementById('zreset').click()")
        assert page.js("pario.visibleRange()") == [0, 21000]
        # search by name and by file
        assert page.js("pario.search('exchange')") == 2
        assert page.js("document.getElementById('found').textContent") == "2 span(s) match"
        assert page.js("pario.search('out.dat')") == 4  # rank 0's write_all, pwritev, read, preadv
        page.js("pario.search('')")
        # a real click on rank 0's pwritev (request 7): its details and the server's 3 spans
        i = page.js("pario.find('pwritev')")
        px, py = page.js(f"pario.pixelOf({i})")
        page.click(x0 + px, y0 + py)
        assert page.js("pario.selected()") == i
        details = page.js("document.getElementById('details').innerText")
        assert "pwritev" in details and "4096" in details and "/data/out.dat" in details and "\t7" in details
        related = page.js("[...document.querySelectorAll('#details table.related tr')].map(r => r.innerText)")
        assert len(related) == 3 and all(SERVER in r for r in related)
        assert sorted(r.split("\t")[0] for r in related) == ["recv", "send", "write"]
        shot = page.screenshot(str(tmp_path / "timeline.png"), "#tl")
        assert colours(shot) >= 6, "the timeline should show several categories' colours"
        page.js("pario.setColorBy('file')")
        assert "/data/out.dat" in page.js("document.getElementById('legend').innerText")
        assert page.errors == []
    finally:
        page.close()


def _big_trace(d, ranks=4, calls=2000, per_call=124):
    """ranks x calls x (1 + per_call) spans: MPI_File_write calls of many small pwrites."""
    os.makedirs(d)
    for r in range(ranks):
        with open(os.path.join(d, f"client-{r}-{r + 1}.jsonl"), "w") as fh:
            fh.write(json.dumps(_header("client", f"rank {r}", r + 1, rank=r)) + "\n")
            fh.write('{"type":"file","id":1,"name":"/data/big.dat"}\n')
            t = 1000
            lines = []
            for c in range(calls):
                lines.append('{"type":"span","t":%d,"d":%d,"tid":0,"thread":"main","cat":"api",'
                             '"name":"MPI_File_write","args":{"file":1,"bytes":%d}}' % (t, per_call * 1200, per_call * 64))
                for k in range(per_call):
                    lines.append('{"type":"span","t":%d,"d":1000,"tid":0,"thread":"main","cat":"driver",'
                                 '"name":"pwrite","args":{"file":1,"offset":%d,"len":64,"done":64}}'
                                 % (t + 100 + k * 1200, (c * per_call + k) * 256 + r * 64))
                t += per_call * 1200 + 5000
            fh.write("\n".join(lines) + "\n")


def test_report_million_spans(tmp_path):
    d = str(tmp_path / "big")
    _big_trace(d)
    out = str(tmp_path / "big.html")
    assert cli.main(["trace", "report", d, "-o", out]) == 0
    page = Page("file://" + out)
    try:
        assert page.js("pario.spans") == 4 * 2000 * 125
        ms = page.js("(() => { const t = performance.now(); pario.draw(); return performance.now() - t; })()")
        assert ms < 1500, f"a full redraw of 10^6 spans took {ms:.0f} ms"
        merged = page.js("pario.merged()")
        assert merged > 900_000
        assert page.js("document.getElementById('lod').textContent").startswith(f"{merged} spans merged at this zoom")
        assert colours(page.screenshot(str(tmp_path / "big.png"), "#tl")) >= 3
        page.js("pario.zoomTo(0, 200000)")  # 0.2 ms: about 160 pwrites per rank, each wider than a pixel
        assert page.js("pario.merged()") == 0 and page.js("document.getElementById('lod').textContent") == ""
        assert page.js("pario.search('pwrite')") == 4 * 2000 * 124
        assert page.errors == []
    finally:
        page.close()


def test_collectives_look_near_the_call_only(tmp_path):
    """The collective breakdown looks only at the spans that can overlap each call: the same
    rows as collective_parts over the whole thread (the direct definition) on a synthetic trace."""
    from pario.tracefile import by_thread
    from synthtrace import write_big
    d = str(tmp_path / "tr")
    write_big(d, 4000, ranks=3)
    t = load(d)
    lo, direct = t.bounds()[0], []
    for p in t.clients:
        for spans in by_thread(p).values():
            for e in spans:
                if e.get("cat") == "api" and (e.get("args") or {}).get("coll") == 1:
                    parts = tracetables.collective_parts(spans, e)
                    direct.append((e["t"] + p.offset, [e["name"], p.name, f"{(e['t'] + p.offset - lo) / 1e9:.6f}",
                                                       tracetables._ms(e["d"])] + [tracetables._ms(x) for x in parts]))
    direct.sort(key=lambda r: r[0])
    rows = tracetables.collectives(t)[1]
    assert len(rows) > 10 and rows == [r for _, r in direct]


def test_collectives_top_k_and_left_out(tdir, monkeypatch):
    """Past COLLECTIVES calls, the longest are listed in time order and the others summed:
    here rank 0's 0.0100 ms call stays, rank 1's 0.0095 ms is left out with its parts."""
    monkeypatch.setattr(tracetables, "COLLECTIVES", 1)
    tabs = tracetables.tables(load(tdir))
    assert tabs.result()["collectives"][1] == [
        ["MPI_File_write_all", "rank 0", "0.000000", "0.0100", "0.0010", "0.0030", "0.0024", "0.0036"]]
    assert tabs.left_out() == ["1", "0.0095", "0.0040", "0.0000", "0.0020", "0.0035"]
    html = tracereport.report_html(scan(tdir), "t")
    assert "1 shorter ones are not listed: together 0.0095 ms, of it exchange 0.0040 ms" in html


def test_streamed_report_same_as_loaded(tdir, tmp_path):
    """The page from the notes only (tracestream.scan: the files read again one event at a
    time, each thread sorted on disk) is the page from the trace in memory; with runs of 2
    events the external sort merges many of them."""
    from pario import tracesort
    d = str(tmp_path / "big")
    _big_trace(d, ranks=2, calls=30, per_call=5)
    for path in (tdir, d):
        whole = tracereport.report_html(load(path), "t")
        old = tracesort.ThreadSort.CHUNK
        tracesort.ThreadSort.CHUNK = 2
        try:
            assert tracereport.report_html(scan(path), "t") == whole
        finally:
            tracesort.ThreadSort.CHUNK = old


def test_thread_sort_spills_and_merges_stably():
    from pario.tracesort import ThreadSort
    evs = [{"t": (i * 7919) % 101, "d": i % 3, "i": i} for i in range(500)]
    with ThreadSort() as srt:
        srt.CHUNK = 64
        for e in evs:
            srt.add(e["i"] % 2, e)
        assert srt.tmp and os.listdir(srt.tmp)
        for tid in (0, 1):
            want = sorted((e for e in evs if e["i"] % 2 == tid), key=lambda e: (e["t"], -e["d"]))
            assert list(srt.sorted(tid)) == want
        tmp = srt.tmp
    assert not os.path.exists(tmp)


def test_report_merges_bars_past_the_budget(tmp_path, monkeypatch):
    """A trace of more spans than BUDGET: spans too small to see at full zoom-out are merged
    into bars that count them (column n), within about the budget; the page says so, and its
    level-of-detail count is of spans, not bars; the tables are unchanged."""
    d = str(tmp_path / "big")
    _big_trace(d, ranks=2, calls=200, per_call=124)  # 50,000 spans
    small = tracereport.report_html(load(d), "t")
    monkeypatch.setattr(tracereport, "BUDGET", 5000)
    tl = tracereport.Timeline(load(d))
    data = tracereport.timeline_data(load(d))
    s = data["spans"]
    assert data["quantum"] > 0 and sum(s["n"]) == 50_000 and len(s["t"]) <= 5000
    assert 200 * 2 <= len(s["t"])  # every MPI_File_write call stays a bar of its own
    assert sum(b for b, n in zip(s["bytes"], s["n"]) if n > 1) == 2 * 200 * 124 * 64
    out = str(tmp_path / "big.html")
    assert cli.main(["trace", "report", d, "-o", out]) == 0
    with open(out, encoding="utf-8") as fh:
        html = fh.read()
    assert f"50000 spans (shown as {len(s['t'])} bars: spans shorter than {tl.q / 1e3:.3f} us" in html
    cut = (lambda h: h[h.index('<section id="sec-calls"'):h.index("<h2>Servers</h2>")])
    assert cut(html) == cut(small)
    page = Page("file://" + out)
    try:
        assert page.js("pario.spans") == len(s["t"])
        assert page.js("pario.merged()") > 45_000
        assert page.errors == []
    finally:
        page.close()
