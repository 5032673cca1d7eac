"""The pario-bench command line of one run: the only place that knows pario-bench's options.

A case is a dict of parameters named as in the `params` object of the results
(block_size, region_size, mode, ...). Each suite has a table from parameter name to
option; a list value becomes one comma-separated option when the suite sweeps that
parameter inside one run (LIST_PARAMS), else the planner expands it into several runs.
Adjust here when pario-bench's options change (see bench/README.md).
"""

from __future__ import annotations

from typing import Dict, List, Tuple

# pario-bench options common to every subcommand (bench/README.md, "Common options").
RESULTS_OPT = "--results"   # -o/--results FILE: append one JSON line per measurement
DIR_OPT = "--dir"           # directory where the test files are created
HINT_OPT = "--hint"         # -H/--hint KEY=VALUE, repeatable

# Parameter name -> option, per subcommand. Booleans are flags (given when true); a dict
# (hints) becomes one option per entry. Every subcommand takes `hints`.
OPTIONS: Dict[str, Dict[str, str]] = {
    "overlap": {
        "elements": "--elements",            # bytes per write per rank
        "iterations": "--iterations",
        "fill_elements": "--fill-elements",
        "fill_iterations": "--fill-iterations",
        "scenario": "--scenario",
        "io_ratio": "--ratio",
        "api": "--api",
        "regime": "--regime",
        "margin": "--margin",
        "min_tries": "--min-tries",
        "max_tries": "--max-tries",
        "hints": HINT_OPT,
    },
    "cfs": {
        "test": "--test",
        "block_size": "--block-size",
        "file_size": "--file-size",
        "groups": "--groups",
        "api": "--api",
        "preallocate": "--preallocate",
        "repeat": "--repeat",
        "hints": HINT_OPT,
    },
    "noncontig": {
        "region_size": "--region-size",
        "region_count": "--region-count",
        "region_spacing": "--region-spacing",
        "mem": "--mem",
        "file": "--file",
        "access": "--access",
        "op": "--op",
        "sync": "--sync",
        "cold": "--cold",
        "iterations": "--iterations",
        "hints": HINT_OPT,
    },
    "sharedfp": {
        "mode": "--mode",
        "data_size": "--data-size",
        "loops": "--loops",
        "variability": "--variability",
        "sizing": "--sizing",
        "hints": HINT_OPT,
    },
    "btio": {
        "n": "--n",
        "iterations": "--iterations",
        "write_every": "--write-every",
        "mode": "--mode",
        "compute_cost": "--compute-cost",
        "nonblocking_api": "--nonblocking-api",
        "hints": HINT_OPT,
    },
}

# Parameters one run sweeps itself (options marked *list*: one measurement per combination
# of the comma-separated values). Lists of any other parameter become separate runs.
LIST_PARAMS: Dict[str, Tuple[str, ...]] = {
    "overlap": (),
    "cfs": ("test", "block_size"),
    "noncontig": ("region_size", "mem", "file", "access", "op"),
    "sharedfp": ("mode",),
    "btio": ("mode",),
}


class BenchArgsError(ValueError):
    pass


def _value(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def case_args(suite: str, case: dict) -> List[str]:
    """Options for the parameters of one case, in a stable order."""
    try:
        table = OPTIONS[suite]
    except KeyError:
        raise BenchArgsError(f"unknown suite {suite!r}") from None
    args: List[str] = []
    for name, value in case.items():
        if name not in table:
            raise BenchArgsError(f"{suite}: no pario-bench option for parameter {name!r}")
        opt = table[name]
        if value is None:
            continue
        if isinstance(value, dict):
            for k, v in value.items():
                args += [opt, f"{k}={_value(v)}"]
        elif isinstance(value, bool):
            if value:
                args.append(opt)
        elif isinstance(value, (list, tuple)):
            if name not in LIST_PARAMS.get(suite, ()):
                raise BenchArgsError(f"{suite}: parameter {name!r} takes one value per run")
            args += [opt, ",".join(_value(v) for v in value)]
        else:
            args += [opt, _value(value)]
    return args


def bench_argv(bench: str, suite: str, case: dict, results_file: str, workdir: str) -> List[str]:
    """argv of one pario-bench run (without the MPI launcher)."""
    argv = [bench, suite, RESULTS_OPT, results_file]
    if DIR_OPT:
        argv += [DIR_OPT, workdir]
    return argv + case_args(suite, case)
