"""`pario trace experiment seed001` (python/pario/pioviz.py): the table computation on a
synthetic trace with hand-computed numbers, and the quick experiment end to end against the
built pario-server, pario-bench and libpario, its tables checked against what the trace files
and the pattern let one count independently."""

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from pario import pioviz
from pario import trace as tr
from pario.locate import find_bench, find_server
from synthtrace import span as _span, write_lines as _write

CHUNK = 1 << 20  # server/server.h SRV_CHUNK: the largest storage op of a request
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _header(kind, name, pid, offset, rank=None):
    h = {"type": "header", "format": "pario-trace", "version": 1, "kind": kind, "pid": pid, "host": "h",
         "name": name, "clock_offset_ns": offset, "clock_err_ns": 0}
    if rank is not None:
        h["rank"] = rank
    return h


@pytest.fixture
def synthetic(tmp_path):
    """Two ranks (rank 1's clock 100 ns behind rank 0's), one server on rank 0's clock. A setup
    write (flow 1) before the two measured write_all calls; inside them a READ (flow 2) and
    WRITEs (flows 3, 4) on rank 0."""
    d = tmp_path / "tr"
    d.mkdir()
    _write(d / "client-0-1.jsonl", [
        _header("client", "rank 0", 1, 0, rank=0),
        _span(0, 1000, "MPI_File_write_at", "api", bytes=999),
        _span(100, 500, "rio WRITE", "driver", flow=1),
        _span(10000, 10000, "MPI_File_write_all", "api", bytes=64, coll=1),
        _span(11000, 1000, "rio READ", "driver", flow=2),
        _span(14000, 2000, "pwritev", "driver", flow=99),   # core's span of the transfer (its own id) ...
        _span(14050, 1900, "rio WRITE", "driver", flow=3),  # ... holds the driver's request
        _span(30000, 10000, "MPI_File_write_all", "api", bytes=64, coll=1),
        _span(32000, 1000, "rio WRITE", "driver", flow=4),
    ])
    _write(d / "client-1-2.jsonl", [
        _header("client", "rank 1", 2, 100, rank=1),
        _span(10000, 12000, "MPI_File_write_all", "api", bytes=64, coll=1),   # 10100 .. 22100
        _span(29000, 5000, "MPI_File_write_all", "api", bytes=64, coll=1),    # 29100 .. 34100
    ])
    _write(d / "server-5000-3.jsonl", [
        _header("server", "server 127.0.0.1:5000", 3, 0),
        _span(200, 50, "recv WRITE", "net", flow=1, bytes=10),         # setup: not counted
        _span(300, 70, "pwrite", "storage", flow=1, bytes=999),
        _span(11100, 200, "recv READ", "net", flow=2, bytes=32),
        _span(11300, 500, "pread", "storage", flow=2, bytes=4096),
        _span(11800, 300, "send READ", "net", flow=2, bytes=4096),
        _span(14100, 400, "recv WRITE", "net", flow=3, bytes=4096),
        _span(14550, 50, "open", "storage", flow=3, bytes=0),          # not an access
        _span(14600, 1000, "pwrite", "storage", flow=3, bytes=4096),
        _span(32100, 100, "recv WRITE", "net", flow=4, bytes=2048),
        _span(32200, 600, "pwrite", "storage", flow=4, bytes=2048),
        {"type": "counter", "t": 12000, "name": "cpu_pct", "value": 10},
        {"type": "counter", "t": 35000, "name": "cpu_pct", "value": 30},
        {"type": "counter", "t": 50000, "name": "cpu_pct", "value": 90},  # after the calls
    ])
    return str(d)


