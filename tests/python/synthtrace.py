"""Synthetic trace files for the tests of `pario trace` and `pario trace experiment`:
events in the recorder's JSON-lines format (docs/trace-format.md), written by hand, and
`write_big`: a trace directory of N events over R ranks and one server with the mix of a
real run (scripts/trace-scale.sh measures merge and stats on it)."""

import json
import os
import random


def span(t, d, name, cat, tid=0, thread="main", flow=None, **args):
    e = {"type": "span", "t": t, "d": d, "tid": tid, "thread": thread, "cat": cat, "name": name, "args": args}
    if flow:
        e["flow"] = flow
    return e


def write_lines(path, lines):
    with open(path, "w") as fh:
        for obj in lines:
            fh.write(json.dumps(obj) + "\n")


# ---- a large trace, written as libpario and pario-server write theirs --------------------------

FILE_ID = 473269342339


def _span_line(t, d, name, cat, args, flow=0, thread="main", tid=0):
    """A client span as src/trace/trace.c writes it (flow before args)."""
    fl = f',"flow":{flow}' if flow else ""
    return (f'{{"type":"span","t":{t},"d":{d},"tid":{tid},"thread":"{thread}","name":"{name}",'
            f'"cat":"{cat}"{fl},"args":{{{args}}}}}\n')


def _server_line(t, d, name, cat, nbytes, offset, flow, tid):
    """A server span as server/trace.c writes it (flow after args), keyed by its end."""
    return (t + d, -t, f'{{"type":"span","t":{t},"d":{d},"tid":{tid},"thread":"conn-{tid}","cat":"{cat}",'
            f'"name":"{name}","args":{{"bytes":{nbytes},"offset":{offset}}},"flow":{flow}}}\n')


class _Rank:
    """One rank's file and its part of the server's requests."""

    def __init__(self, d, rank, server, rng):
        self.rank, self.server, self.rng = rank, server, rng
        self.fh = open(os.path.join(d, f"client-{rank}-{1000 + rank}.jsonl"), "w")
        self.fh.write(json.dumps({"type": "header", "format": "pario-trace", "version": 1, "kind": "client",
                                  "rank": rank, "pid": 1000 + rank, "host": f"node{rank // 4}",
                                  "name": f"rank {rank}", "clock_offset_ns": -37 * rank,
                                  "clock_err_ns": 10 * rank}) + "\n")
        self.fh.write(json.dumps({"type": "file", "id": FILE_ID, "name": "/scratch/out.dat", "nprocs": 4}) + "\n")
        self.fh.write(json.dumps({"type": "server_clock", "name": "server 127.0.0.1:5000",
                                  "offset_ns": 52000, "err_ns": 1200}) + "\n")
        self.t = 1_000_000_000 + rank * 1000
        self.seq = 0
        self.events = 0
        self.offset = 0

    def _request(self, t, nbytes, write):
        """A driver operation served remotely: the client span and three server spans."""
        self.seq += 1
        flow = (self.rank + 1) << 40 | self.seq
        d = 2000 + nbytes // 4
        name = "pwritev" if write else "preadv"
        line = _span_line(t, d, name, "driver", f'"file":{FILE_ID},"offset":{self.offset},"len":{nbytes},'
                          f'"done":{nbytes},"iovcnt":1,"err":0,"driver":"rio"', flow)
        st = t - 52000 + 200  # the server's clock
        r = self.rank
        self.server.append(_server_line(st, 300, "recv", "net", 64, 0, flow, r))
        self.server.append(_server_line(st + 300, d - 700, "pwrite" if write else "pread", "storage", nbytes,
                                        self.offset, flow, r))
        self.server.append(_server_line(st + d - 400, 100, "send", "net", 16, 0, flow, r))
        self.offset += nbytes
        self.events += 4
        return line, d

    def independent(self):
        n = self.rng.choice((4096, 65536, 1048576))
        t0 = self.t
        drv, d = self._request(t0 + 500, n, self.rng.random() < 0.7)
        self.fh.write(drv)
        self.fh.write(_span_line(t0, d + 1000, "MPI_File_write_at", "api",
                                 f'"file":{FILE_ID},"rc":0,"coll":0,"pos":0,"bytes":{n},"count":{n},"type_size":1'))
        self.events += 1
        self.t = t0 + d + 3000

    def collective(self, rounds):
        t0 = t = self.t
        out = [_span_line(t + 100, 5000, "wait_allgather", "coll", '"bytes":16384')]
        out.append(f'{{"type":"instant","t":{t + 5200},"tid":0,"thread":"main","name":"decide","cat":"coll",'
                   f'"args":{{"file":{FILE_ID},"aggregate":1,"np":4,"why":"aggregated: enabled by hint"}}}}\n')
        out.append(_span_line(t + 5300, 2000, "plan", "coll", f'"naggr":4,"me_aggr":{self.rank},'
                              f'"rounds":{rounds},"cb":1048576,"bytes":{rounds * 1048576}'))
        t += 7500
        for r in range(rounds):
            ex = 3000 + self.rng.randrange(2000)
            out.append(_span_line(t + 100, ex, "exchange", "coll", '"requests":4'))
            drv, d = self._request(t + 200 + ex, 262144, True)
            out.append(drv)
            out.append(_span_line(t, ex + d + 400, "round", "coll", f'"round":{r},"aggr":{self.rank},'
                                  f'"lo":0,"hi":1048576,"sent":262144,"recv":262144'))
            t += ex + d + 500
        out.append(_span_line(t, 4000, "wait_done", "coll", '"rc":0'))
        out.append(_span_line(t0, t + 4100 - t0, "MPI_File_write_all", "api",
                              f'"file":{FILE_ID},"rc":0,"coll":1,"pos":0,"bytes":{rounds * 262144},"count":1'))
        self.fh.write("".join(out))
        self.events += 5 + 2 * rounds
        if self.rng.random() < 0.3:
            self.fh.write(f'{{"type":"counter","t":{t + 4200},"tid":1,"thread":"pario-io-0",'
                          f'"name":"queue_depth","value":{self.rng.randrange(4)}}}\n')
            self.events += 1
        self.t = t + 6000


