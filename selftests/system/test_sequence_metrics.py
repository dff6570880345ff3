# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The sequence counters of both daemons' /metrics (docs/metrics.md
"Sequence counters"), on a real meter attached to a veth pair in a
namespace the test creates (test_live_meter's fixture) exporting over TLS
1.3 to a real collector.

RoCEv2 frames built with scapy are sent through the pair: [SEQOBS]'s
"Verification Examples" (the counters the specification gives for them,
test_live_meter.SEED_EXAMPLES) and a connection with three requests
dropped, whose counters the test derives from the PSNs it sends. Scraped
over HTTP, the per-kind counters of the meter (labels interface and
observation_point) and of the collector (observation_domain and
observation_point) must equal those values: first from the periodic
snapshots of the open epochs, then after a reload closed them (pending
positions abandoned: no counter goes back), then after a new epoch.
The collector counts epochs when they settle, while the session is still
open. A profile violation logs one line per connection naming the opcode.
"""
import os
import re
import signal
import subprocess
import urllib.request

import pytest

import rocetest as rt
import test_export_e2e as e2e
import test_live_meter as live

ROCEMETER = e2e.ROCEMETER

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (XDP on a veth)")

link = live.link
pki = e2e.pki

KINDS = ("requests", "skipped_positions", "filled_positions", "expired_positions", "abandoned_positions",
         "repeated_psns", "unclassified_late_requests")
# SEED_EXAMPLES' names of the same counters.
SEED_NAMES = dict(requests="requests", skipped_positions="skipped", filled_positions="filled",
                  expired_positions="expired", abandoned_positions="abandoned", repeated_psns="repeated",
                  unclassified_late_requests="late")

DROP_QP = 0x000105
DOMAIN, POINT = 3, 7


def dropped_stream(first, last, dropped):
    """PSNs first..last without the dropped ones, and what [SEQOBS] counts
    for them in one epoch when every gap is followed by at least W more
    PSNs (W below): each dropped PSN is skipped by the forward advance past
    it, then expires when it leaves the window; nothing is late, filled or
    repeated, and nothing is pending at closure."""
    psns = [p for p in range(first, last + 1) if p not in dropped]
    counts = dict.fromkeys(KINDS, 0)
    counts.update(requests=len(psns), skipped_positions=len(dropped), expired_positions=len(dropped))
    return psns, counts


def seed_counts(final):
    """The sum of [SEQOBS]'s example counters (W = 4): open, or after the closure (pending -> abandoned)."""
    total = dict.fromkeys(KINDS, 0)
    for _, exp in live.SEED_EXAMPLES.values():
        for kind in KINDS:
            total[kind] += exp[SEED_NAMES[kind]]
        if final:
            total["abandoned_positions"] += exp["pending"]
    return total


def add(a, b):
    return {k: a[k] + b[k] for k in KINDS}


def scrape(port):
    """{(metric, frozenset(labels)): value} of one /metrics exposition."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'(\w+)(?:\{(.*)\})? (\d+)', line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = int(m.group(3))
    return out


def sequence_counters(port, prefix, **labels):
    series = scrape(port)
    key = frozenset((k, str(v)) for k, v in labels.items())
    return {k: series.get(("rocemeter_%s_%s_total" % (prefix, k), key)) for k in KINDS}


def wait_counters(port, prefix, want, what, **labels):
    """Wait until the counters equal want, asserting that none ever goes back meanwhile."""
    seen = {}

    def check():
        got = sequence_counters(port, prefix, **labels)
        for k, v in got.items():
            assert v is not None, (prefix, k, labels, got)
            assert v >= seen.get(k, 0), "%s %s went back from %d to %d" % (prefix, k, seen[k], v)
            seen[k] = v
        return got == want
    try:
        live.wait_for(check, what)
    except BaseException:
        pass
    assert sequence_counters(port, prefix, **labels) == want, what


def exposed_metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return set(re.findall(r"^# TYPE (\w+) ", r.read().decode(), re.M))


def documented_metrics():
    """The metrics of docs/metrics.md's tables (the opt-in per-connection series are prose)."""
    with open(os.path.join(e2e.ROOT, "docs", "metrics.md")) as f:
        return set(re.findall(r"^\| `(rocemeter_\w+)` \|", f.read(), re.M))


def served_port(text):
    m = re.search(r"metrics: serving /metrics on \S+ \(port (\d+)\)", text)
    return int(m.group(1)) if m else None


def meter_config(tmp_path, pki, port, window):
    conf = tmp_path / "meter.conf"
    conf.write_text(f"""[meter]
provision_all = yes
window = {window}
idle_timeout_ms = 0
observation_point_id = {POINT}
metrics = 127.0.0.1:0

[export]
collector = 127.0.0.1
port = {port}
ca = {pki}/ca.pem
cert = {pki}/exporter.pem
key = {pki}/exporter.key
peer_name = collector.rocemeter.test
observation_domain = {DOMAIN}
report_interval_ms = 200
""")
    return str(conf)


def test_sequence_counters_meter_and_collector(tmp_path, pki, link):
    port = e2e.free_port()
    col_err = tmp_path / "collect.err"
    with open(col_err, "w") as err:
        col = subprocess.Popen(
            [ROCEMETER, "collect", "--listen", f"127.0.0.1:{port}", "--db", str(tmp_path / "c.db"), "--cert",
             f"{pki}/collector.pem", "--key", f"{pki}/collector.key", "--ca", f"{pki}/ca.pem", "--peer-name",
             "exporter.rocemeter.test", "--metrics", "127.0.0.1:0"], stderr=err)
    try:
        col_port = live.wait_for(lambda: served_port(col_err.read_text()), "the collector's metrics server")
        conf = meter_config(tmp_path, pki, port, window=4)
        d = link.attach("--config", conf)
        e2e.wait_session(d)
        meter_port = served_port(d.stderr())
        assert meter_port, d.stderr()
        meter_labels = dict(interface=link.iface, observation_point=POINT)
        col_labels = dict(observation_domain=DOMAIN, observation_point=POINT)

        # Both daemons say what they are.
        version = subprocess.run([ROCEMETER, "--version"], capture_output=True, text=True,
                                 check=True).stdout.split()[-1]
        for p in (meter_port, col_port):
            assert scrape(p)[("rocemeter_build_info", frozenset({("version", version)}))] == 1
        assert all(v == 0 for v in sequence_counters(meter_port, "meter", **meter_labels).values())
        # docs/metrics.md lists what both expose, no more, no less.
        assert exposed_metrics(meter_port) | exposed_metrics(col_port) == documented_metrics()

        # Phase 1: open epochs, counted from their periodic snapshots.
        psns, drop_counts = dropped_stream(0, 49, {10, 20, 30})
        frames = live.seed_frames() + [live.send_only(DROP_QP, p) for p in psns]
        link.send(frames, "phase1.pcap")
        want = add(seed_counts(final=False), drop_counts)
        assert want["requests"] == 62 and want["expired_positions"] == 4  # 5+3+3+4+47; 1 + 3
        wait_counters(meter_port, "meter", want, "the meter's counters of the open epochs", **meter_labels)
        wait_counters(col_port, "collector", want, "the collector's counters of the open epochs", **col_labels)
        series = scrape(col_port)
        assert series[("rocemeter_collector_epochs_total", frozenset({("outcome", "complete")}))] == 0

        # Phase 2: a reload with another window closes every open epoch (finalEpoch):
        # the pending positions of 0x000103 are abandoned, nothing goes back.
        n = d.stderr().count("reload: configuration")
        meter_config(tmp_path, pki, port, window=8)
        d.proc.send_signal(signal.SIGHUP)
        live.wait_for(lambda: d.stderr().count("reload: configuration") > n, "the reload")
        want = add(seed_counts(final=True), drop_counts)
        assert want["abandoned_positions"] == 3
        wait_counters(meter_port, "meter", want, "the meter's counters after the closure", **meter_labels)
        wait_counters(col_port, "collector", want, "the collector's counters after the closure", **col_labels)
        # The five epochs settled with their final report, the session still open.
        settled = lambda: scrape(col_port)[("rocemeter_collector_epochs_total",
                                            frozenset({("outcome", "complete")}))]
        live.wait_for(lambda: settled() == 5, "the settled epochs to be counted")
        assert scrape(col_port)[("rocemeter_collector_sessions_open", frozenset())] == 1

        # Phase 3: a new epoch of the same connection adds to the counters (W = 8 now).
        psns, more = dropped_stream(100, 119, {105})
        link.send([live.send_only(DROP_QP, p) for p in psns], "phase3.pcap")
        want = add(want, more)
        wait_counters(meter_port, "meter", want, "the meter's counters with a new epoch", **meter_labels)
        wait_counters(col_port, "collector", want, "the collector's counters with a new epoch", **col_labels)

        # The meter stops: the last epoch's final changes no total (nothing pending).
        assert d.stop() == 0, d.stderr()
        wait_counters(col_port, "collector", want, "the collector's counters after the stop", **col_labels)
        live.wait_for(lambda: settled() == 6, "the last epoch to be counted")
    finally:
        col.send_signal(signal.SIGTERM)
        col.wait(timeout=30)


def test_profile_violation_logs_one_line_per_connection(link):
    """An RDMA READ Request on a provisioned connection disables it: one
    warning line per connection, naming the opcode as [IBPKT]'s master table
    does, however many requests the disabled connection sends after."""
    d = link.attach("--provision-all")
    read = lambda qp, psn: rt.Ether(rt.roce_frame(live.SRC, live.DST, qp, psn, opcode=rt.READ_REQUEST))
    frames = [live.send_only(0x201, 1), read(0x201, 2), read(0x201, 3), live.send_only(0x201, 4),
              live.send_only(0x202, 7), read(0x202, 8)]
    link.send(frames)
    link.wait_frames(len(frames))

    def lines():
        return [line for line in d.stderr().splitlines() if "profile violation on" in line]
    live.wait_for(lambda: len(lines()) >= 2, "the violation lines")
    got = lines()
    assert len(got) == 2, got
    for qp, psn in ((0x201, 2), (0x202, 8)):
        line = [x for x in got if "qp 0x%06x" % qp in x]
        assert len(line) == 1, got
        assert "RDMA READ Request (opcode 0x0c) at PSN %d, unsupported" % psn in line[0], line
        assert "warning" in line[0] and link.iface in line[0], line
    assert d.stop() == 0
    assert len(lines()) == 2
