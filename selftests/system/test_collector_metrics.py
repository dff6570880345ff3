# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The collector's sequence counters and settled epochs on /metrics, from
IPFIX Messages written by hand (test_collector's vectors: RFC 7011 and
[SEQOBS]'s profile with struct.pack, never rocemeter's encoder) over TLS 1.3.

Per observation point (Observation Domain, observationPointId) the counters
add what each accepted report counts beyond its epoch's previous accepted
report; stale reports, identical repeats and records that invalidate their
epoch add nothing. Epochs are counted when they settle (the final accepted)
while their session is still open, once: an epoch invalidated after its
final is counted apart.
"""
import re
import time
import urllib.request

import pytest

import test_collector as tc

KINDS = dict(requests="requests", skipped_positions="skipped", filled_positions="filled",
             expired_positions="expired", abandoned_positions="abandoned", repeated_psns="repeated",
             unclassified_late_requests="late")

collector = tc.collector
pki = tc.pki


def metrics_port(c):
    c.wait_for(lambda: re.search(r"serving /metrics on \S+ \(port (\d+)\)", c.log()), "the metrics server")
    return int(re.search(r"serving /metrics on \S+ \(port (\d+)\)", c.log()).group(1))


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for m in re.finditer(r'^(\w+)(?:\{(.*)\})? (\d+)$', text, re.M):
        out[(m.group(1), frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")))] = int(m.group(3))
    return out


def counters(port, domain, point):
    s = scrape(port)
    key = frozenset({("observation_domain", str(domain)), ("observation_point", str(point))})
    return {k: s.get(("rocemeter_collector_%s_total" % k, key)) for k in KINDS}


def total(*reports):
    """What the last accepted report of each epoch counts: the sums of the epochs' totals."""
    return {k: sum(r[f] for r in reports) for k, f in KINDS.items()}


def wait(c, cond, what):
    c.wait_for(cond, what)


@pytest.mark.parametrize("collector", [("--metrics", "127.0.0.1:0")], indirect=True)
def test_sequence_counters_of_accepted_reports(collector):
    port = metrics_port(collector)
    a1 = tc.report(epoch=1, rid=1, pending=1, skipped=2, expired=0)  # 2 skipped: 1 filled, 1 pending
    a2 = tc.later(a1, 2)
    a3 = dict(tc.later(a2, 3, final=True), expired=0)              # the pending position abandoned
    b1 = tc.report(epoch=2, rid=1, requests=3, skipped=0, filled=0, repeated=1, late=1)
    c1 = tc.report(epoch=3, rid=1)
    c2 = dict(tc.later(c1, 2), skipped=9)                          # breaks skipped = filled + ...: invalid
    d1 = tc.report(epoch=4, rid=1, obs=9, requests=11, skipped=3, filled=0, expired=3, repeated=0)
    assert a3["abandoned"] == 1 and a3["skipped"] == a3["filled"] + a3["expired"] + a3["abandoned"]
    s = collector.connect()
    s.sendall(tc.templates_msg())
    # a2 twice (an identical repeat), a1 after a2 (stale): neither adds anything.
    s.sendall(tc.data_msg(a1, a2, a2, a1, b1, c1, c2, seq=1))  # the Template Message held 1 record
    s.sendall(tc.data_msg(a3, d1, seq=8))
    s.sendall(tc.templates_msg(domain=5) + tc.data_msg(dict(b1, epoch=10), domain=5, seq=1))
    want7 = total(a3, b1, c1)  # c2 invalidated epoch 3: c1 was its last accepted report
    wait(collector, lambda: counters(port, 0, 7) == want7, "the counters of point 7")
    assert want7["requests"] == 9 + 3 + 5 and want7["abandoned_positions"] == 1
    assert counters(port, 0, 9) == total(d1)
    assert counters(port, 5, 7) == total(b1)
    tc.close_tls(s)
    collector.wait_ended(1)
    assert counters(port, 0, 7) == want7  # the session's end changes no total


@pytest.mark.parametrize("collector", [("--metrics", "127.0.0.1:0")], indirect=True)
def test_epochs_counted_when_they_settle(collector):
    port = metrics_port(collector)

    def epochs_total():
        s = scrape(port)
        return {o: s[("rocemeter_collector_epochs_total", frozenset({("outcome", o)}))]
                for o in ("complete", "incomplete", "invalid")} | {
            "invalidated_after_final": s[("rocemeter_collector_epochs_invalidated_after_final_total", frozenset())]}

    e1 = tc.report(epoch=1, rid=1)
    e2 = tc.later(e1, 2, final=True)
    f3 = tc.later(tc.report(epoch=2, rid=1), 3, final=True)      # reports 1 and 2 never arrive: incomplete
    g1 = tc.report(epoch=3, rid=1)
    g2 = tc.later(g1, 2, final=True)
    s = collector.connect()
    s.sendall(tc.templates_msg() + tc.data_msg(e1, e2, f3, g1, g2, seq=1))
    want = dict(complete=2, incomplete=1, invalid=0, invalidated_after_final=0)
    wait(collector, lambda: epochs_total() == want, "the settled epochs, the session open")
    assert scrape(port)[("rocemeter_collector_sessions_open", frozenset())] == 1
    # A report after g's final invalidates it: counted apart, complete stays.
    s.sendall(tc.data_msg(tc.later(g2, 3), seq=6))
    want = dict(want, invalidated_after_final=1)
    wait(collector, lambda: epochs_total() == want, "the epoch invalidated after its final")
    tc.close_tls(s)
    collector.wait_ended(1)
    time.sleep(0.2)
    assert epochs_total() == want  # retiring them counts nothing again
    got = {e["epoch_id"]: e["outcome"] for e in tc.epochs(collector)}
    assert got == {1: "complete", 2: "incomplete", 3: "invalid"}
