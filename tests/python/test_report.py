"""The report built from the stored results fixture: every suite named, every figure a real PNG."""

import os
import re
import shutil
from html.parser import HTMLParser

import pytest

from pario import SUITES
from pario.cli import main
from conftest import write_synthetic_results
from pario.report import build_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def report_dir(tmp_path, fixture_path):
    d = tmp_path / "res"
    d.mkdir()
    shutil.copy(fixture_path, d / "results.jsonl")
    return d


def _images(html):
    return re.findall(r'<img src="([^"]+)"', html)


def _check_png(path):
    data = open(path, "rb").read()
    assert data[:8] == PNG_MAGIC, path
    assert len(data) > 5000, path      # a drawn figure, not an empty canvas
    import matplotlib.image as mpimg
    img = mpimg.imread(path)
    assert img.shape[0] > 100 and img.shape[1] > 100
    assert img.std() > 0.01, path       # not a blank image


def test_report_from_fixture(report_dir):
    path = build_report(str(report_dir))
    assert path == os.path.join(str(report_dir), "report.html")
    html = open(path, encoding="utf-8").read()
    for suite in SUITES:
        assert f'id="{suite}"' in html, suite
        assert f"{suite}:" in html
    images = _images(html)
    assert len(images) >= len(SUITES)
    for suite in SUITES:
        assert any(img.startswith(suite) for img in images), f"no figure for {suite}"
    for img in images:
        assert not os.path.isabs(img) and "/" not in img      # relative, beside the report
        _check_png(report_dir / img)
    # the side-by-side table, with MPI flavour, ranks and storage regime columns
    assert 'id="side-by-side"' in html
    side = html[html.index('id="side-by-side"'):]
    for col in ("mpi", "ranks", "regime", "native", "pario", "pario/native"):
        assert f"<th>{col}</th>" in side
    assert "Table 8.2" in html                       # the overlap ranking
    assert "9 of 128 records missing from the file" in html   # the fixture's failed measurement
    assert "unsupported" in html


def test_report_command(report_dir, capsys):
    assert main(["bench", "report", str(report_dir)]) == 0
    out = capsys.readouterr().out
    assert "report: " + os.path.join(str(report_dir), "report.html") in out
    for suite in SUITES:
        assert suite in out
    assert (report_dir / "report.html").exists()


def test_report_of_missing_dir(tmp_path, capsys):
    assert main(["bench", "report", str(tmp_path / "nothing")]) == 2
    assert "no results.jsonl" in capsys.readouterr().err


def test_report_with_partial_results(tmp_path, fixture_path):
    """Only some suites measured: the others still get a section saying so."""
    d = tmp_path / "part"
    d.mkdir()
    lines = [ln for ln in open(fixture_path) if '"suite": "cfs"' in ln]
    (d / "results.jsonl").write_text("".join(lines) + "not json\n")
    html = open(build_report(str(d)), encoding="utf-8").read()
    for suite in SUITES:
        assert f'id="{suite}"' in html
    assert html.count("No measurements for this suite.") == len(SUITES) - 1
    assert "Unreadable result lines" in html
    for img in _images(html):
        _check_png(d / img)


class _Rows(HTMLParser):
    """The rows of the tables after an element with id=`after`: (row class, cell texts, cell
    classes of the spans inside)."""

    def __init__(self, after):
        super().__init__()
        self.after, self.on, self.rows, self.cell = after, False, [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == self.after:
            self.on = True
        if not self.on:
            return
        if tag == "tr":
            self.rows.append((a.get("class", ""), [], []))
        elif tag == "td" and self.rows:
            self.cell = ""
        elif tag == "span" and self.rows and a.get("class") in ("better", "worse"):
            self.rows[-1][2].append(a["class"])

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.rows[-1][1].append(" ".join(self.cell.split()))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def _rows(html, after):
    p = _Rows(after)
    p.feed(html)
    return p.rows


def test_report_numbers_by_hand(tmp_path):
    """The side-by-side and summary figures of the synthetic sweep (conftest: 3 runs of each
    configuration), computed here by hand: cfs partitioned-write at 4 KiB, 1 rank: native
    5 MB/s x (1, 1.05, 1.1), pario 1.1 times that; overlap direct: native ratio 1 x (1, 1.05,
    1.3), pario 0.55 x the same (lower is better)."""
    d = write_synthetic_results(str(tmp_path / "syn"))
    html = open(build_report(d), encoding="utf-8").read()
    side = {tuple(cells[:6]): (cls, cells, marks) for cls, cells, marks in _rows(html, "side-by-side") if cells}
    cls, cells, marks = side[("cfs", "partitioned-write", "block_size=4 KiB", "mpich", "1", "cached")]
    assert cells[6:10] == ["MB/s", "5.25 (5–5.50)", "5.78 (5.50–6.05)", "1.10 (1.10–1.10)"]
    assert marks == ["better"] and cls == ""
    cls, cells, marks = side[("overlap", "equal", "", "openmpi", "2", "direct")]
    native, pario, ratio = cells[7].split()[0], cells[8].split()[0], cells[9].split()[0]
    assert float(native) == pytest.approx(1.05) and float(pario) == pytest.approx(0.5775, abs=6e-4)
    assert cells[7].endswith("(1–1.30)") and ratio == "0.55" and marks == ["better"]
    # summary: per suite, MPI and regime, the geometric mean of pario/native over configurations
    summary = {tuple(c[:3]): c for _, c, _ in _rows(html, "summary") if len(c) == 12}
    assert summary[("cfs", "openmpi", "cached")][3:] == ["4", "4", "4", "0", "0", "MB/s", "1.10", "1.10", "1.10"]
    assert summary[("overlap", "mpich", "direct")][9:] == ["0.55", "0.55", "0.55"]


def test_report_with_mixed_hints(tmp_path, fixture_path):
    """Runs of one suite with different -H hints (a dictionary in params) are separate curves,
    each named by its hints; the report used to stop with "unhashable type: 'dict'"."""
    import json
    d = tmp_path / "hints"
    d.mkdir()
    rows = [json.loads(ln) for ln in open(fixture_path) if '"suite": "noncontig"' in ln]
    assert rows
    out = []
    for r in rows:
        for hints in ({}, {"pario_read_max_gap": "0"}):
            r2 = json.loads(json.dumps(r))
            r2["params"]["hints"] = hints
            out.append(json.dumps(r2))
    (d / "results.jsonl").write_text("\n".join(out) + "\n")
    html = open(build_report(str(d)), encoding="utf-8").read()
    assert "pario_read_max_gap=0" in html or any(
        b"pario_read_max_gap=0" in open(d / img.replace(".png", ".svg"), "rb").read()
        for img in _images(html) if img.endswith(".png"))
    for img in _images(html):
        _check_png(d / img)