def test_config_stats_by_hand(synthetic):
    s = pioviz.config_stats(tr.load(synthetic), pioviz.Config(32, "collective", 4096, 4 << 20))
    # windows: [10000, 22100] and [29100, 40000] on rank 0's clock: 12100 + 10900 ns
    assert s.iterations == 2 and s.ranks == 2
    assert s.seconds == pytest.approx(23000e-9)
    assert s.window == (29100, 40000)
    assert s.client_bytes == 4 * 64
    assert (s.client_writes, s.client_reads) == (2, 1)
    assert s.net_ops == 4
    assert s.net_load == pytest.approx((200 + 300 + 400 + 100) / 23000)
    assert s.net_rate == pytest.approx(4 / 23000e-9)
    assert s.storage_ops == 3 and s.storage_kinds == "pread, pwrite"
    assert s.storage_load == pytest.approx((500 + 1000 + 600) / 23000)
    assert s.storage_rate == pytest.approx(3 / 23000e-9)
    assert (s.storage_write_ops, s.storage_write_bytes, s.storage_read_ops) == (2, 4096 + 2048, 1)
    assert s.bytes_per_op == pytest.approx((4096 + 4096 + 2048) / 3)
    assert s.cpu_pct == pytest.approx(20)


def test_config_stats_errors(synthetic, tmp_path):
    t = tr.load(synthetic)
    t.procs = [p for p in t.procs if p.kind == "client"]
    with pytest.raises(pioviz.ExperimentError, match="no server"):
        pioviz.config_stats(t, pioviz.Config(32, "independent"))
    t = tr.load(synthetic)
    for p in t.clients:
        p.spans = [e for e in p.spans if e["name"] != "MPI_File_write_all"]
    with pytest.raises(pioviz.ExperimentError, match="no MPI_File_write"):
        pioviz.config_stats(t, pioviz.Config(32, "independent"))


def test_plan_scales_cb_and_tables_pair_rows(synthetic):
    cfgs = pioviz.plan(1024)
    assert [c.key for c in cfgs if c.region == 32] == ["r32-ind", "r32-coll-cb16384", "r32-coll-cb131072",
                                                        "r32-coll-cb524288", "r32-coll-cb2097152"]
    assert [c.cb for c in pioviz.plan(32768) if c.access == "collective"][:4] == list(pioviz.CB_SIZES)
    s = pioviz.config_stats(tr.load(synthetic), cfgs[2])
    s.mb_per_s = 1.5
    t = pioviz.tables([s])
    seed_row, ours = t["2"][0], t["2"][1]
    assert seed_row[0] == "32 B C: seed" and seed_row[5] == "800 (read, write)"
    assert ours[0] == "32 B C: pario (CB given 128 KiB)" and ours[5] == "3 (pread, pwrite)" and ours[8] == "1.500"
    assert [r[0] for r in t["3"]][:3] == ["CB 512 KiB: seed", "CB 4 MiB: seed", "CB 4 MiB: pario (given 128 KiB)"]


# ---- end to end ---------------------------------------------------------------------------------

BUILD = os.environ.get("PARIO_BUILD_DIR", os.path.join(ROOT, "build"))
SERVER = find_server("mpich", BUILD)
BENCH = find_bench("mpich", BUILD)
RANKS, COUNT = 4, 1024


def _flows_of_measured(d):
    """From the clients' files: the flows of driver requests inside MPI_File_write(_all), by name."""
    t = tr.load(d)
    flows = {}
    for p in t.clients:
        for c in pioviz.measured_calls(p):
            for e in p.spans:
                if e["cat"] == "driver" and c["t"] <= e["t"] <= c["t"] + c["d"] and e.get("flow"):
                    flows.setdefault(e["flow"], set()).add(e["name"])
    return t, flows


