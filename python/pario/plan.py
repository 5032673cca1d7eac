"""Sweep planning: which pario-bench runs a `pario bench run` makes, in which order.

A sweep is the product of suites x MPI flavours x rank counts x cases x implementations.
Each suite has two presets: `quick` (tiny sizes; `pario bench run all --quick` on both MPIs,
both implementations and ranks 1,2,4 stays within a few minutes per round on 2 cores) and `full`
(sizes in the spirit of the seed papers, scaled to one machine). A case is a dict of
pario-bench parameters; list values the binary cannot sweep itself are expanded here.
Native and pario runs of the same configuration are planned back to back, so drifting
machine load hits both alike; with `repeat` N each configuration is launched N times in
alternation (native, pario, native, pario, ...): round k of a configuration is one native and
one pario launch, and every figure is later the median over the rounds, with its spread.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from . import IMPLS, MPIS, SUITES
from .benchargs import LIST_PARAMS

KiB = 1024
MiB = 1024 * 1024

CFS_TESTS = ["broadcast-read", "partitioned-read", "partitioned-write",
             "interleaved-read", "interleaved-write"]

# Per suite: "cases" (list of dicts; list values are swept), optional "ranks" (rank
# counts used when the user gives no --ranks; None means the sweep default), optional
# "case_ranks" ({"param=value": rank counts}: expanded cases with that parameter value run at
# these rank counts only, when the user gives no --ranks).
PRESETS: Dict[str, Dict[str, dict]] = {
    "quick": {
        "overlap": {
            # Cached: a write is a memory copy that needs the CPU the computation wants, so no
            # implementation can overlap much. Direct (pario_direct_io=true, which only pario
            # knows): the data moves by DMA and pario's nonblocking write overlaps the
            # computation; at up to 2 ranks, so that on 2 cores the computation has its cores.
            # Direct writes take longer and vary more: larger writes and a wider calibration margin.
            "cases": [{"elements": 8 * MiB, "iterations": 4, "fill_iterations": 0, "scenario": "equal",
                       "api": "native", "regime": "cached", "margin": 0.002, "min_tries": 3,
                       "max_tries": 30},
                      {"elements": 16 * MiB, "iterations": 4, "fill_iterations": 0, "scenario": "equal",
                       "api": "native", "regime": "direct", "margin": 0.005, "min_tries": 3,
                       "max_tries": 30}],
            "case_ranks": {"regime=direct": [1, 2]},
        },
        "cfs": {
            "cases": [{"test": CFS_TESTS, "block_size": [64 * KiB, 1 * MiB], "file_size": 16 * MiB,
                       "repeat": 2}],
        },
        "noncontig": {
            "cases": [{"region_size": [32, 1024], "region_count": 4096, "region_spacing": 128,
                       "mem": "contig", "file": "noncontig", "access": ["independent", "collective"],
                       "op": ["write", "read"], "iterations": 3}],
        },
        "sharedfp": {
            "cases": [{"mode": [1, 2, 3, 4], "data_size": 1 * MiB, "loops": 32, "variability": 0}],
        },
        "btio": {
            "cases": [{"n": 32, "iterations": 10, "write_every": 5,
                       "mode": ["blocking", "nonblocking", "stage"], "compute_cost": 0.02}],
        },
    },
    "full": {
        "overlap": {
            "cases": [{"elements": 16 * MiB, "iterations": 10, "fill_elements": 64 * MiB, "fill_iterations": 4,
                       "scenario": ["equal", "io-bound", "compute-bound"], "api": ["native", "thread"],
                       "regime": ["cached", "synced", "direct"]}],
        },
        "cfs": {
            "cases": [{"test": CFS_TESTS, "block_size": [4 * KiB, 64 * KiB, 128 * KiB, 512 * KiB, 1 * MiB],
                       "file_size": 64 * MiB, "repeat": 3}],
        },
        "noncontig": {
            "cases": [{"region_size": [32, 128, 512, 1024, 4096], "region_count": 32768,
                       "region_spacing": 128, "mem": ["contig", "noncontig"], "file": "noncontig",
                       "access": ["independent", "collective"], "op": ["write", "read"], "iterations": 10}],
        },
        "sharedfp": {
            "cases": [{"mode": [1, 2, 3, 4], "data_size": 2 * MiB, "loops": 64, "variability": [0, 20]}],
        },
        "btio": {
            "cases": [{"n": 64, "iterations": 40, "write_every": 5,
                       "mode": ["blocking", "nonblocking", "stage"], "compute_cost": 0.05}],
        },
    },
}

DEFAULT_RANKS = [1, 2, 4]
DEFAULT_REPEAT_COMPARING = 5    # rounds per configuration when native and pario are compared


def default_repeat(impls: Sequence[str]) -> int:
    """5 rounds when the sweep compares implementations (native and pario), else 1."""
    return DEFAULT_REPEAT_COMPARING if len(set(impls)) > 1 else 1


class PlanError(ValueError):
    pass


@dataclass
class PlannedRun:
    index: int          # 1-based position in the sweep
    suite: str
    mpi: str
    impl: str
    ranks: int
    case: dict = field(default_factory=dict)
    round: int = 1      # 1-based round of this configuration (--repeat)
    rounds: int = 1     # rounds planned for it

    @property
    def label(self) -> str:
        text = f"{self.suite} {self.mpi} {self.impl} np={self.ranks}"
        return text + (f" r{self.round}/{self.rounds}" if self.rounds > 1 else "")

    @property
    def slug(self) -> str:
        return (f"{self.index:03d}-{self.suite}-{self.mpi}-{self.impl}-n{self.ranks}"
                + (f"-r{self.round}" if self.rounds > 1 else ""))


def parse_suites(text: str) -> List[str]:
    """`all`, one suite, or a comma-separated list of suites."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise PlanError("no suite given")
    if "all" in names:
        return list(SUITES)
    unknown = [s for s in names if s not in SUITES]
    if unknown:
        raise PlanError(f"unknown suite {', '.join(unknown)} (choose from {', '.join(SUITES)} or all)")
    return [s for s in SUITES if s in names]


