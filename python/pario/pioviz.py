"""`pario trace experiment seed001`: seed 001's (PIOviz) experiments on pario-server, traced.

HPIO's noncontiguous write (pario-bench noncontig: contiguous memory, REGION_COUNT regions of
32 B and 1024 B per rank, 128 B gaps, the ranks' regions interleaved in the file), independent
(MPI_File_write) against collective (MPI_File_write_all, two-phase), and the collective buffer
at 0.5, 4, 16 and 64 MiB, each configuration against a fresh pario-server started with --trace
and --emulate (no page cache, a disk and a gigabit link: what the seed's servers had), the
clients traced with PARIO_TRACE. Each configuration's trace is reduced to the seed's server
columns (Tables 2-4) over the measured calls only: the server operations whose request ids
(flows) come from the clients' driver operations inside MPI_File_write / MPI_File_write_all,
over the time those calls took; the setup and verification I/O around them is left out.
docs/tracing.md says how the seed's four striped data servers map onto one pario-server.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import pages, tracereport
from .textout import text_table
from . import trace as tr
from .probes import BenchRunner
from .services import RemoteError, Service, start_pario_server, write_secret

MIB = 1 << 20
SEED_COUNT = 32768          # regions per rank in the seed
SPACING = 128
CB_SIZES = (MIB // 2, 4 * MIB, 16 * MIB, 64 * MIB)
DEFAULT_CB = 4 * MIB        # ROMIO's default, the seed's Table 2
# The seed's data servers: RAID-1 of 2006 disks behind ext3, gigabit Ethernet. cache=none:
# every WRITE is synced and its pages dropped, so the page cache does not hide the many small
# writes of independent I/O (the seed saw them as Trove load and CPU).
DEFAULT_EMULATE = "cache=none,disk_bw=60MB/s,net_bw=117MB/s,net_latency=50us"
MEASURED = ("MPI_File_write", "MPI_File_write_all")
RESULTS = "seed001.json"
REPORT = "seed001.html"

# The seed's Tables 2-4 (mean per data server of 4, sums over 10 iterations; throughput from
# HPIO). Columns: BMI load, Trove load, Trove access, Trove size (B/op), CPU %, MB/s.
SEED_T2 = {(32, "collective"): (0.425, 10, 800, 262137.6, 2.03, 15.842),
           (32, "independent"): (0, 49.9, 30719, 1365.4, 11.55, 5.352),
           (1024, "collective"): (0.875, 10.3, 5760, 262143.1, 5.02, 71.169),
           (1024, "independent"): (0.3, 59.4, 81919, 16384, 15.135, 92.954)}
SEED_CB = {32: {MIB // 2: (0.2, 10.275, 1600, 131068.8, 2.605, 14.962),
                4 * MIB: (0.425, 10, 800, 262137.6, 2.0325, 15.842),
                16 * MIB: (0.5, 10.5, 800, 262137.6, 2.0675, 23.571)},
           1024: {MIB // 2: (0.4, 10.475, 11520, 131071.6, 5.3475, 46.955),
                  4 * MIB: (0.875, 10.325, 5760, 262143.1, 5.02, 71.169),
                  16 * MIB: (2.025, 10.7, 5760, 262143.1, 5.355, 96.138),
                  64 * MIB: (2.6, 10.5, 5760, 262143.1, 5.38, 114.634)}}


class ExperimentError(Exception):
    """One line for the user (exit status 2)."""


@dataclass
class Config:
    region: int
    access: str                 # "independent" or "collective"
    cb: Optional[int] = None    # cb_buffer_size actually given (collective)
    cb_seed: Optional[int] = None  # the seed's CB size this one stands for

    @property
    def key(self) -> str:
        return f"r{self.region}-" + ("ind" if self.access == "independent" else f"coll-cb{self.cb}")

    @property
    def label(self) -> str:
        if self.access == "independent":
            return f"{self.region} B, independent"
        return f"{self.region} B, collective, CB {_size(self.cb)}" + (
            f" (seed {_size(self.cb_seed)})" if self.cb_seed != self.cb else "")


def _size(n: Optional[int]) -> str:
    if n is None:
        return "-"
    if n >= MIB:
        return f"{n / MIB:g} MiB"
    return f"{n / 1024:g} KiB" if n >= 1024 else f"{n} B"


def plan(count: int) -> List[Config]:
    """Per region size: independent, and collective at each CB size scaled by count/32768 (so
    that a quick run keeps the seed's number of two-phase rounds per call)."""
    out = []
    for region in (32, 1024):
        out.append(Config(region, "independent"))
        for cb in CB_SIZES:
            out.append(Config(region, "collective", max(4096, cb * count // SEED_COUNT), cb))
    return out


# ---- the statistics of one configuration's trace ----------------------------------------------

@dataclass
class ConfigStats:
    key: str
    label: str
    region: int
    access: str
    cb: Optional[int]
    cb_seed: Optional[int]
    ranks: int
    iterations: int             # measured calls per rank found in the trace
    seconds: float              # time of the measured calls (sum over iterations of first start .. last end)
    client_bytes: int           # bytes the measured calls moved (api spans' `bytes`)
    client_writes: int          # driver WRITE requests inside them (all ranks)
    client_reads: int           # driver READ requests inside them (read-before-write)
    net_ops: int
    net_load: float
    net_rate: float
    storage_ops: int
    storage_load: float
    storage_rate: float
    storage_kinds: str
    storage_write_ops: int
    storage_write_bytes: int
    storage_read_ops: int
    bytes_per_op: float
    cpu_pct: Optional[float]
    mb_per_s: Optional[float] = None   # pario-bench's (HPIO's) figure
    window: Tuple[int, int] = (0, 0)   # the last iteration, rank 0's clock (timeline)


def _is_write(name: str) -> bool:
    # pario-server's storage writes: "pwrite", or "splice" (WRITE data spliced into the file)
    return "write" in name.lower() or name.upper().endswith("WRITE") or name == "splice"


def _is_read(name: str) -> bool:
    return "read" in name.lower()


def measured_calls(p: tr.Proc) -> List[dict]:
    return sorted((e for e in p.spans if e.get("cat") == "api" and e.get("name") in MEASURED), key=lambda e: e["t"])


def config_stats(trace: tr.Trace, cfg: Config) -> ConfigStats:
    """The seed's server columns over the measured calls of trace (see the module's docstring).
    Raises ExperimentError when the trace has no measured call or no server."""
    if not trace.servers:
        raise ExperimentError(f"{cfg.label}: the trace has no server file")
    calls = {p.rank: measured_calls(p) for p in trace.clients}
    n = min((len(c) for c in calls.values()), default=0)
    if n == 0:
        raise ExperimentError(f"{cfg.label}: no {' or '.join(MEASURED)} in the clients' traces")
    windows, kinds, nbytes = [], {}, 0  # kinds: request id (flow) -> the request's name
    for k in range(n):
        lo = min(calls[p.rank][k]["t"] + p.offset for p in trace.clients)
        hi = max(calls[p.rank][k]["t"] + calls[p.rank][k]["d"] + p.offset for p in trace.clients)
        windows.append((lo, hi))
    for p in trace.clients:
        for c in calls[p.rank][:n]:
            nbytes += int((c.get("args") or {}).get("bytes", 0))
            a, b, tid = c["t"], c["t"] + c["d"], c.get("tid", 0)
            during = [e for e in p.spans if e.get("cat") == "driver" and a <= e["t"] <= b]
            inside = sorted((e for e in during if e.get("tid", 0) == tid), key=lambda e: (e["t"], -e["d"]))
            for i, e in enumerate(inside):
                # the request is the innermost span: core's span of a transfer (its own id)
                # holds the remote driver's (the id the server saw)
                if i + 1 < len(inside) and inside[i + 1]["t"] < e["t"] + e["d"]:
                    continue
                if isinstance(e.get("flow"), int) and e["flow"]:
                    kinds[e["flow"]] = e.get("name", "")
            # requests submitted by the call and completed by the connection's receiver thread
            # are recorded there (driver/rio.c), side by side rather than nested; the engine's
            # workers (pario-io) run other calls' jobs
            for e in during:
                if (e.get("tid", 0) != tid and not str(e.get("thread", "")).startswith("pario-io")
                        and isinstance(e.get("flow"), int) and e["flow"]):
                    kinds[e["flow"]] = e.get("name", "")
    flows = set(kinds)
    writes = sum(1 for k in kinds.values() if _is_write(k))
    reads = sum(1 for k in kinds.values() if _is_read(k) and not _is_write(k))
    secs_ns = sum(hi - lo for lo, hi in windows)
    servers = []
    for s in trace.servers:  # a copy with only what served the measured calls
        f = tr.Proc(path=s.path, kind=s.kind, name=s.name, pid=s.pid, host=s.host, offset=s.offset, err=s.err,
                    offset_given=s.offset_given, threads=s.threads, files=s.files)
        # storage accesses are the reads and writes (the seed's Trove read/write): not the
        # open a lazily connecting client's first request causes
        f.spans = [e for e in s.spans if e.get("flow") in flows
                   and (e.get("cat") != "storage" or _is_read(e.get("name", "")) or _is_write(e.get("name", "")))]
        f.counters = [c for c in s.counters
                      if any(lo <= c["t"] + s.offset <= hi for lo, hi in windows)]
        servers.append(f)
    st = tr.server_stats(tr.Trace(servers), duration_ns=secs_ns)
    sto = [e for s in servers for e in s.spans if e.get("cat") == "storage"]
    wr = [e for e in sto if _is_write(e.get("name", ""))]
    cpu = [x.cpu_pct for x in st if x.cpu_pct is not None]
    ops = sum(x.storage_ops for x in st)
    return ConfigStats(
        key=cfg.key, label=cfg.label, region=cfg.region, access=cfg.access, cb=cfg.cb, cb_seed=cfg.cb_seed,
        ranks=len(trace.clients), iterations=n, seconds=secs_ns / 1e9, client_bytes=nbytes,
        client_writes=writes, client_reads=reads, net_ops=sum(x.net_ops for x in st),
        net_load=sum(x.net_load for x in st), net_rate=sum(x.net_rate for x in st), storage_ops=ops,
        storage_load=sum(x.storage_load for x in st), storage_rate=sum(x.storage_rate for x in st),
        storage_kinds=", ".join(sorted({k for x in st for k in x.storage_kinds.split(", ") if k})),
        storage_write_ops=len(wr), storage_write_bytes=sum(tr._bytes_of(e) for e in wr),
        storage_read_ops=len(sto) - len(wr),
        bytes_per_op=sum(tr._bytes_of(e) for e in sto) / ops if ops else 0.0,
        cpu_pct=sum(cpu) / len(cpu) if cpu else None, window=windows[-1])


# ---- running it -------------------------------------------------------------------------------

@dataclass
class Setup:
    server_exe: str
    bench: BenchRunner
    ranks: int = 4
    count: int = SEED_COUNT
    iterations: int = 3
    emulate: str = DEFAULT_EMULATE
    quick: bool = False
    say: Callable[[str], None] = field(default=lambda s: print(s, file=sys.stderr, flush=True))


def bench_args(cfg: Config, url: str, setup: Setup) -> List[str]:
    args = ["noncontig", "--dir", url, "--region-size", str(cfg.region), "--region-count", str(setup.count),
            "--region-spacing", str(SPACING), "--op", "write", "--access", cfg.access, "--mem", "contig",
            "--file", "noncontig", "-i", str(setup.iterations), "--repeat", "1"]
    if cfg.access == "collective":
        args += ["-H", "romio_cb_write=enable", "-H", f"cb_buffer_size={cfg.cb}"]
    else:
        args += ["-H", "romio_cb_write=disable"]
    return args


def run_config(cfg: Config, setup: Setup, work: str, tdir: str, secret: str, log_dir: str) -> ConfigStats:
    """One configuration: a fresh traced, emulating pario-server, pario-bench noncontig traced
    against it, the server stopped (it writes its trace at exit), the trace reduced."""
    shutil.rmtree(tdir, ignore_errors=True)
    os.makedirs(tdir)
    root = os.path.join(work, cfg.key)
    os.makedirs(os.path.join(root, "d"), exist_ok=True)
    srv: Optional[Service] = None
    try:
        srv = start_pario_server(setup.server_exe, root, secret, os.path.join(log_dir, f"server-{cfg.key}.log"),
                                 ["--trace", tdir, "--emulate", setup.emulate])
        rows = setup.bench.run(setup.ranks, bench_args(cfg, f"x-rio://{srv.address}/d", setup), work,
                               {"PARIO_TRACE": os.path.abspath(tdir)})
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(root, ignore_errors=True)
    try:
        trace = tr.load(tdir)
    except tr.TraceError as e:
        raise ExperimentError(str(e)) from None
    st = config_stats(trace, cfg)
    st.mb_per_s = rows[0].get("metrics", {}).get("mb_per_s") if rows else None
    return st


def run(out: str, setup: Setup) -> List[ConfigStats]:
    """Every configuration, in order; progress on stderr; results in OUT/seed001.json and the
    report in OUT/seed001.html. Ctrl-C: the current MPI job and server are stopped (their
    process groups) before the interrupt goes on."""
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="pario-seed001-", dir=out)
    secret = os.path.join(work, "secret")
    write_secret(secret)
    setup.bench.secret = secret
    setup.bench.log = os.path.join(out, "bench.log")
    configs = plan(setup.count)
    stats: List[ConfigStats] = []
    t_all = time.monotonic()
    try:
        for i, cfg in enumerate(configs, 1):
            setup.say(f"pario trace experiment: [{i}/{len(configs)}] {cfg.label}, {setup.ranks} ranks x "
                      f"{setup.count} regions, {setup.iterations} iteration(s)")
            t0 = time.monotonic()
            st = run_config(cfg, setup, work, os.path.join(out, "traces", cfg.key), secret, out)
            stats.append(st)
            setup.say(f"pario trace experiment: [{i}/{len(configs)}] done in {time.monotonic() - t0:.1f} s: "
                      f"{st.storage_ops} storage ops of {st.bytes_per_op:.0f} B, "
                      f"{'%.2f MB/s' % st.mb_per_s if st.mb_per_s else 'no throughput'}")
    except RemoteError as e:
        raise ExperimentError(str(e)) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    meta = {"ranks": setup.ranks, "region_count": setup.count, "spacing": SPACING, "iterations": setup.iterations,
            "emulate": setup.emulate, "quick": setup.quick, "mpi": setup.bench.mpi,
            "elapsed_s": round(time.monotonic() - t_all, 1)}
    with open(os.path.join(out, RESULTS), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "configs": [asdict(s) for s in stats]}, f, indent=1)
    write_report(out, meta, stats)
    return stats


# ---- the report -------------------------------------------------------------------------------

COLUMNS = ["", "network load", "network ops/s", "storage load", "storage ops/s", "storage accesses (ops)",
           "bytes / storage op", "CPU (%)", "throughput (MB/s)"]


def _seed_row(label: str, v: Optional[tuple], kinds: str) -> List[str]:
    if v is None:
        return [label, "-", "", "-", "", "-", "-", "-", "-"]
    return [label, f"{v[0]:g}", "", f"{v[1]:g}", "", f"{v[2]:g} ({kinds})", f"{v[3]}", f"{v[4]:g}", f"{v[5]:g}"]


def _our_row(label: str, s: ConfigStats) -> List[str]:
    return [label, f"{s.net_load:.3f}", f"{s.net_rate:.0f}", f"{s.storage_load:.3f}", f"{s.storage_rate:.0f}",
            f"{s.storage_ops} ({s.storage_kinds or '-'})", f"{s.bytes_per_op:.1f}",
            "-" if s.cpu_pct is None else f"{s.cpu_pct:.2f}", "-" if s.mb_per_s is None else f"{s.mb_per_s:.3f}"]


def tables(stats: Sequence[ConfigStats]) -> Dict[str, List[List[str]]]:
    """Table 2 (independent vs collective at the default CB), 3 (32 B over CB sizes) and 4
    (1024 B): for each configuration the seed's row, then ours."""
    by = {(s.region, s.access, s.cb_seed): s for s in stats}
    t2, t3, t4 = [], [], []
    for region in (32, 1024):
        for access, mode in (("collective", "C"), ("independent", "I")):
            s = by.get((region, access, DEFAULT_CB if access == "collective" else None))
            kinds = "read, write" if access == "collective" else "write"
            t2.append(_seed_row(f"{region} B {mode}: seed", SEED_T2.get((region, access)), kinds))
            if s:
                given = f" (CB given {_size(s.cb)})" if s.cb and s.cb != s.cb_seed else ""
                t2.append(_our_row(f"{region} B {mode}: pario{given}", s))
    for region, rows in ((32, t3), (1024, t4)):
        for cb in CB_SIZES:
            s = by.get((region, "collective", cb))
            rows.append(_seed_row(f"CB {_size(cb)}: seed", SEED_CB[region].get(cb), "read, write"))
            if s:
                rows.append(_our_row(f"CB {_size(cb)}: pario" + (f" (given {_size(s.cb)})" if s.cb != cb else ""), s))
    return {"2": t2, "3": t3, "4": t4}


def text_tables(stats: Sequence[ConfigStats]) -> str:
    t = tables(stats)
    names = {"2": "Table 2: independent (I) vs collective (C), default CB",
             "3": "Table 3: collective, 32 B regions, CB size", "4": "Table 4: collective, 1024 B regions, CB size"}
    return "\n\n".join(f"{names[k]}\n{text_table(COLUMNS, rows, right=range(1, len(COLUMNS)))}" for k, rows in t.items())


TIMELINE = "last-iteration.html"  # in each configuration's trace directory


def write_timeline(trace_dir: str, s: ConfigStats) -> str:
    """The interactive trace report (tracereport) of the configuration's last iteration, beside
    its trace; its path."""
    trace = tr.load(trace_dir)
    path = os.path.join(trace_dir, TIMELINE)
    with open(path, "w", encoding="utf-8") as f:
        f.write(tracereport.report_html(trace, f"Seed 001, {s.label}: the last iteration", s.window))
    return path


def write_report(out: str, meta: dict, stats: Sequence[ConfigStats]) -> str:
    t = tables(stats)
    timelines = []
    for s in stats:
        d = os.path.join(out, "traces", s.key)
        error = ""
        try:
            write_timeline(d, s)
        except tr.TraceError as e:
            error = str(e)
        lo, hi = s.window
        timelines.append({"label": s.label, "href": os.path.relpath(os.path.join(d, TIMELINE), out), "dir": d,
                          "ms": (hi - lo) / 1e6, "writes": s.client_writes, "reads": s.client_reads, "error": error})
    rows = {k: (COLUMNS, v, ["seed" if r[0].endswith("seed") else "ours" for r in v]) for k, v in t.items()}
    return pages.write(os.path.join(out, REPORT), "seed001.html.j2", m=meta, t=rows, timelines=timelines)
