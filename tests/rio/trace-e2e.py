"""One timeline for clients and server (issue 17 with issue 16): a run of mpi_rio against a
pario-server, both traced into one directory (PARIO_TRACE and --trace). Checks that every
client rank and the server wrote a file, that each rio request span of a client has server
spans with the same flow (request id), that the server's clock was measured by the clients
(server_clock) and applied, that the merged Perfetto JSON holds flow arrows from clients to
the server, and that the per-server statistics count the server's storage operations.

usage: trace-e2e.py DIR NP"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from pario import trace as tr  # noqa: E402

d, np_ = sys.argv[1], int(sys.argv[2])
t = tr.load(d)
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)


check(len(t.clients) == np_, f"{len(t.clients)} client files, want {np_}")
check(len(t.servers) == 1, f"{len(t.servers)} server files, want 1")
server = t.servers[0]
client_flows = {e["flow"] for c in t.clients for e in c.spans if e.get("name", "").startswith("rio ") and e.get("flow")}
server_flows = {e["flow"] for e in server.spans if e.get("flow")}
check(client_flows, "no rio request spans on the clients")
linked = client_flows & server_flows
# Every request a client sent reached the server's trace (HELLO/AUTH/PING of the handshake
# are not spans on the client: they precede the receiver).
check(linked == client_flows, f"{len(client_flows - server_flows)} of {len(client_flows)} client requests "
                              "have no server span with their id")
check(server.offset_given, "the server's clock offset was not taken from the clients' server_clock lines")
check(abs(server.offset) < 10_000_000, f"server offset {server.offset} ns on one machine (one clock): too large")
out = os.path.join(d, "merged.json")
tr.merge_json(t, out)
with open(out) as f:
    ev = json.load(f)["traceEvents"]
starts = [e for e in ev if e.get("ph") == "s"]
check(len(starts) >= len(linked), f"{len(starts)} flow arrows for {len(linked)} linked requests")
stats = tr.server_stats(t)
check(stats and stats[0].storage_ops > 0, "the server statistics count no storage operation")
for f_ in fails:
    print("FAIL:", f_)
print(f"trace-e2e: {len(t.clients)} clients, {len(client_flows)} requests, {len(linked)} linked to the server, "
      f"server offset {server.offset} ns (bound {server.err} ns), {len(fails)} failures")
sys.exit(1 if fails else 0)
