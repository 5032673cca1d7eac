"""Result files: the JSON lines `pario-bench -o FILE` appends, and the run index of a sweep.

A results directory holds
  results.jsonl   one measurement per line, as written by pario-bench (all runs append here)
  runs.jsonl      one line per launched run: what was run, how it ended, where its log is
  meta.json       when and where the sweep ran (optional)
  logs/           stdout and stderr of every run
  report.html     the report, with its figures (PNG and SVG) beside it
  summary.csv     the native-vs-pario table, one row per configuration (summary.py)
  summary.json    the same, with the per-suite summary and headline
Only results.jsonl is needed to rebuild a report.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, List, Optional, Tuple

from .schema import problem

RESULTS_FILE = "results.jsonl"
RUNS_FILE = "runs.jsonl"
META_FILE = "meta.json"
REPORT_FILE = "report.html"


class ResultError(ValueError):
    """A line of a results file that is not a valid measurement."""


@dataclass
class Measurement:
    suite: str
    test: str
    impl: str
    mpi: str
    ranks: int
    params: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    status: str = "ok"
    verified: Optional[bool] = None
    error: Optional[str] = None
    impl_version: Optional[str] = None
    mpi_version: Optional[str] = None
    time: Optional[str] = None
    round: Optional[int] = None     # the sweep round (`pario bench run --repeat`), when known

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def metric(self, name: str) -> Optional[float]:
        """A metric as a finite float, or None when absent or not a number."""
        v = self.metrics.get(name)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        v = float(v)
        return v if math.isfinite(v) else None

    def to_dict(self) -> dict:
        return asdict(self)


def _text(obj: dict, key: str) -> Optional[str]:
    v = obj.get(key)
    return None if v is None else str(v)


def _round(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else None


def measurement_from_dict(obj: Any) -> Measurement:
    """Check one decoded JSON object against schemas/result.schema.json and turn it into a
    Measurement; ResultError names the field at fault."""
    bad = problem("result", obj)
    if bad:
        raise ResultError(bad)
    params = obj.get("params") or {}
    return Measurement(
        suite=obj["suite"],
        test=obj.get("test") or params.get("test", "") or obj["suite"],
        impl=obj["impl"],
        mpi=obj["mpi"],
        ranks=int(obj["ranks"]),
        params=params,
        metrics=obj.get("metrics") or {},
        status=obj.get("status", "ok"),
        verified=obj.get("verified"),
        error=_text(obj, "error"),
        impl_version=_text(obj, "impl_version"),
        mpi_version=_text(obj, "mpi_version"),
        time=_text(obj, "time"),
        round=_round(obj.get("round")),
    )


def parse_line(line: str) -> Optional[Measurement]:
    """One line of a results file: a Measurement, or None for a blank line."""
    line = line.strip()
    if not line:
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ResultError(f"not JSON: {e.msg}") from None
    return measurement_from_dict(obj)


def parse_lines(lines: Iterable[str], source: str = "<results>",
                kept: Optional[List[str]] = None) -> Tuple[List[Measurement], List[str]]:
    """Parse many lines; bad lines (a run killed mid-write) are reported, not fatal. With
    `kept`, the lines that held a measurement are appended to it as they were."""
    out: List[Measurement] = []
    problems: List[str] = []
    for n, line in enumerate(lines, 1):
        try:
            m = parse_line(line)
        except ResultError as e:
            problems.append(f"{source}:{n}: {e}")
            continue
        if m is not None:
            out.append(m)
            if kept is not None:
                kept.append(line)
    return out, problems


def load_results(path: str) -> Tuple[List[Measurement], List[str]]:
    """Measurements of a results file, or of DIR/results.jsonl when given a directory."""
    if os.path.isdir(path):
        path = os.path.join(path, RESULTS_FILE)
    if not os.path.exists(path):
        return [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse_lines(f, source=path)


@dataclass
class RunRecord:
    """One launch of pario-bench in a sweep, and how it ended."""

    index: int
    suite: str
    mpi: str
    impl: str
    ranks: int
    case: dict
    command: List[str]
    status: str = "pending"  # ok | failed | timeout | skipped
    returncode: Optional[int] = None
    elapsed: float = 0.0
    measurements: int = 0
    unverified: int = 0     # measurements whose verification failed
    message: str = ""
    log: str = ""
    round: int = 1          # round of its configuration (--repeat)
    settle: float = 0.0     # seconds the settle step before it took

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: dict) -> "RunRecord":
        known = {k: obj[k] for k in cls.__dataclass_fields__ if k in obj}
        return cls(**known)


def load_runs(directory: str) -> List[RunRecord]:
    path = os.path.join(directory, RUNS_FILE)
    runs: List[RunRecord] = []
    if not os.path.exists(path):
        return runs
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                runs.append(RunRecord.from_dict(json.loads(line)))
            except (json.JSONDecodeError, TypeError):
                continue
    return runs


def append_run(directory: str, run: RunRecord) -> None:
    with open(os.path.join(directory, RUNS_FILE), "a", encoding="utf-8") as f:
        f.write(json.dumps(run.to_dict(), sort_keys=True) + "\n")


def load_meta(directory: str) -> dict:
    path = os.path.join(directory, META_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
        return meta if isinstance(meta, dict) else {}
    except (OSError, json.JSONDecodeError):
        return {}


def save_meta(directory: str, meta: dict) -> None:
    with open(os.path.join(directory, META_FILE), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
