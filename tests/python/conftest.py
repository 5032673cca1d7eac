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
            speed = 100.0 * ranks * (1.2 if impl == "pario" else 1.0)
            metrics = {"seconds": 1.0 / speed, "mb_per_s": speed}
            if suite == "overlap":
                metrics = {"ratio": 0.6 if impl == "pario" else 1.3, "reduce_p_time": 1.0,
                           "reduce_s_time": 1.5, "quality": 0.01, "p_avg_calc": 0.1,
                           "s_avg_calc": 0.1, "p_avg_io": 0.1, "s_avg_io": 0.1}
            elif suite == "btio":
                metrics = {"compute_s": 1.0, "io_s": 0.5, "total_s": 1.6, "mb_per_s": speed}
            elif suite == "sharedfp":
                metrics.update({"records": 64 * ranks, "records_per_s": 1000.0})
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
