"""A small driver of headless chromium over the Chrome DevTools protocol (a websocket): open a
page, evaluate JavaScript in it, dispatch real mouse events, take PNG screenshots. Used by the
trace report's tests; Debian's chromium, websocket-client from the package index."""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import websocket


def browser() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "no chromium: apt-get install chromium (scripts/install-deps.sh does)"
    return exe


class Page:
    def __init__(self, url: str, width: int = 1400, height: int = 900):
        self.profile = tempfile.mkdtemp(prefix="pario-cdp-")
        self.proc = subprocess.Popen(
            [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "--hide-scrollbars",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ws = None
        try:
            self._connect(url, width, height)
        except BaseException:
            self.close()  # no chromium left behind by a page that did not open
            raise

    def _connect(self, url: str, width: int, height: int) -> None:
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 60
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            assert time.time() < deadline and self.proc.poll() is None, "chromium did not start"
            time.sleep(0.1)
        port = open(port_file).read().split("\n")[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(ws_url, timeout=120, suppress_origin=True)
        self.seq = 0
        self.errors = []
        self.call("Runtime.enable")
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", url=url)
        self.wait_for("typeof window.pario === 'object' || document.readyState === 'complete'")

    def call(self, method: str, **params):
        self.seq += 1
        self.ws.send(json.dumps({"id": self.seq, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == "Runtime.exceptionThrown":
                self.errors.append(msg["params"]["exceptionDetails"].get("exception", {}).get("description", "?"))
            if msg.get("id") == self.seq:
                assert "error" not in msg, msg["error"]
                return msg["result"]

    def js(self, expr: str):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in r, r["exceptionDetails"]
        return r["result"].get("value")

    def wait_for(self, expr: str, timeout: float = 60):
        deadline = time.time() + timeout
        while not self.js(f"!!({expr})"):
            assert time.time() < deadline, f"timed out waiting for {expr}"
            time.sleep(0.1)

    def click(self, x: float, y: float):
        for typ in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=typ, x=x, y=y, button="left", clickCount=1)

    def wheel(self, x: float, y: float, dy: float):
        self.call("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=0, deltaY=dy)

    def drag(self, x: float, y: float, dx: float):
        self.call("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y, button="left", clickCount=1)
        for k in range(1, 6):
            self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x + dx * k / 5, y=y, button="left")
        self.call("Input.dispatchMouseEvent", type="mouseReleased", x=x + dx, y=y, button="left", clickCount=1)

    def screenshot(self, path: str, clip_selector: str = "") -> str:
        params = {"format": "png"}
        if clip_selector:
            r = self.js(f"(() => {{ const r = document.querySelector({json.dumps(clip_selector)}).getBoundingClientRect();"
                        " return [r.left + scrollX, r.top + scrollY, r.width, r.height]; })()")
            params["clip"] = {"x": r[0], "y": r[1], "width": r[2], "height": r[3], "scale": 1}
            params["captureBeyondViewport"] = True
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))
        return path

    def close(self):
        try:
            if self.ws is not None:
                self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)