def _check_chunked(ops, requests, key):
    """Every request reached storage, each in pieces of at most CHUNK, as few as its bytes need."""
    per_req = {}
    for e in ops:
        per_req.setdefault(e["flow"], []).append(e["args"]["bytes"])
    assert set(per_req) == set(requests), key
    for sizes in per_req.values():
        assert max(sizes) <= CHUNK and len(sizes) == -(-sum(sizes) // CHUNK), (key, sizes)


@pytest.mark.skipif(SERVER is None or BENCH is None or not BENCH.lib,
                    reason="pario-server, pario-bench or libpario.so (mpich) not built (make build)")
def test_quick_experiment_end_to_end(tmp_path):
    out = tmp_path / "seed001"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    res = subprocess.run([sys.executable, "-m", "pario", "--build-dir", BUILD, "trace", "experiment", "seed001",
                          "--quick", "--out", str(out)], capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[10/10] done" in res.stderr and "Table 2" in res.stdout
    data = json.loads((out / "seed001.json").read_text())
    assert data["meta"]["region_count"] == COUNT and data["meta"]["iterations"] == 1
    by = {c["key"]: c for c in data["configs"]}
    assert len(by) == 10
    for key, c in by.items():
        useful = c["region"] * COUNT * RANKS * c["iterations"]
        assert c["ranks"] == RANKS and c["client_bytes"] == useful, key
        t, flows = _flows_of_measured(str(out / "traces" / key))
        srv = t.servers[0]
        mine = [e for e in srv.spans if e.get("flow") in flows]
        writes = [e for e in mine if e["cat"] == "storage" and e["name"] in ("pwrite", "splice")]
        reads = [e for e in mine if e["cat"] == "storage" and e["name"] == "pread"]
        recv_w = [e for e in mine if e["cat"] == "net" and e["name"] == "recv WRITE"]
        client_w = [f for f, n in flows.items() if "rio WRITE" in n]
        # every WRITE the clients sent arrived once at the server
        assert len(recv_w) == len(client_w) == c["client_writes"], key
        assert (c["storage_write_ops"], c["storage_read_ops"]) == (len(writes), len(reads)), key
        assert c["storage_write_bytes"] == sum(e["args"]["bytes"] for e in writes), key
        if c["access"] == "independent":
            # only the regions reach storage: one write per region, no gap bytes
            assert c["storage_write_bytes"] == useful and c["storage_write_ops"] == COUNT * RANKS, key
            assert c["bytes_per_op"] == pytest.approx(c["region"]), key
        else:
            # two-phase: each aggregator's WRITE (and read-before-write READ) is contiguous, holding
            # its gaps too, and the server moves it in pieces of at most CHUNK (server/read.c, write.c)
            client_r = [f for f, n in flows.items() if "rio READ" in n]
            assert len(client_r) == c["client_reads"], key
            _check_chunked(writes, client_w, key)
            _check_chunked(reads, client_r, key)
            assert c["storage_write_bytes"] >= useful, key
    for region in (32, 1024):
        ind, coll = by[f"r{region}-ind"], by[f"r{region}-coll-cb{4 * 2 ** 20 * COUNT // 32768}"]
        assert coll["storage_ops"] < ind["storage_ops"] and coll["bytes_per_op"] > 10 * ind["bytes_per_op"]
        cbs = [by[k] for k in sorted(by, key=lambda k: by[k]["cb"] or 0) if by[k]["region"] == region and by[k]["cb"]]
        ops = [c["storage_ops"] for c in cbs]
        assert ops == sorted(ops, reverse=True) and ops[0] > ops[-1], ops  # a bigger buffer, fewer operations
    html = (out / "seed001.html").read_text()
    assert "Table 3" in html and "30719 (write)" in html
    # a timeline per configuration: the interactive report over its last iteration, linked
    links = re.findall(r'<li class="timeline"><a href="([^"]+)">', html)
    assert sorted(links) == sorted(f"traces/{k}/{pioviz.TIMELINE}" for k in by)
    for link in links:
        page = (out / link).read_text()
        assert '<canvas id="tl"' in page and "the last iteration" in page, link
        n = int(re.search(r"(\d+) spans", page).group(1))
        assert 0 < n < len([e for p in tr.load(str(out / os.path.dirname(link))).procs for e in p.spans]), link
    left = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True).stdout.strip()
    assert not left, f"processes left running: {left}"
    assert not glob.glob(str(out / "pario-seed001-*")), "the servers' work directory was not removed"
