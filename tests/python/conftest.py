"""Shared fixtures for the pario Python tests: the stored results file and a fake build tree.

The fake pario-bench is a Python script that accepts the command line pario builds and
writes JSON lines like the real binary, so the sweep machinery is tested without MPI.
"""

import os
import stat
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "results.jsonl")

FAKE_BENCH = textwrap.dedent('''
    """Fake pario-bench: writes one JSON line per combination of comma-separated option values."""
    import itertools, json, os, sys, time

    suite = sys.argv[1]
    args = sys.argv[2:]
    opts, i = {}, 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and "=" in a:
            k, v = a[2:].split("=", 1)
            i += 1
        elif a.startswith("-") and i + 1 < len(args) and not args[i + 1].startswith("-"):
            k, v = a.lstrip("-"), args[i + 1]
            i += 2
        else:
            k, v = a.lstrip("-"), "1"
            i += 1
        opts.setdefault(k.replace("-", "_"), []).append(v)
    out = (opts.pop("o", None) or opts.pop("results", None))[0]
    for k in ("dir", "d", "keep", "no_verify"):
        opts.pop(k, None)
    if os.environ.get("FAKE_SLEEP_SUITE") == suite:
        time.sleep(30)
    if os.environ.get("FAKE_FAIL_SUITE") == suite:
        print("fake failure in " + suite, file=sys.stderr)
        sys.exit(3)
    impl = "pario" if "libpario" in os.environ.get("LD_PRELOAD", "") else "native"
    mpi = os.environ.get("FAKE_MPI") or ("mpich" if "/mpich/" in sys.argv[0] else "openmpi")
    ranks = int(os.environ.get("FAKE_RANKS", "1"))
    # FAKE_ORDER_LOG: each launch appends "suite mpi impl" there, and its figures vary with the
    # launch's position (x 1.0, 1.1, 1.2, 1.0, ...) so that medians and spreads are not trivial.
    call, order_log = 0, os.environ.get("FAKE_ORDER_LOG")
    if order_log:
        with open(order_log, "a+") as f:
            f.seek(0)
            call = len(f.read().splitlines())
            f.write(f"{suite} {mpi} {impl}\\n")
    jitter = 1.0 + 0.1 * (call % 3)
    keys = sorted(opts)
    values = [",".join(opts[k]).split(",") for k in keys]
    bad_verify = os.environ.get("FAKE_VERIFY_FAIL") == suite
    rc = 0
    with open(out, "a") as f:
        for combo in itertools.product(*values):
            params = {}
            for k, v in zip(keys, combo):
                try:
                    params[k] = int(v)
                except ValueError:
                    params[k] = v
            speed = 100.0 * ranks * (1.2 if impl == "pario" else 1.0) * jitter
            metrics = {"seconds": 1.0 / speed, "mb_per_s": speed}
            if suite == "overlap":
                metrics = {"ratio": 0.6 if impl == "pario" else 1.3, "reduce_p_time": 1.0,
                           "reduce_s_time": 1.5, "quality": 0.01, "p_avg_calc": 0.1,
                           "s_avg_calc": 0.1, "p_avg_io": 0.1, "s_avg_io": 0.1}
            elif suite == "btio":
                metrics = {"compute_s": 1.0, "io_s": 0.5, "total_s": 1.6, "mb_per_s": speed}
            elif suite == "sharedfp":
                metrics.update({"records": 64 * ranks, "records_per_s": 1000.0 * jitter,
                                "limit_records_per_s": 4000.0, "share": 0.25 * jitter})
            rec = {"suite": suite, "test": params.get("test", suite), "impl": impl,
                   "impl_version": "0.1.0", "mpi": mpi, "mpi_version": "fake", "ranks": ranks,
                   "params": params, "metrics": metrics,
                   "verified": False if bad_verify else True,
                   "status": "failed" if bad_verify else "ok",
                   "error": "verification: byte 7 differs" if bad_verify else None,
                   "time": "2025-01-01T00:00:00Z"}
            f.write(json.dumps(rec) + "\\n")
            rc = 1 if bad_verify else rc
    print(suite, "done")
    sys.exit(rc)
''')


@pytest.fixture(autouse=True)
def quick_settle(monkeypatch):
    """The settle step without its pause and with sync(2) counted, not made: sweeps against the
    fake pario-bench stay fast. Returns the list the sync calls are recorded in."""
    from pario import settle
    calls = []
    monkeypatch.setattr(settle, "DEFAULT_PAUSE", 0.0)
    monkeypatch.setattr(settle, "do_sync", lambda: calls.append("sync"))
    return calls


