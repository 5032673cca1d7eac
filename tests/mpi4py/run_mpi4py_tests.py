#!/usr/bin/python3
"""Run mpi4py's own MPI-IO tests (unchanged, from mpi4py's sdist) in each MPI rank, natively or
with pario preloaded, and judge them against tests/mpi4py/expected-failures.txt.

Before any test runs, a probe asks the dynamic linker (ctypes: dlsym + dladdr) which object
serves every MPI-IO function that mpi4py's MPI module imports: under --expect=pario all must be
libpario's (else the tests would pass without touching pario), natively all the MPI library's.

Pass/fail: every test not listed must pass (or be skipped by mpi4py itself); listed tests may
fail; a listed test that passes is reported as UNEXPECTED PASS but does not fail the run.

usage: mpiexec -n N python3 run_mpi4py_tests.py --testdir DIR --expect=pario|native
           [--xfail expected-failures.txt] [--scratch DIR] [--nm NM] [TEST ...]
TEST: a unittest name (module, module.Class or module.Class.method); default: DEFAULT_TESTS.
"""
import argparse
import ctypes
import faulthandler
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

# mpi4py's MPI-IO tests: all of test_io and test_file, and the file cases of two other modules.
DEFAULT_TESTS = [
    "test_io",
    "test_file",
    "test_errhandler.TestErrhandler.testFileCallErrhandler",
    "test_fortran.TestFortranFile",
]

MPIIO_NAME = re.compile(r"P?MPI_(File_\w+|Register_datarep(_c)?)")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--testdir", required=True, help="mpi4py's test/ directory (from the sdist)")
    ap.add_argument("--expect", required=True, choices=["pario", "native"])
    ap.add_argument("--xfail", help="expected-failures file (one unittest id per line)")
    ap.add_argument("--scratch", help="where to make the directory for the tests' temporary "
                    "files (removed afterwards); tmpfs keeps fsync off a busy disk")
    ap.add_argument("--nm", default="nm", help="nm used to list mpi4py's MPI-IO imports")
    ap.add_argument("--test-timeout", type=float, default=120,
                    help="seconds one test may take before the rank dumps its stack and exits")
    ap.add_argument("tests", nargs="*", default=DEFAULT_TESTS)
    return ap.parse_args()


# ---------------------------------------------------------------- interposition probe

