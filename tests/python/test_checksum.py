"""`pario checksum`: VALUE  NAME lines like xrdadler32, the server's sum of an x-rio:// file equal
to zlib's of the same bytes, and one-line errors (missing file, wrong secret file, no
pario-checksum, no server). Uses the build tree's pario-checksum and pario-server; skipped
without them."""

import os
import subprocess
import sys
import time
import zlib

import pytest

from pario.locate import find_checksum, find_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("PARIO_BUILD_DIR", os.path.join(ROOT, "build"))
TOOL = find_checksum("mpich", BUILD, {})
SERVER = find_server("mpich", BUILD, {})
needs_tool = pytest.mark.skipif(TOOL is None, reason="no pario-checksum built (make build)")


def _pario(*args, env=None, timeout=120):
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + e.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "pario", "--build-dir", BUILD, "checksum", *args],
                          capture_output=True, text=True, env=e, timeout=timeout)


def _one_error_line(res):
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pario: error: "), res.stderr
    return lines[0]


@needs_tool
def test_local_file_format_and_value(tmp_path):
    f = tmp_path / "data"
    f.write_bytes(os.urandom(300000))
    res = _pario(str(f))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "%08x  %s\n" % (zlib.adler32(f.read_bytes()), f)
    res = _pario("--algo", "crc32c", str(f), str(f))
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 2


@needs_tool
def test_missing_file_is_one_line(tmp_path):
    res = _pario(str(tmp_path / "nope"))
    assert res.returncode == 1
    line = _one_error_line(res)
    assert str(tmp_path / "nope") in line and "MPI_ERR_NO_SUCH_FILE" in line


def test_bad_secret_file_and_no_tool(tmp_path):
    res = _pario("--secret-file", str(tmp_path / "none"), "x-rio://127.0.0.1:1/f")
    assert res.returncode == 2 and "--secret-file" in _one_error_line(res)
    res = subprocess.run([sys.executable, "-m", "pario", "--build-dir", str(tmp_path), "checksum", "x"],
                         capture_output=True, text=True, timeout=30,
                         env=dict(os.environ, PATH=str(tmp_path), PARIO_PREFIX=str(tmp_path),
                                  PYTHONPATH=os.path.join(ROOT, "python")))
    assert res.returncode == 2 and "pario-checksum not found" in _one_error_line(res)


@needs_tool
@pytest.mark.skipif(SERVER is None, reason="no pario-server built")
def test_remote_file_summed_by_server(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret"
    secret.write_text(os.urandom(16).hex())
    secret.chmod(0o600)
    data = os.urandom(3 << 20)  # three pieces at --max-request 1M
    (root / "f").write_bytes(data)
    srv = subprocess.Popen([SERVER, "--root", str(root), "--secret-file", str(secret), "--listen", "127.0.0.1:0",
                            "--allow-root", "--max-request", "1M"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = srv.stdout.readline().strip().rsplit(":", 1)[1]
        url = f"x-rio://127.0.0.1:{port}/f"
        res = _pario(url, "--secret-file", str(secret))
        assert res.returncode == 0, res.stderr
        assert res.stdout == "%08x  %s\n" % (zlib.adler32(data), url)
        res = _pario(f"x-rio://127.0.0.1:{port}/missing", "--secret-file", str(secret))
        assert res.returncode == 1 and "MPI_ERR_NO_SUCH_FILE" in _one_error_line(res)
    finally:
        srv.terminate()
        srv.wait(timeout=30)


@needs_tool
def test_no_server_is_one_line(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s" * 32)
    t0 = time.monotonic()
    res = _pario("x-rio://127.0.0.1:1/f", "--secret-file", str(secret))
    assert res.returncode == 1 and "127.0.0.1:1" in _one_error_line(res)
    assert time.monotonic() - t0 < 60
