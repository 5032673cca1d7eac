"""Synthetic trace files for the tests of `pario trace` and `pario trace experiment`:
events in the recorder's JSON-lines format (docs/trace-format.md), written by hand."""

import json


def span(t, d, name, cat, tid=0, thread="main", flow=None, **args):
    e = {"type": "span", "t": t, "d": d, "tid": tid, "thread": thread, "cat": cat, "name": name, "args": args}
    if flow:
        e["flow"] = flow
    return e


def write_lines(path, lines):
    with open(path, "w") as fh:
        for obj in lines:
            fh.write(json.dumps(obj) + "\n")
