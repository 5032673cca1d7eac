"""The JSON Schemas of what pario reads (python/pario/schemas, pario/schema.py): a results line,
a trace file's header and its lines. Both validators (fastjsonschema, and jsonschema where it is
missing) give the same verdict on every case, and a problem names the field at fault."""

import pytest

from needs import need
from pario.schema import validator

HEADER = {"type": "header", "format": "pario-trace", "version": 1, "kind": "client", "rank": 0, "pid": 7}
RESULT = {"suite": "cfs", "impl": "pario", "mpi": "mpich", "ranks": 4, "status": "ok", "verified": True,
          "params": {"block_size": 65536}, "metrics": {"mb_per_s": 1.5}, "error": None}

CASES = [  # (schema, definition, object, the field named when invalid, or None when valid)
    ("result", "", RESULT, None),
    ("result", "", dict(RESULT, ranks="8"), None),
    ("result", "", dict(RESULT, ranks=0), "ranks"),
    ("result", "", dict(RESULT, ranks="four"), "ranks"),
    ("result", "", dict(RESULT, status="maybe"), "status"),
    ("result", "", dict(RESULT, verified="yes"), "verified"),
    ("result", "", dict(RESULT, params=[1]), "params"),
    ("result", "", {k: v for k, v in RESULT.items() if k != "mpi"}, "mpi"),
    ("result", "", [RESULT], "the line"),
    ("trace-header", "", HEADER, None),
    ("trace-header", "", dict(HEADER, kind="server"), None),
    ("trace-header", "", {k: v for k, v in HEADER.items() if k != "rank"}, "rank"),
    ("trace-header", "", dict(HEADER, version=2), "version"),
    ("trace-header", "", dict(HEADER, format="other"), "format"),
    ("trace-header", "", dict(HEADER, pid="7"), "pid"),
    ("trace-event", "span", {"type": "span", "t": 5, "d": 0, "tid": 1}, None),
    ("trace-event", "span", {"type": "span", "t": 5, "d": -1}, "'d'"),
    ("trace-event", "span", {"type": "span", "t": 5.5, "d": 1}, "'t'"),
    ("trace-event", "counter", {"type": "counter", "t": 5, "value": 0.5}, None),
    ("trace-event", "counter", {"type": "counter", "t": 5, "value": "x"}, "value"),
    ("trace-event", "instant", {"type": "instant", "t": 5, "tid": "main"}, "tid"),
    ("trace-event", "dropped", {"type": "dropped", "events": 3, "reason": "ENOSPC"}, None),
    ("trace-event", "dropped", {"type": "dropped"}, "events"),
    ("trace-event", "filter", {"type": "filter", "calls": -1}, "calls"),
    ("trace-event", "file", {"type": "file", "id": 4, "name": "/x"}, None),
    ("trace-event", "other", {"type": "future_type", "x": 1}, None),
    ("trace-event", "other", {"x": 1}, "type"),
]


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("name, part, obj, field", CASES)
def test_verdict_and_field(fast, name, part, obj, field):
    need("fastjsonschema", "make venv (python/pyproject.toml pins it)")
    problem = validator(name, part, fast=fast)(obj)
    if field is None:
        assert problem is None
    else:
        assert problem and field in problem and "\n" not in problem, problem


def test_the_whole_event_schema_agrees_with_its_parts():
    """trace-event.schema.json as a whole (allOf over the types) says what its definitions say."""
    whole = validator("trace-event", fast=False)
    for name, part, obj, field in CASES:
        if name == "trace-event":
            assert (whole(obj) is None) == (field is None), obj