def write_big(d, events, ranks=4, seed=1):
    """A trace directory of about `events` events: `ranks` clients, each a mix of independent
    writes and collective writes (4 to 16 rounds, an exchange and a remote write each), and one
    pario-server with three spans per request (receive, storage, send) carrying its id, plus
    queue_depth and cpu_pct counters. Lines are in the writers' order: a thread's spans at
    their end (children before parents). Returns the number of events written."""
    os.makedirs(d, exist_ok=True)
    rng = random.Random(seed)
    server = []
    sfh = open(os.path.join(d, "server-5000-99.jsonl"), "w")
    sfh.write(json.dumps({"type": "header", "format": "pario-trace", "version": 1, "kind": "server", "pid": 99,
                          "host": "node0", "name": "server 127.0.0.1:5000", "clock_offset_ns": 0,
                          "clock_err_ns": -1}) + "\n")
    rs = [_Rank(d, r, server, rng) for r in range(ranks)]
    total = cpu = 0
    while total < events:
        for r in rs:
            if rng.random() < 0.5:
                r.independent()
            else:
                r.collective(rng.randrange(4, 17))
        server.sort()
        sfh.write("".join(line for _, _, line in server))
        server.clear()
        cpu_t = rs[0].t - 52000
        sfh.write(f'{{"type":"counter","t":{cpu_t},"name":"cpu_pct","value":{rng.randrange(100)}}}\n')
        cpu += 1
        total = sum(r.events for r in rs) + cpu
    for r in rs:
        r.fh.close()
    sfh.close()
    return total


if __name__ == "__main__":
    import sys
    if len(sys.argv) not in (3, 4) or sys.argv[1] in ("-h", "--help"):
        print("usage: synthtrace.py DIR EVENTS [RANKS]: write a synthetic trace directory of about EVENTS events")
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    n = write_big(sys.argv[1], int(float(sys.argv[2])), int(sys.argv[3]) if len(sys.argv) == 4 else 4)
    print(f"{sys.argv[1]}: {n} events")
