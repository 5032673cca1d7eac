#!/usr/bin/env python3
"""Screenshots of `pario trace report` pages for docs/tracing.md ("Finding where the time
went"), taken in headless chromium through tests/python/cdp.py (the tests' DevTools driver).
Usage: trace_screenshots.py SLOW_REPORT FAST_REPORT REMOTE_REPORT OUT_DIR (scripts/trace-guide.sh runs it)."""

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


def main() -> int:
    if len(sys.argv) != 5:
        sys.exit("usage: trace_screenshots.py SLOW_REPORT FAST_REPORT REMOTE_REPORT OUT_DIR")
    slow, fast, remote, out = sys.argv[1:]
    page = Page("file://" + os.path.abspath(slow))
    try:
        shot(page, out, "guide-slow-timeline.png", "#timeline")
        shot(page, out, "guide-slow-tables.png", "#sec-calls")
        shot(page, out, "guide-slow-sizes.png", "#sec-sizes")
        # zoom to 40 us around rank 0's 8000th pwritev and click it
        j = page.js("pario.find('pwritev', 0, 8000)")
        t = page.js(f"pario.spanStart({j})")
        page.js(f"pario.zoomTo({t - 15000}, {t + 25000})")
        page.js(f"pario.select({j})")
        shot(page, out, "guide-slow-zoomed.png", "#timeline")
        shot(page, out, "guide-slow-details.png", "#sec-details")
    finally:
        page.close()
    page = Page("file://" + os.path.abspath(fast))
    try:
        shot(page, out, "guide-fast-timeline.png", "#timeline")
        shot(page, out, "guide-fast-collectives.png", "#sec-collectives")
    finally:
        page.close()
    page = Page("file://" + os.path.abspath(remote), height=1200)
    try:  # the first client request that the server's trace has, selected: its server spans outlined
        i = page.js("(() => { for (let n = 0; ; n++) { const i = pario.find('rio WRITE', null, n);"
                    " if (i < 0) return -1; pario.select(i); if (pario.related().length) return i; } })()")
        if i < 0:
            sys.exit("trace_screenshots: no client request in the remote trace reached the server")
        a, b = page.js(f"[pario.spanStart({i}), pario.spanEnd({i})]")
        page.js(f"pario.zoomTo({a - 300000}, {b + 300000})")
        page.js(f"pario.select({i})")
        shot(page, out, "guide-remote-request.png", "#timeline")
        shot(page, out, "guide-remote-details.png", "#sec-details")
    finally:
        page.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
