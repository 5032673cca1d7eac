"""Services of `pario bench remote` and `pario trace experiment`: pario-server and XRootD started
on free loopback ports with their logs, waited for, and stopped with their whole process group;
the shared secret; running a tool with a timeout into a log.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

from .runner import kill_group

class RemoteError(Exception):
    """A server could not be started or a tool failed: one line for the user."""


# ---- processes -----------------------------------------------------------------------------

@dataclass
class Service:
    """A server started by this command, in its own session, stopped with its whole group."""

    name: str
    proc: subprocess.Popen
    address: str
    log: str
    workdir: Optional[str] = None   # removed at stop (after its log is copied to log_copy)
    log_copy: Optional[str] = None

    def stop(self) -> None:
        if self.proc.poll() is None:
            kill_group(self.proc, grace=3.0)
        if self.workdir:
            if self.log_copy and os.path.exists(self.log):
                shutil.copyfile(self.log, self.log_copy)
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_secret(path: str) -> None:
    """A fresh random shared secret for pario-server and its clients, readable by the owner only."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(os.urandom(24).hex() + "\n")


def wait_port(port: int, proc: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def start_pario_server(exe: str, root: Optional[str], secret: str, log: str, extra: Sequence[str] = (),
                       timeout: float = 15.0) -> Service:
    """pario-server on 127.0.0.1 with a free port: it prints HOST:PORT once it accepts. root
    None: a forwarder (extra holds --forward-to), which serves no files of its own."""
    argv = [exe, *(["--root", root] if root else []), "--listen", "127.0.0.1:0", "--secret-file", secret,
            *(["--allow-root"] if os.geteuid() == 0 else []), *extra]
    logf = open(log, "w", encoding="utf-8")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=logf, stdin=subprocess.DEVNULL,
                            start_new_session=True, text=True)
    logf.close()
    try:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline().strip() if ready else ""
    except BaseException:  # Ctrl-C while it starts: it must not outlive the command
        kill_group(proc)
        raise
    if not line or ":" not in line:
        kill_group(proc)
        raise RemoteError(f"pario-server did not start ({_tail(log) or 'no output'}; log: {log})")
    return Service("pario-server", proc, line, log)


def start_xrootd(log_copy: str, timeout: float = 20.0) -> Service:
    """XRootD on a free loopback port, serving a fresh directory of its own under the system's
    temporary directory, as user nobody when run as root (xrootd refuses to run as root; nobody
    must reach its directory, which a private results directory may not let it do). Its log is
    copied to log_copy when it stops."""
    workdir = tempfile.mkdtemp(prefix="pario-xrootd-")
    data, admin = os.path.join(workdir, "data"), os.path.join(workdir, "admin")
    os.makedirs(data)
    os.makedirs(admin)
    port = free_port()
    cfg, log = os.path.join(workdir, "xrootd.cfg"), os.path.join(workdir, "xrootd.log")
    with open(cfg, "w", encoding="utf-8") as f:
        f.write(f"all.export /\noss.localroot {data}\nxrd.port {port}\nxrd.network nodnr\n"
                f"all.adminpath {admin}\nall.pidpath {workdir}\n")
    argv = ["xrootd", "-c", cfg, "-l", log, "-n", f"pario{port}"]
    if os.geteuid() == 0:
        for p in (workdir, data, admin):
            shutil.chown(p, "nobody", "nogroup")
        argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + argv
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True, cwd=workdir)
    svc = Service("xrootd", proc, f"127.0.0.1:{port}", log, workdir, log_copy)
    if not wait_port(port, proc, timeout):
        svc.stop()
        raise RemoteError(f"xrootd did not start on port {port} (log: {log_copy})")
    return svc


def _tail(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip()]
        return lines[-1][:200] if lines else ""
    except OSError:
        return ""


def run_tool(argv: Sequence[str], timeout: float, env: Optional[Dict[str, str]] = None,
         log: Optional[str] = None) -> subprocess.CompletedProcess:
    with open(log or os.devnull, "a", encoding="utf-8") as logf:
        if log:
            logf.write("$ " + " ".join(argv) + "\n")
            logf.flush()
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=logf, env=env,
                                start_new_session=True, text=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            raise RemoteError(f"{os.path.basename(argv[0])} did not finish within {timeout:.0f} s") from None
        except BaseException:
            kill_group(proc)
            raise
        if log and out:
            logf.write(out)
    return subprocess.CompletedProcess(argv, proc.returncode, out, "")
