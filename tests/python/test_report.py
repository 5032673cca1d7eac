"""The report built from the stored results fixture: every suite named, every figure a real PNG."""

import os
import re
import shutil

import pytest

from pario import SUITES
from pario.cli import main
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
