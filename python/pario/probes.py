"""The tool probes of `pario bench remote`: one measurement per system (iperf3's TCP copy, xrdcp and
XRootD's Python client, pario-bench natively or with pario preloaded, a local write as the
storage bound), and what a pario-server logged it served.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .launch import Launcher
from .runner import kill_group
from .services import RemoteError, run_tool, wait_port, free_port

# ---- one measurement per system --------------------------------------------------------------

def iperf3_mbps(nbytes: int, log: str, timeout: float) -> float:
    """MB/s (10^6 bytes) of one TCP stream over loopback, iperf3's receiver figure."""
    port = free_port()
    srv = subprocess.Popen(["iperf3", "-s", "-p", str(port), "-B", "127.0.0.1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        if not wait_port(port, srv, 10):
            raise RemoteError("iperf3 server did not start")
        res = run_tool(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-n", str(nbytes), "-J"], timeout, log=log)
    finally:
        kill_group(srv)
    try:
        data = json.loads(res.stdout)
        return data["end"]["sum_received"]["bits_per_second"] / 8 / 1e6
    except (ValueError, KeyError, TypeError):
        raise RemoteError(f"iperf3 gave no result (log: {log})") from None


def xrdcp_mbps(src: str, dst: str, nbytes: int, log: str, timeout: float) -> float:
    t0 = time.monotonic()
    res = run_tool(["xrdcp", "-f", "-s", src, dst], timeout, log=log)
    dt = time.monotonic() - t0
    if res.returncode != 0:
        raise RemoteError(f"xrdcp {src} {dst} failed (exit {res.returncode}; log: {log})")
    return nbytes / dt / 1e6


def _xrootd_open(url: str):
    """A file of XRootD's Python client opened for reading (RemoteError if it cannot be)."""
    from XRootD import client
    from XRootD.client.flags import OpenFlags
    f = client.File()
    st, _ = f.open(url, OpenFlags.READ)
    if not st.ok:
        raise RemoteError(f"XRootD open {url}: {st.message}")
    return f


def xrootd_requests(url: str, count: int, block: int, depth: int) -> Tuple[float, float]:
    """requests/s of `count` reads of `block` bytes through XRootD's Python client: one at a
    time, then with `depth` asynchronous reads in flight."""
    import threading

    f = _xrootd_open(url)
    try:
        t0 = time.monotonic()
        for i in range(count):
            st, _ = f.read(i * block, block)
            if not st.ok:
                raise RemoteError(f"XRootD read: {st.message}")
        sync = count / (time.monotonic() - t0)
        slots = threading.Semaphore(depth)
        done = threading.Event()
        left = [count]
        errors: List[str] = []
        lock = threading.Lock()

        def finished(status, response, hostlist):
            if not status.ok:
                errors.append(status.message)
            slots.release()
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    done.set()

        t0 = time.monotonic()
        for i in range(count):
            slots.acquire()
            f.read(i * block, block, callback=finished)
        if not done.wait(300):
            raise RemoteError("XRootD asynchronous reads did not complete")
        pipelined = count / (time.monotonic() - t0)
        if errors:
            raise RemoteError(f"XRootD read: {errors[0]}")
        return sync, pipelined
    finally:
        f.close()


def xrootd_vector(url: str, segments: int, seglen: int, stride: int, per_call: int = 1024) -> float:
    """segments/s of XRootD vector reads of `segments` pieces of `seglen` bytes, `stride` apart."""
    f = _xrootd_open(url)
    try:
        t0 = time.monotonic()
        for first in range(0, segments, per_call):
            chunks = [(i * stride, seglen) for i in range(first, min(segments, first + per_call))]
            st, _ = f.vector_read(chunks)
            if not st.ok:
                raise RemoteError(f"XRootD vector read: {st.message}")
        return segments / (time.monotonic() - t0)
    finally:
        f.close()


@dataclass
class BenchRunner:
    """pario-bench runs of one MPI flavour, natively or with pario preloaded."""

    mpi: str
    bench: str
    lib: str
    launcher: Launcher
    log: str
    timeout: float
    secret: str

    def run(self, ranks: int, args: Sequence[str], workdir: str, env_extra: Optional[Dict[str, str]] = None) -> List[dict]:
        out = os.path.join(workdir, f"bench-{time.monotonic_ns()}.jsonl")
        env = self.launcher.env()
        env["PARIO_RIO_SECRET_FILE"] = self.secret
        env.update(env_extra or {})
        argv = self.launcher.command(self.mpi, ranks, [self.bench, *args, "-o", out], preload=self.lib, environ=env)
        res = run_tool(argv, self.timeout, env=env, log=self.log)
        rows = []
        if os.path.exists(out):
            with open(out, encoding="utf-8") as f:
                rows = [json.loads(ln) for ln in f if ln.strip()]
            os.remove(out)
        bad = [r for r in rows if r.get("status") != "ok"]
        if res.returncode != 0 or not rows or bad:
            why = bad[0].get("error") if bad else f"exit status {res.returncode}"
            raise RemoteError(f"pario-bench {args[0]} on {ranks} rank(s) failed: {why} (log: {self.log})")
        return rows


def local_write_mbps(directory: str, nbytes: int, block: int = 8 << 20) -> float:
    """The server's storage bound for a sequential write: nbytes of zeros written in blocks of
    8 MiB into a fresh file in the directory the server writes to (the same file system, page
    cache, writeback), the file removed afterwards. No network is involved, so a remote write
    cannot beat it."""
    path = os.path.join(directory, "local-write.dat")
    buf = bytes(block)
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        left = nbytes
        while left > 0:
            left -= os.write(fd, buf[:min(block, left)])
    finally:
        os.close(fd)
    secs = time.perf_counter() - t0
    os.remove(path)
    return nbytes / secs / 1e6


def served_writes(log: str) -> Optional[int]:
    """The WRITE requests a pario-server handled, from the line it logs at exit."""
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            lines = [ln for ln in f if "served " in ln and " WRITE " in ln]
    except OSError:
        return None
    if not lines:
        return None
    try:
        return int(lines[-1].split(" WRITE ")[1].split(",")[0].split(")")[0])
    except (IndexError, ValueError):
        return None


def has_xrootd_python() -> bool:
    try:
        import XRootD.client  # noqa: F401
        return True
    except ImportError:
        return False