def parse_choice_list(text: str, allowed: Sequence[str], what: str) -> List[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise PlanError(f"empty {what} list")
    unknown = [s for s in names if s not in allowed]
    if unknown:
        raise PlanError(f"unknown {what} {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return [s for s in allowed if s in names]


def parse_ranks(text: str) -> List[int]:
    out: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            n = int(part)
        except ValueError:
            raise PlanError(f"bad rank count {part!r}") from None
        if n < 1:
            raise PlanError(f"bad rank count {n}")
        if n not in out:
            out.append(n)
    if not out:
        raise PlanError("empty rank list")
    return sorted(out)


def expand_case(suite: str, case: dict) -> List[dict]:
    """Split list values the binary does not sweep itself into separate cases."""
    keep = set(LIST_PARAMS.get(suite, ()))
    axes = [(k, v) for k, v in case.items() if isinstance(v, (list, tuple)) and k not in keep]
    if not axes:
        return [dict(case)]
    out = []
    for combo in itertools.product(*(v for _, v in axes)):
        c = dict(case)
        c.update({k: val for (k, _), val in zip(axes, combo)})
        out.append(c)
    return out


def _case_ranks(preset: dict, case: dict, default: Sequence[int]) -> List[int]:
    for cond, rs in (preset.get("case_ranks") or {}).items():
        name, _, value = cond.partition("=")
        if name in case and str(case[name]) == value:
            return list(rs)
    return list(default)


def plan_sweep(suites: Sequence[str], mpis: Sequence[str] = MPIS, impls: Sequence[str] = IMPLS,
               ranks: Optional[Sequence[int]] = None, quick: bool = False,
               presets: Optional[Dict[str, Dict[str, dict]]] = None, repeat: int = 1) -> List[PlannedRun]:
    """All runs of a sweep in execution order (suite, MPI, ranks, case, round, implementation):
    the `repeat` rounds of one configuration alternate the implementations."""
    if repeat < 1:
        raise PlanError(f"bad repeat count {repeat}")
    table = (presets or PRESETS)["quick" if quick else "full"]
    runs: List[PlannedRun] = []
    for suite in suites:
        preset = table[suite]
        cases = [c for case in preset["cases"] for c in expand_case(suite, case)]
        if ranks:
            per_case = [list(ranks) for _ in cases]
        else:
            default = list(preset.get("ranks") or DEFAULT_RANKS)
            per_case = [_case_ranks(preset, c, default) for c in cases]
        suite_ranks = sorted({n for rs in per_case for n in rs})
        for mpi in mpis:
            for n in suite_ranks:
                for case, rs in zip(cases, per_case):
                    if n not in rs:
                        continue
                    for k in range(1, repeat + 1):
                        for impl in impls:
                            runs.append(PlannedRun(len(runs) + 1, suite, mpi, impl, n, dict(case), k, repeat))
    return runs