@pytest.fixture
def fixture_path():
    return FIXTURE


@pytest.fixture
def fake_build(tmp_path):
    """A build tree with a fake pario-bench and an (empty) libpario.so for both flavours."""
    root = tmp_path / "build"
    for mpi in ("openmpi", "mpich"):
        bench = root / mpi / "bench" / "pario-bench"
        bench.parent.mkdir(parents=True)
        bench.write_text("#!" + sys.executable + "\n" + FAKE_BENCH)
        bench.chmod(bench.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        lib = root / mpi / "src" / "libpario.so"
        lib.parent.mkdir(parents=True)
        lib.write_bytes(b"")
    return root


# The custom launcher the sweep tests use: hands the rank count to the fake through env.
FAKE_LAUNCHER = "env FAKE_RANKS={ranks}"


def synthetic_measurements():
    """Results of a small sweep with repeats (3 runs of every configuration), for report tests:
    overlap in the cached and the direct regime, cfs bandwidths spanning three decades, missing
    fields (no impl_version, null parameters, a parameter only some runs report)."""
    out = []

    def add(suite, test, impl, mpi, ranks, params, metrics, status="ok", verified=True, error=None):
        rec = {"suite": suite, "test": test, "impl": impl, "mpi": mpi, "ranks": ranks,
               "params": dict(params, hints={}), "metrics": metrics, "verified": verified,
               "status": status, "error": error, "time": "2025-01-01T00:00:00Z"}
        if impl == "native":
            rec["mpi_version"] = None           # missing fields must not show as "None"
        else:
            rec["impl_version"] = "0.1.0"
        out.append(rec)

    for rep in range(3):
        j = 1.0 + 0.05 * rep                    # spread between repeats
        jo = (1.0, 1.05, 1.3)[rep]              # overlap's: skewed, so that its median (1.05) is not its mean
        for mpi in ("openmpi", "mpich"):
            for ranks in (1, 2):
                for regime in ("cached", "direct"):
                    for impl in ("native", "pario"):
                        ratio = (1.0 if impl == "native" else 0.55 if regime == "direct" else 0.95) * jo
                        add("overlap", "equal", impl, mpi, ranks,
                            {"size": ranks, "elements": 8 << 20, "scenario": "equal", "api": "native",
                             "regime": regime, "io_ratio": None},
                            {"ratio": ratio, "reduce_p_time": ratio, "reduce_s_time": 1.0, "quality": 0.05})
                for bs in (4096, 1 << 20):
                    for impl in ("native", "pario"):
                        speed = (5.0 if bs == 4096 else 2500.0) * ranks * j * (1.1 if impl == "pario" else 1.0)
                        add("cfs", "partitioned-write", impl, mpi, ranks,
                            {"test": "partitioned-write", "block_size": bs, "file_size": 16 << 20, "groups": 0},
                            {"seconds": 1.0 / speed, "mb_per_s": speed})
                for mode in (1, 2):
                    for impl in ("native", "pario"):
                        comp = None if impl == "native" else "sm"
                        params = {"mode": mode, "data_size": 1 << 20, "loops": 8, "sharedfp_component": comp}
                        if mode == 2 and impl == "native" and mpi == "openmpi":
                            add("sharedfp", "write_ordered", impl, mpi, ranks, params, {}, status="unsupported",
                                verified=None, error="MPI_File_write_ordered: unsupported")
                        else:
                            add("sharedfp", "write_shared" if mode == 1 else "write_ordered", impl, mpi, ranks,
                                params, {"mb_per_s": 100.0 * mode * j, "records_per_s": 1000.0})
                for impl in ("native", "pario"):
                    add("btio", "blocking", impl, mpi, ranks,
                        {"n": 32, "mode": "blocking", "iterations": 10, "write_every": 5},
                        {"compute_s": 1.0 * j, "io_s": 0.4 * j, "total_s": 1.5 * j, "mb_per_s": 20.0 * j})
                    for rs in (32, 1024):
                        for access in ("independent", "collective"):
                            params = {"region_size": rs, "access": access, "op": "write", "mem": "contig",
                                      "file": "noncontig"}
                            if access == "collective":
                                params["sync"] = False          # only some runs name this parameter
                            add("noncontig", f"{access}-write", impl, mpi, ranks, params,
                                {"mb_per_s": rs * 0.5 * j, "seconds": 0.1})
    return out


def write_synthetic_results(directory):
    import json
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "results.jsonl"), "w") as f:
        for rec in synthetic_measurements():
            f.write(json.dumps(rec) + "\n")
    return directory
