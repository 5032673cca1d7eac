"""pario's command lines against pario-bench's documented options.

benchargs.py is the only place that knows pario-bench's options; these tests catch drift
when the benchmark changes. They read bench/README.md, and `pario-bench SUITE --help` when
a build exists (help needs no MPI launch); without either they are skipped.
"""

import os
import re
import subprocess

import pytest

from pario import SUITES, benchargs
from pario.runner import bench_path, build_dir_default

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "bench", "README.md")


def _options_used(suite):
    opts = set(benchargs.OPTIONS[suite].values()) | {benchargs.RESULTS_OPT}
    if benchargs.DIR_OPT:
        opts.add(benchargs.DIR_OPT)
    return opts


def _documented(text):
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))


@pytest.mark.skipif(not os.path.exists(README), reason="bench/README.md not present")
def test_options_are_documented_in_bench_readme():
    documented = _documented(open(README, encoding="utf-8").read())
    for suite in SUITES:
        missing = _options_used(suite) - documented
        assert not missing, f"{suite}: options not in bench/README.md: {sorted(missing)}"


def _built_benches():
    found = []
    for root in {os.path.join(ROOT, "build"), build_dir_default()}:
        for mpi in ("openmpi", "mpich"):
            path = bench_path(root, mpi)
            if os.access(path, os.X_OK):
                found.append(path)
    return found


@pytest.mark.parametrize("suite", SUITES)
def test_options_are_accepted_by_built_binary(suite):
    benches = _built_benches()
    if not benches:
        pytest.skip("pario-bench not built")
    for bench in benches:
        p = subprocess.run([bench, suite, "--help"], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stderr
        missing = _options_used(suite) - _documented(p.stdout)
        assert not missing, f"{bench} {suite} --help lacks {sorted(missing)}"
        for name in benchargs.LIST_PARAMS[suite]:
            opt = benchargs.OPTIONS[suite][name]
            line = next((ln for ln in p.stdout.splitlines() if opt in ln), "")
            assert "LIST" in line, f"{suite}: {opt} is not a list option: {line!r}"
