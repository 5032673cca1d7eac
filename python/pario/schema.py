"""The JSON Schemas (schemas/*.schema.json, draft 7) of what pario reads from files: a results
line (`result`), a trace file's header (`trace-header`) and the lines after it (`trace-event`,
one definition per line type).

fastjsonschema compiles each schema into Python once: about 4 us a line where jsonschema's
validator takes 70 (a trace's instants and counters are many). Where fastjsonschema is missing
(a Python outside the venv without Debian's python3-fastjsonschema) jsonschema validates the
same schemas, slower. `problem` turns a failure into one line that names the field.
"""

from __future__ import annotations

import json
import os
from typing import Callable, Dict, FrozenSet, Optional, Tuple

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas")
Check = Callable[[object], Optional[str]]
_compiled: Dict[Tuple[str, str, bool], Check] = {}


def _load(name: str) -> dict:
    with open(os.path.join(HERE, name + ".schema.json"), encoding="utf-8") as f:
        return json.load(f)


def _line(msg: str, value, rule: str) -> str:
    """One line: the rule broken, the value given (not for a missing field)."""
    if rule != "required":
        given = repr(value)
        msg += f" (given {given if len(given) <= 40 else given[:37] + '...'})"
    return msg if len(msg) <= 160 else msg[:157] + "..."


def _fast(schema: dict) -> Check:
    import fastjsonschema  # pinned in python/pyproject.toml; Debian's python3-fastjsonschema outside the venv
    f = fastjsonschema.compile(schema)

    def check(obj) -> Optional[str]:
        try:
            f(obj)
            return None
        except fastjsonschema.JsonSchemaValueException as e:
            field = e.name[len("data."):] if e.name.startswith("data.") else ""
            return _line(e.message.replace(e.name, repr(field) if field else "the line", 1), e.value, e.rule)
    return check


def _slow(schema: dict) -> Check:
    import jsonschema
    from jsonschema.exceptions import best_match
    v = jsonschema.Draft7Validator(schema)

    def check(obj) -> Optional[str]:
        if v.is_valid(obj):
            return None
        e = best_match(v.iter_errors(obj))
        field = ".".join(str(p) for p in e.absolute_path)
        msg = f"{field!r}: {e.message}" if field else f"the line: {e.message}"  # names the value already
        return msg if len(msg) <= 160 else msg[:157] + "..."
    return check


def validator(name: str, part: str = "", fast: Optional[bool] = None) -> Check:
    """schemas/NAME.schema.json, or its definitions/PART, as a check (compiled once): None for
    a valid object, else the one-line problem. fast=None: fastjsonschema where installed."""
    if fast is None:
        try:
            import fastjsonschema  # noqa: F401
            fast = True
        except ImportError:
            fast = False
    c = _compiled.get((name, part, fast))
    if c is None:
        schema = _load(name)
        c = _compiled[(name, part, fast)] = (_fast if fast else _slow)(schema["definitions"][part] if part else schema)
    return c


def parts(name: str) -> FrozenSet[str]:
    """The names of schemas/NAME.schema.json's definitions."""
    return frozenset(_load(name).get("definitions", {}))


def problem(name: str, obj, part: str = "") -> Optional[str]:
    """None when obj is valid; else one line: the field at fault (when there is one) and the
    rule it breaks, e.g. "'status' must be one of ['ok', 'unsupported', 'failed'] (given 'maybe')"."""
    return validator(name, part)(obj)
