#!/usr/bin/env python3
"""Fetch mpi4py's own test suite (the sdist of the version Debian's python3-mpi4py is) into the
build tree, so the MPI-IO tests that ship with mpi4py can run against pario. The sdist is cached
and never committed; only its test/ directory is extracted.

usage: fetch_mpi4py_tests.py --version 3.1.4 --cache DIR --dest DIR [--python PY]
Environment: PARIO_MPI4PY_SDIST=path/to/mpi4py-X.tar.gz uses that file instead of pip.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile

# Digests of the sdists this harness has been checked against; another version is used unchecked.
KNOWN_SHA256 = {
    "3.1.4": "17858f2ebc623220d0120d1fa8d428d033dde749c4bc35b33d81a66ad7f93480",
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pip_commands(python):
    """pip front ends to try, the Debian python's own first."""
    cmds = [[python, "-m", "pip"]]
    for name in ("pip3", "pip"):
        exe = shutil.which(name)
        if exe:
            cmds.append([exe])
    return cmds


def download(version, cache, python):
    """pip download the sdist (never a wheel: the wheel has no test/ directory)."""
    spec = "mpi4py==%s" % version
    base = ["download", "--no-deps", "--no-binary", ":all:", "-d", cache, spec]
    attempts = []
    for pip in pip_commands(python):
        # Without build isolation pip needs nothing beyond setuptools to read the metadata;
        # with it, pip fetches build requirements first. Try the cheap way first.
        attempts.append(pip + base + ["--no-build-isolation"])
        attempts.append(pip + base)
    for cmd in attempts:
        print("fetch: " + " ".join(cmd), flush=True)
        if subprocess.call(cmd) == 0:
            return
    sys.exit("fetch: could not download the %s sdist with pip" % spec)


def find_sdist(version, cache, python):
    override = os.environ.get("PARIO_MPI4PY_SDIST")
    if override:
        return override
    path = os.path.join(cache, "mpi4py-%s.tar.gz" % version)
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        download(version, cache, python)
    if not os.path.exists(path):
        sys.exit("fetch: pip succeeded but %s is missing" % path)
    return path


def extract_tests(sdist, version, dest):
    """Extract mpi4py-X/test/* only, refusing members that would land outside dest."""
    prefix = "mpi4py-%s/test/" % version
    count = 0
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.name.startswith(prefix) or not member.isfile():
                continue
            rel = member.name[len(prefix):]
            if rel.startswith("/") or ".." in rel.split("/"):
                sys.exit("fetch: unsafe member name %r in %s" % (member.name, sdist))
            out = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with tar.extractfile(member) as src, open(out + ".tmp", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.replace(out + ".tmp", out)
            count += 1
    if not os.path.exists(os.path.join(dest, "test_io.py")):
        sys.exit("fetch: %s has no %stest_io.py" % (sdist, prefix))
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", required=True)
    ap.add_argument("--cache", required=True, help="where the sdist is kept between runs")
    ap.add_argument("--dest", required=True, help="where test/*.py are extracted")
    ap.add_argument("--python", default=sys.executable, help="python whose pip downloads")
    args = ap.parse_args()

    sdist = find_sdist(args.version, args.cache, args.python)
    digest = sha256(sdist)
    known = KNOWN_SHA256.get(args.version)
    if known and digest != known:
        sys.exit("fetch: %s has sha256 %s, expected %s" % (sdist, digest, known))
    n = extract_tests(sdist, args.version, args.dest)
    print("fetch: %d test files of mpi4py %s from %s (sha256 %s%s) in %s"
          % (n, args.version, sdist, digest[:16], "" if known else ", unchecked", args.dest))


if __name__ == "__main__":
    main()
