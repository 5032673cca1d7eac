"""`pario bench remote`: the remote I/O experiments of seed 004 (RIO) on one machine.

The command starts every server it measures and stops it afterwards: pario-server (and, for
the forwarder runs, a second pario-server with --forward-to), XRootD (Debian's xrootd, run as
an unprivileged user, measured with its own tools: xrdcp and its Python client) and iperf3 as
the plain TCP copy that bounds what any protocol can move over loopback. Every figure is the
median of --repeat runs, the systems alternating run by run in the same conditions, with its
minimum and maximum. What it measures, and why, is in docs/remote.md. This module is the sweep;
services.py starts and stops the servers, probes.py measures each system, remote_summary.py
summarises the records.

Experiments (each skipped, with the reason, when a tool is missing):
  seq     large sequential write and read at 1 client: pario, XRootD, TCP copy (MB/s)
  req4k   4 KiB reads one round trip at a time against pipelined: pario, XRootD (requests/s)
  vec32   32-byte segments read in one request per window: pario (noncontiguous view), XRootD
          (vector read) (segments/s)
  btio    BTIO over an emulated WAN link (server --emulate): staging (local write + copy over
          the link) against remote blocking and nonblocking writes; original (independent
          subarray writes), optimised (the seed's: the field gathered, each rank writes one
          contiguous block) and aggregated (pario's collective buffering) variants, N = 64 and
          k compute steps per checkpoint as long as one checkpoint takes over the link (the
          seed's Table 1)
  scale   transfer rate against clients (1, 2, 4) and servers (1, 2), blocking and
          nonblocking, with and without a forwarder (the seed's Figures 3 and 4)
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .probes import (BenchRunner, has_xrootd_python, served_writes, iperf3_mbps, local_write_mbps, xrdcp_mbps,
                     xrootd_requests, xrootd_vector)
from .remote_summary import SUMMARY_FILE, Record, summarize, verdicts
from .services import RemoteError, Service, run_tool, start_pario_server, start_xrootd, write_secret

REMOTE_FILE = "remote.jsonl"


# ---- sizes ---------------------------------------------------------------------------------

@dataclass
class Sizes:
    seq_bytes: int
    req_count: int
    vec_count: int
    btio_n: int
    btio_iters: int
    scale_bytes: int

    @staticmethod
    def pick(quick: bool) -> "Sizes":
        # Full sizes: each timed run lasts about a second or more on this 2-core machine, so a
        # run is not dominated by start-up; quick sizes only check that everything works.
        if quick:
            return Sizes(64 << 20, 512, 4096, 16, 10, 16 << 20)
        # BTIO at the seed's N = 64: a checkpoint of 10.5 MB takes 0.5 s over the 20 MB/s link,
        # so the 0.2 s round trip is not everything
        return Sizes(1 << 30, 8192, 65536, 64, 20, 256 << 20)


# ---- the sweep ---------------------------------------------------------------------------------


class Sweep:
    """Runs the experiments, alternating systems run by run; writes every figure to remote.jsonl."""

    def __init__(self, out: str, server_exe: str, bench: Optional[BenchRunner], sizes: Sizes, repeat: int,
                 progress: Callable[[str], None]):
        self.out, self.server_exe, self.bench, self.sizes, self.repeat = out, server_exe, bench, sizes, repeat
        self.say = progress
        self.records: List[Record] = []
        self.skipped: Dict[str, str] = {}
        self.services: List[Service] = []
        self.work = tempfile.mkdtemp(prefix="pario-remote-", dir=out)
        self.log = os.path.join(out, "remote.log")
        self.secret = os.path.join(self.work, "secret")
        write_secret(self.secret)
        if bench is not None:
            bench.secret = self.secret  # the clients read it through PARIO_RIO_SECRET_FILE
        self.help = run_tool([server_exe, "--help"], 20).stdout if server_exe else ""

    # servers
    def files_of(self, name: str) -> str:
        """Where server `name` keeps the experiments' files (x-rio://HOST:PORT/d/...)."""
        return os.path.join(self.work, name, "d")

    def server(self, name: str, extra: Sequence[str] = ()) -> Service:
        root = None
        if "--forward-to" not in extra:
            root = os.path.join(self.work, name)
            os.makedirs(self.files_of(name), exist_ok=True)
        s = start_pario_server(self.server_exe, root, self.secret, os.path.join(self.out, f"{name}.log"), extra)
        self.services.append(s)
        return s

    def stop_all(self) -> None:
        for s in self.services:
            s.stop()
        self.services.clear()

    def close(self) -> None:
        self.stop_all()
        shutil.rmtree(self.work, ignore_errors=True)

    def add(self, rec: Record) -> None:
        self.records.append(rec)
        with open(os.path.join(self.out, REMOTE_FILE), "a", encoding="utf-8") as f:
            f.write(json.dumps(rec.__dict__) + "\n")

    def settle(self) -> None:
        os.sync()
        time.sleep(1.0)

    def settle_write(self, nbytes: int) -> None:
        """Before a timed write of nbytes: settle, then write nbytes into a scratch file and
        remove it (its dirty pages are dropped, never written back). On a VM whose free memory
        goes back to the host while idle (virtio-balloon free page reporting), the first write
        into fresh page-cache pages pays host page faults (0.4-2.5 GB/s against 7-10 GB/s
        into pages just freed, measured with dd on the development VM); every system's write
        then starts from the same warm memory as far as the VM lets it (it still hands pages
        back on its own schedule)."""
        self.settle()
        local_write_mbps(self.work, nbytes)

    def xrootd(self, tag: str, python_client: bool) -> Optional[Service]:
        """An XRootD server for experiment tag, or None (said, and noted among the skipped) where
        XRootD, xrdcp or its Python client is missing or the server does not start: the pario
        and TCP parts of the experiment still run."""
        missing = [t for t in ("xrootd", "xrdcp") if not shutil.which(t)]
        if python_client and not has_xrootd_python():
            missing.append("XRootD's Python client (python3-xrootd)")
        try:
            if missing:
                raise RemoteError("not installed: " + ", ".join(missing))
            xrd = start_xrootd(os.path.join(self.out, f"xrootd-{tag}.log"))
        except RemoteError as e:
            self.skip(f"{tag} (XRootD)", str(e))
            return None
        self.services.append(xrd)
        return xrd

    def xrootd_with_file(self, tag: str, nbytes: int) -> Optional[Service]:
        """An XRootD server holding /TAG.dat of nbytes random bytes (copied in with xrdcp), or None."""
        xrd = self.xrootd(tag, python_client=True)
        if xrd is None:
            return None
        src = os.path.join(self.work, f"{tag}-src")
        with open(src, "wb") as f:
            f.write(os.urandom(nbytes))
        xrdcp_mbps(src, f"root://{xrd.address}//{tag}.dat", nbytes, self.log, 120)
        return xrd

    def skip(self, experiment: str, why: str) -> None:
        self.skipped[experiment] = why
        self.say(f"{experiment}: skipped: {why}")

    # experiments
    def seq(self) -> None:
        n = self.sizes.seq_bytes
        srv = self.server("seq")
        url = f"x-rio://{srv.address}/d"
        xrd = self.xrootd("seq", python_client=False)
        src = os.path.join(self.work, "seq-src")
        with open(src, "wb") as f:
            f.truncate(n)
        for run in range(self.repeat):
            self.say(f"seq: run {run + 1}/{self.repeat}")
            if shutil.which("iperf3"):
                self.settle()
                self.add(Record("seq", "tcp-copy", "mb_per_s", iperf3_mbps(n, self.log, 300), "MB/s", run))
            self.settle_write(n)
            self.add(Record("seq", "local-write", "mb_per_s", local_write_mbps(self.files_of("seq"), n), "MB/s", run))
            if self.bench:
                self.settle_write(n)
                rows = self.bench.run(1, ["remote", "--servers", url, "-s", str(n), "-b", "8M", "--mode",
                                          "nonblocking", "-q", "4", "-r", "1", "--no-verify"], self.work)
                for r in rows:
                    self.add(Record("seq", f"pario-{r['test']}", "mb_per_s", r["metrics"]["mb_per_s"], "MB/s", run))
            if xrd:
                self.settle_write(n)
                dst = f"root://{xrd.address}//seq.dat"
                self.add(Record("seq", "xrootd-write", "mb_per_s", xrdcp_mbps(src, dst, n, self.log, 300), "MB/s", run))
                self.settle()
                self.add(Record("seq", "xrootd-read", "mb_per_s", xrdcp_mbps(dst, "/dev/null", n, self.log, 300), "MB/s", run))
        self.stop_all()

    def req4k(self) -> None:
        count, block, depth = self.sizes.req_count, 4096, 64
        srv = self.server("req")
        url = f"x-rio://{srv.address}/d"
        xrd = self.xrootd_with_file("req", count * block)
        for run in range(self.repeat):
            self.say(f"req4k: run {run + 1}/{self.repeat}")
            if self.bench:
                rows = self.bench.run(1, ["remote", "--servers", url, "-s", str(count * block), "-b", "4K", "--op", "read",
                                          "--mode", "blocking,nonblocking", "-q", str(depth), "-r", "1"], self.work)
                for r in rows:
                    sysname = "pario-" + ("pipelined" if r["params"]["mode"] == "nonblocking" else "one-at-a-time")
                    self.add(Record("req4k", sysname, "requests_per_s", r["metrics"]["requests_per_s"], "req/s", run,
                                    {"depth": r["params"]["depth"]}))
            if xrd:
                sync, piped = xrootd_requests(f"root://{xrd.address}//req.dat", count, block, depth)
                self.add(Record("req4k", "xrootd-one-at-a-time", "requests_per_s", sync, "req/s", run))
                self.add(Record("req4k", "xrootd-pipelined", "requests_per_s", piped, "req/s", run, {"depth": depth}))
        self.stop_all()

    def vec32(self) -> None:
        count, seg, spacing = self.sizes.vec_count, 32, 128
        srv = self.server("vec")
        url = f"x-rio://{srv.address}/d"
        xrd = self.xrootd_with_file("vec", count * (seg + spacing))
        for run in range(self.repeat):
            self.say(f"vec32: run {run + 1}/{self.repeat}")
            if self.bench:
                rows = self.bench.run(1, ["noncontig", "--dir", url, "--region-size", str(seg), "--region-count",
                                          str(count), "--region-spacing", str(spacing), "--op", "read", "--access",
                                          "independent", "--mem", "contig", "--file", "noncontig", "-i", "1"], self.work)
                for r in rows:
                    self.add(Record("vec32", "pario", "segments_per_s", r["metrics"]["mb_per_s"] * 1e6 / seg, "seg/s", run))
            if xrd:
                rate = xrootd_vector(f"root://{xrd.address}//vec.dat", count, seg, seg + spacing)
                self.add(Record("vec32", "xrootd-vector-read", "segments_per_s", rate, "seg/s", run))
        self.stop_all()

    def btio(self) -> None:
        if "--emulate" not in self.help:
            return self.skip("btio", "this pario-server has no --emulate")
        n, iters = self.sizes.btio_n, self.sizes.btio_iters
        srv = self.server("btio", ["--emulate", "net_latency=100ms,net_bw=20MB/s"])
        url = f"x-rio://{srv.address}/d"
        stage = os.path.join(self.work, "stage")
        os.makedirs(stage, exist_ok=True)
        # the k compute steps between two checkpoints last as long as one checkpoint takes over
        # the 20 MB/s link (wall time: on this loaded machine calibrated units came out at a
        # quarter to a half of it): the link is the bottleneck, and what overlap can hide
        field_bytes, every = n ** 3 * 5 * 8, 5
        cost = max(0.01, field_bytes / 20e6 / every)
        variants = (("original", ["-H", "romio_cb_write=disable"]), ("optimised", ["--gather"]),
                    ("aggregated", ["-H", "romio_cb_write=enable"]))
        for run in range(self.repeat):
            self.say(f"btio: run {run + 1}/{self.repeat}")
            for variant, extra in variants:
                rows = self.bench.run(4, ["btio", "--dir", url, "--stage-dir", stage, "-n", str(n), "-i", str(iters),
                                          "-k", str(every), "--compute-cost", f"{cost:.4f}", "--compute-wall"] + extra,
                                     self.work)
                for r in rows:
                    self.add(Record("btio", f"{r['test']}-{variant}", "total_s", r["metrics"]["total_s"], "s", run,
                                    {"n": n, "iterations": iters, "compute_cost": cost}))
        self.stop_all()

    def scale(self) -> None:
        forward = "--forward-to" in self.help
        emulate = ["--emulate", "net_latency=1ms,net_bw=100MB/s"] if "--emulate" in self.help else []
        nbytes = self.sizes.scale_bytes
        for run in range(self.repeat):
            for servers in (1, 2):
                for via in (("direct", "forwarder") if forward else ("direct",)):
                    backs = [self.server(f"scale{run}-{servers}-{via}-{i}", emulate) for i in range(servers)]
                    fronts = backs if via == "direct" else [
                        self.server(f"fwd{run}-{servers}-{i}", ["--forward-to", b.address]) for i, b in enumerate(backs)]
                    urls = ",".join(f"x-rio://{s.address}/d" for s in fronts)
                    for clients in (1, 2, 4):
                        self.say(f"scale: run {run + 1}/{self.repeat}, {servers} server(s) {via}, {clients} client(s)")
                        rows = self.bench.run(clients, ["remote", "--servers", urls, "-s", str(nbytes // clients), "-b",
                                                        "1M", "-q", "8", "-r", "1", "--no-verify"], self.work)
                        for r in rows:
                            self.add(Record("scale", f"pario-{r['params']['mode']}-{r['test']}-{via}", "mb_per_s",
                                            r["metrics"]["mb_per_s"], "MB/s", run,
                                            {"clients": clients, "servers": servers}))
                    self.stop_all()
            if forward:
                self.scale_collective(run, emulate, nbytes)

    def scale_collective(self, run: int, emulate: List[str], nbytes: int) -> None:
        """What a forwarder buys (seed 004, sec. 3): 4 ranks write one shared file, one
        write_at_all of a 64 KiB block per rank per call, rank-interleaved, each rank sending
        its own block (romio_cb_write=disable); direct, the server gets 4 requests per call,
        through a forwarder one merged request. Recorded: bandwidth, and the WRITE requests the
        server handled (from its log at exit) per second of the run."""
        for via in ("direct", "forwarder"):
            back = self.server(f"coll{run}-{via}", emulate)
            front = back if via == "direct" else self.server(f"collfwd{run}", ["--forward-to", back.address])
            self.say(f"scale: run {run + 1}/{self.repeat}, collective writes of 4 clients {via}")
            rows = self.bench.run(4, ["remote", "--servers", f"x-rio://{front.address}/d", "-s", str(nbytes // 4),
                                      "-b", "64K", "--mode", "collective", "--op", "write", "-r", "1", "--no-verify",
                                      "-H", "romio_cb_write=disable"], self.work)
            self.stop_all()
            writes = served_writes(back.log_copy or back.log)
            for r in rows:
                secs = r["metrics"]["seconds"]
                params = {"clients": 4, "servers": 1}
                self.add(Record("scale", f"pario-collective-write-{via}", "mb_per_s", r["metrics"]["mb_per_s"], "MB/s",
                                run, params))
                if writes is not None and secs > 0:
                    self.add(Record("scale", f"server-writes-collective-{via}", "requests", writes, "req", run, params))
                    self.add(Record("scale", f"server-write-rate-collective-{via}", "requests_per_s", writes / secs,
                                    "req/s", run, params))


def run_sweep(out: str, server_exe: str, bench: Optional[BenchRunner], experiments: Sequence[str], quick: bool,
              repeat: int, progress: Callable[[str], None] = lambda s: print(s, flush=True)) -> Tuple[List[dict], Dict[str, str]]:
    os.makedirs(out, exist_ok=True)
    target = os.path.join(out, REMOTE_FILE)
    if os.path.exists(target):
        os.remove(target)
    sweep = Sweep(out, server_exe, bench, Sizes.pick(quick), repeat, progress)
    try:
        for exp in experiments:
            if bench is None and exp in ("btio", "scale", "vec32"):
                sweep.skip(exp, "no pario-bench/libpario.so found")
                continue
            try:
                getattr(sweep, exp)()
            except RemoteError as e:
                sweep.stop_all()
                sweep.skip(exp, str(e))
    finally:
        sweep.close()
    rows = summarize(sweep.records)
    with open(os.path.join(out, SUMMARY_FILE), "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "skipped": sweep.skipped,
                   "verdicts": [{"what": w, "ratio": r, "target": t} for w, r, t in verdicts(rows)]}, f, indent=1)
    return rows, sweep.skipped


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run it as `pario bench remote`")
