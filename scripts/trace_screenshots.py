#!/usr/bin/env python3
"""Screenshots of `pario trace report` pages for docs/tracing.md ("Finding where the time
went"), taken in headless chromium through tests/python/cdp.py (the tests' DevTools driver).
Usage: trace_screenshots.py SLOW_REPORT FAST_REPORT REMOTE_REPORT OUT_DIR (scripts/trace-guide.sh runs it)."""

import contextlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from cdp import Page  # noqa: E402
from PIL import Image  # noqa: E402


def shot(page: Page, out: str, name: str, selector: str) -> None:
    path = page.screenshot(os.path.join(out, name), selector)
    img = Image.open(path).convert("RGB")
    n = sum(1 for c, _ in img.getcolors(maxcolors=1 << 20) if c >= 20)
    if n < 3:
        sys.exit(f"trace_screenshots: {name} looks blank ({n} colours)")
    img.convert("P", palette=Image.ADAPTIVE, colors=64).save(path, optimize=True)  # small PNGs in the repo
    print(f"{path}: {img.size[0]}x{img.size[1]}, {n} colours")


@contextlib.contextmanager
def opened(report: str, **kw):
    page = Page("file://" + os.path.abspath(report), **kw)
    try:
        yield page
    finally:
        page.close()


def select_shots(page: Page, out: str, i: int, lo: float, hi: float, timeline: str, details: str) -> None:
    """Span i selected, the timeline zoomed to [lo, hi] ns: the timeline and the details panel."""
    page.js(f"pario.zoomTo({lo}, {hi})")
    page.js(f"pario.select({i})")
    shot(page, out, timeline, "#timeline")
    shot(page, out, details, "#sec-details")


def main() -> int:
    if len(sys.argv) != 5:
        sys.exit("usage: trace_screenshots.py SLOW_REPORT FAST_REPORT REMOTE_REPORT OUT_DIR")
    slow, fast, remote, out = sys.argv[1:]
    with opened(slow) as page:
        shot(page, out, "guide-slow-timeline.png", "#timeline")
        shot(page, out, "guide-slow-tables.png", "#sec-calls")
        shot(page, out, "guide-slow-sizes.png", "#sec-sizes")
        # 40 us around rank 0's 8000th pwritev, selected
        j = page.js("pario.find('pwritev', 0, 8000)")
        t = page.js(f"pario.spanStart({j})")
        select_shots(page, out, j, t - 15000, t + 25000, "guide-slow-zoomed.png", "guide-slow-details.png")
    with opened(fast) as page:
        shot(page, out, "guide-fast-timeline.png", "#timeline")
        shot(page, out, "guide-fast-collectives.png", "#sec-collectives")
    with opened(remote, height=1200) as page:
        # the first client request that the server's trace has, selected: its server spans outlined
        i = page.js("(() => { for (let n = 0; ; n++) { const i = pario.find('rio WRITE', null, n);"
                    " if (i < 0) return -1; pario.select(i); if (pario.related().length) return i; } })()")
        if i < 0:
            sys.exit("trace_screenshots: no client request in the remote trace reached the server")
        a, b = page.js(f"[pario.spanStart({i}), pario.spanEnd({i})]")
        select_shots(page, out, i, a - 300000, b + 300000, "guide-remote-request.png", "guide-remote-details.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
