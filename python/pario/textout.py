"""Text tables for the terminal and the logs, laid out by rich: the one table function of every
table the CLI prints (the bench summary, `pario trace stats`, the seed 001 and remote tables).
Plain text (no colour, no wrapping), so that it reads the same in a pipe, a file or a terminal.
"""

from __future__ import annotations

import io
from typing import Sequence


def _rule_box():
    from rich.box import Box
    # rows: top, head, head row, mid, row, foot row, foot, bottom; each: left, line, divider, right
    return Box("    \n    \n -  \n    \n    \n    \n    \n    \n", ascii=True)


def text_table(headers: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[int] = (),
               title: str = "") -> str:
    """headers, a rule under them, the rows; columns whose index is in `right` right-aligned.
    Trailing blanks are cut from each line."""
    from rich.console import Console
    from rich.table import Table
    t = Table(box=_rule_box(), show_edge=False, pad_edge=False, padding=(0, 1, 0, 0),
              title=title or None, title_justify="left", header_style="", title_style="")
    for i, h in enumerate(headers):
        t.add_column(str(h), justify="right" if i in right else "left", no_wrap=True)
    for r in rows:
        t.add_row(*("" if c is None else str(c) for c in r))
    out = io.StringIO()
    Console(file=out, width=100000, color_system=None, force_terminal=False, highlight=False,
            emoji=False, markup=False, legacy_windows=False).print(t)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())