def mpi4py_mpiio_imports(nm):
    """The MPI-IO functions mpi4py's extension module imports (undefined dynamic symbols).
    Called before MPI starts, and without our LD_PRELOAD, so nm runs as a plain tool."""
    spec = importlib.util.find_spec("mpi4py.MPI")
    if spec is None or not spec.origin:
        sys.exit("probe: mpi4py.MPI not found for %s" % sys.executable)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    out = subprocess.run([nm, "-D", "--undefined-only", spec.origin], env=env,
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if fields:
            name = fields[-1].split("@")[0]
            if MPIIO_NAME.fullmatch(name):
                names.add(name)
    if "MPI_File_open" not in names:
        sys.exit("probe: %s does not import MPI_File_open; cannot tell what to check" % spec.origin)
    return spec.origin, sorted(names)


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


class Linker:
    """dlsym(RTLD_DEFAULT) + dladdr: the lookup a module loaded into this process gets."""

    def __init__(self):
        libc = ctypes.CDLL(None)
        self._dlsym = libc.dlsym
        self._dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self._dlsym.restype = ctypes.c_void_p
        self._dladdr = libc.dladdr
        self._dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
        self._dladdr.restype = ctypes.c_int
        self._libc = libc

    def served_by(self, name):
        """(load base, file) of the object serving name, or (None, '(undefined)')."""
        addr = self._dlsym(None, name.encode())  # None == RTLD_DEFAULT
        if not addr:
            return None, "(undefined)"
        info = DlInfo()
        if not self._dladdr(addr, ctypes.byref(info)) or not info.dli_fname:
            return None, "(no object found by dladdr)"
        return info.dli_fbase, info.dli_fname.decode(errors="replace") or "(main program)"

    def call_string(self, name):
        fn = getattr(self._libc, name)
        fn.restype = ctypes.c_char_p
        return fn().decode()


def probe(expect, module, names, rank):
    """Check who serves mpi4py's MPI-IO imports; returns a list of problems (empty = fine)."""
    ld = Linker()
    pario_base, pario_file = ld.served_by("pario_version")
    mpi_base, mpi_file = ld.served_by("MPI_Comm_rank")
    problems = []
    if expect == "pario":
        if pario_base is None:
            return ["pario_version does not resolve: pario is not loaded in this process "
                    "(LD_PRELOAD=%r)" % os.environ.get("LD_PRELOAD")]
        want_base, want = pario_base, "libpario"
        head = "pario %s (%s) from %s" % (ld.call_string("pario_version"),
                                          ld.call_string("pario_mpi_flavour"), pario_file)
    else:
        if pario_base is not None:
            return ["native run, but pario is loaded from %s" % pario_file]
        want_base, want = mpi_base, "the MPI library"
        head = "native MPI-IO"
    wrong = {}
    for name in names:
        base, fname = ld.served_by(name)
        if base is None or base != want_base:
            wrong.setdefault(fname, []).append(name)
    if rank == 0:
        print("probe: %s; MPI from %s; %d MPI-IO functions imported by %s, %d served by %s"
              % (head, mpi_file, len(names), os.path.basename(module),
                 len(names) - sum(len(v) for v in wrong.values()), want), flush=True)
    for fname, bad in sorted(wrong.items()):
        problems.append("%d not served by %s but by %s: %s" % (len(bad), want, fname, " ".join(bad)))
    return problems


# ---------------------------------------------------------------- expected failures

def read_xfail(path):
    """{test id: reason} from lines 'test.id   # reason'; blank and comment lines ignored."""
    entries = {}
    if not path:
        return entries
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            text, _, comment = line.partition("#")
            text = text.strip()
            if not text:
                continue
            if len(text.split()) != 1:
                sys.exit("%s:%d: one test id per line expected, got %r" % (path, lineno, text))
            entries[text] = comment.strip() or "(no reason given)"
    return entries


def flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from flatten(item)
        else:
            yield item


# ---------------------------------------------------------------- result bookkeeping

# Worst last. A listed test that passes on one rank but fails on another counts as failing.
# "notrun": a listed test left out because its failure could hang the other ranks (see select).
RANK_ORDER = ["pass", "skip", "notrun", "xpass", "xfail", "fail", "error"]


class Result(unittest.TextTestResult):
    """TextTestResult that also keeps one outcome per test id (the worst of its subtests)."""

    test_timeout = 120.0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcome = {}
        self.why = {}

    def startTest(self, test):
        super().startTest(test)
        # A test that outlives its time is typically stuck in a collective that another rank
        # left after an error. faulthandler's watchdog is a C thread that needs no GIL (mpi4py
        # holds it in blocking MPI calls): it prints every thread's stack, naming the test
        # method, and exits the rank so that mpiexec ends the job.
        faulthandler.dump_traceback_later(self.test_timeout, exit=True)

    def stopTest(self, test):
        faulthandler.cancel_dump_traceback_later()
        super().stopTest(test)

    def _set(self, test, what):
        tid = test.id()
        old = self.outcome.get(tid)
        if old is None or RANK_ORDER.index(what) > RANK_ORDER.index(old):
            self.outcome[tid] = what

    def addSuccess(self, test):
        super().addSuccess(test)
        self._set(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._set(test, "fail")

    def addError(self, test, err):
        super().addError(test, err)
        # An error in setUpClass/module shows up as a _ErrorHolder with its own id.
        self._set(test, "error")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._set(test, "skip")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._set(test, "xfail")
        # Keep why it failed: a listed test that starts failing for another reason (wrong
        # bytes instead of MPI_ERR_UNSUPPORTED_OPERATION) should be noticed.
        self.why[test.id()] = ("%s: %s" % (err[0].__name__, err[1])).splitlines()[0][:160]

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._set(test, "xpass")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._set(test, "fail" if failed else "error")


def select(tests, xfail, size):
    """Split tests into (run, not run). With several ranks, a listed test on a communicator of
    several ranks is not run: mpi4py's tests raise on the failing rank while the others wait
    in the next collective (Sync, Barrier, Close), so an expected failure would hang the job.
    The same test still runs in the 1-rank job, where it cannot hang; that run reports it
    when it starts to pass."""
    run, not_run = [], []
    for t in tests:
        comm = getattr(t, "COMM", None)
        spans = size > 1 and (comm is None or not comm or comm.Get_size() > 1)
        (not_run if t.id() in xfail and spans else run).append(t)
    return run, not_run


class RankStream:
    """Prefix every line with the rank and write whole lines only, so the output of several
    ranks interleaves line by line and stays readable."""

    def __init__(self, stream, prefix):
        self.stream, self.prefix, self.pending = stream, prefix, ""

    def write(self, text):
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        if lines:
            self.stream.write("".join(self.prefix + line + "\n" for line in lines))
            self.stream.flush()

    def flush(self):
        pass  # partial lines wait for their end (see close)

    def close(self):
        if self.pending:
            self.write("\n")


# ---------------------------------------------------------------- main

def prepare_scratch(comm, base):
    """Point tempfile (the tests' mkstemp) at a fresh directory under base, shared by all ranks
    (they run on one machine). The tests call File.Sync often: on tmpfs that costs nothing,
    on a disk that other jobs keep busy one fsync has been seen to take minutes."""
    if not base:
        return None
    scratch = None
    if comm.Get_rank() == 0:
        os.makedirs(base, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix="pario-mpi4py-", dir=base)
    scratch = comm.bcast(scratch, root=0)
    tempfile.tempdir = scratch
    return scratch


def summarize(comm, outcomes, why, xfail):
    """Rank 0 prints the merged verdict; returns True when the run passes."""
    rank, size = comm.Get_rank(), comm.Get_size()
    everyone = comm.gather(outcomes, root=0)
    whys = comm.gather(why, root=0)
    ok = True
    if rank == 0:
        per_test = {}
        for r, outs in enumerate(everyone):
            for tid, what in outs.items():
                per_test.setdefault(tid, {})[r] = what
        counts = {k: 0 for k in RANK_ORDER}
        notrun = []
        bad, xpass = [], []
        for tid in sorted(per_test):
            worst = max(per_test[tid].values(), key=RANK_ORDER.index)
            counts[worst] += 1
            if worst in ("fail", "error"):
                bad.append((tid, per_test[tid]))
            elif worst == "xpass":
                xpass.append((tid, per_test[tid]))
            elif worst == "notrun":
                notrun.append(tid)
        ok = not bad
        print("\n==== mpi4py MPI-IO tests, %d rank(s) ====" % size)
        reasons = {}
        for w in whys:
            for tid, text in w.items():
                reasons.setdefault(tid, text)
        for tid in sorted(reasons):
            print("expected failure: %s: %s" % (tid, reasons[tid]))
        if notrun:
            print("not run on %d ranks (listed, and a failure on one rank would hang the others; "
                  "the 1-rank job runs them): %s" % (size, " ".join(notrun)))
        for tid, by_rank in bad:
            print("FAILED: %s%s" % (tid, describe(by_rank)))
        for tid, by_rank in xpass:
            print("UNEXPECTED PASS: %s  (listed: %s)%s" % (tid, xfail.get(tid, ""), describe(by_rank)))
        if xpass:
            print("  -> %d listed test(s) passed: remove them from tests/mpi4py/expected-failures.txt"
                  % len(xpass))
        print("%d tests: %d passed, %d failed, %d errors, %d skipped, %d expected failures, "
              "%d unexpected passes, %d not run" % (len(per_test), counts["pass"], counts["fail"],
                                                     counts["error"], counts["skip"],
                                                     counts["xfail"], counts["xpass"],
                                                     counts["notrun"]))
        print("mpi4py-io: %s" % ("PASS" if ok else "FAIL"), flush=True)
    return comm.bcast(ok, root=0)


def describe(by_rank):
    """'' when all ranks agree, else each rank's outcome."""
    if len(set(by_rank.values())) <= 1:
        return ""
    return "  [" + ", ".join("rank %d: %s" % (r, w) for r, w in sorted(by_rank.items())) + "]"


def main():
    args = parse_args()
    testdir = os.path.abspath(args.testdir)
    if not os.path.exists(os.path.join(testdir, "test_io.py")):
        sys.exit("no test_io.py in %s (run the fetch step first)" % testdir)
    module, names = mpi4py_mpiio_imports(args.nm)

    from mpi4py import MPI  # starts MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    out = RankStream(sys.stdout, "[%d] " % rank) if size > 1 else sys.stdout

    problems = probe(args.expect, module, names, rank)
    if comm.allreduce(len(problems), op=MPI.MAX) > 0:
        for p in problems:
            print("[%d] probe FAILED: %s" % (rank, p), flush=True)
        if rank == 0:
            print("mpi4py-io: FAIL (MPI-IO is not served as expected: running the tests would "
                  "not test %s)" % args.expect, flush=True)
        return 1

    scratch = prepare_scratch(comm, args.scratch)
    sys.path.insert(0, testdir)
    xfail = read_xfail(args.xfail)
    suite = unittest.defaultTestLoader.loadTestsFromNames(args.tests)
    tests = list(flatten(suite))
    ids = {t.id() for t in tests}
    tests, not_run = select(tests, xfail, size)
    for t in tests:
        if t.id() in xfail:
            # What unittest.expectedFailure sets, on the instance: the test code stays untouched.
            t.__unittest_expecting_failure__ = True
    if rank == 0:
        stale = sorted(set(xfail) - ids)
        for tid in stale:
            print("warning: expected-failures entry matches no test that ran: %s" % tid)
        print("running %d tests of mpi4py from %s (%d listed as expected failures, %d of them "
              "not run) on %d rank(s)" % (len(ids), testdir, len(ids & set(xfail)), len(not_run),
                                          size), flush=True)

    # One line per test and rank: when a test hangs, the last lines say where.
    Result.test_timeout = args.test_timeout
    runner = unittest.TextTestRunner(stream=out, verbosity=2, resultclass=Result)
    result = runner.run(unittest.TestSuite(tests))
    result.outcome.update((t.id(), "notrun") for t in not_run)
    if isinstance(out, RankStream):
        out.close()
    sys.stdout.flush()
    comm.Barrier()
    ok = summarize(comm, result.outcome, result.why, xfail)

    if scratch and rank == 0:
        left = sorted(os.listdir(scratch))
        if left:
            print("note: %d file(s) left after the tests (MODE_DELETE_ON_CLOSE or File.Delete "
                  "not honoured?): %s" % (len(left), " ".join(left[:10])))
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
