"""HTML pages: one Jinja2 environment over templates/ with autoescape on, so every value a page
shows is escaped by the one rule of the templates and no Python code builds markup.

Tables go through the one macro of templates/macros.j2 (`table`): a table is (columns, rows)
or (columns, rows, row classes); a cell is a value (escaped as text) or a `cell()` mapping that
asks the template for a class, a link or a "(min-max)" spread beside the value.
"""

from __future__ import annotations

import os
from typing import Callable, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))


class PageError(Exception):
    """A page cannot be rendered (Jinja2 missing): one line for the user."""


def env():
    try:
        import jinja2
    except ImportError:
        raise PageError("HTML pages need Jinja2: run `make venv` (pip install -e './python[test]')") from None
    return jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(HERE, "templates")),
                              autoescape=True, trim_blocks=True, lstrip_blocks=True,
                              undefined=jinja2.StrictUndefined)


def render(template: str, **context) -> str:
    return env().get_template(template).render(**context)


def write(path: str, template: str, **context) -> str:
    """Render template into path; return path."""
    text = render(template, **context)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text if text.endswith("\n") else text + "\n")
    return path


def cell(text, cls: str = "", href: str = "", spread: Optional[Tuple[str, str]] = None, after: str = "") -> dict:
    """A table cell with a class (a <span>) or a link, then a spread shown as "(lo-hi)" and a
    word (a unit) after it."""
    return {"text": "" if text is None else str(text), "cls": cls, "href": href, "spread": spread, "after": after}


def spread(v: Optional[float], lo: Optional[float], hi: Optional[float], fmt: Callable, after: str = ""):
    """"median (min-max)": the spread left out when there is one value; "-" for no value."""
    if v is None:
        return "-"
    return cell(fmt(v), spread=None if lo is None or hi is None or lo == hi else (fmt(lo), fmt(hi)), after=after)


Table = Tuple[Sequence[str], Sequence[Sequence[object]]]
