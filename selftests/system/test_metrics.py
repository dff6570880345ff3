# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Prometheus metrics of `attach --metrics` and `collect --metrics`, scraped
by a real Prometheus server (Debian's `prometheus`) that the test starts on a
loopback port with its own configuration and data directory.

The meter is attached to a veth pair (test_live_meter's fixture) and exports
over TLS 1.3 to the collector; the NCCL capture is sent through the pair.
Through Prometheus's HTTP API (/api/v1/query) every series the issue names
must exist and equal what `rocemeter status --json` shows (meter statistics
per cause, contexts by state, the daemon's and the exporter's counters,
per-connection series) and, once the meter has stopped, what `rocemeter
report --json` and `report --limits --json` show (sessions, records by rule
outcome, epochs by outcome, resource drops by limit). `promtool check
metrics` checks both expositions. No timing is asserted: the test waits
until Prometheus has scraped the settled values.
"""
import json
import os
import re
import shutil
import signal
import sqlite3
import socket
import subprocess
import urllib.parse
import urllib.request
from collections import Counter

import pytest

import test_export_e2e as e2e
import test_live_meter as live

ROOT = e2e.ROOT
ROCEMETER = e2e.ROCEMETER
CAPTURE = e2e.CAPTURE

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (XDP on a veth)"),
    pytest.mark.skipif(not shutil.which("prometheus") or not shutil.which("promtool"),
                       reason="needs Debian's prometheus package (make deps)"),
]

link = live.link
pki = e2e.pki


def served_port(stderr_text):
    m = re.search(r"metrics: serving /metrics on \S+ \(port (\d+)\)", stderr_text)
    return int(m.group(1)) if m else None


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


class Prometheus:
    """prometheus on 127.0.0.1:PORT scraping the given targets every second."""

    def __init__(self, tmp_path, targets):
        self.port = e2e.free_port()
        conf = tmp_path / "prometheus.yml"
        jobs = "".join(f"""  - job_name: {job}
    static_configs:
      - targets: ["127.0.0.1:{port}"]
""" for job, port in targets.items())
        conf.write_text(f"""global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
{jobs}""")
        self.log = open(tmp_path / "prometheus.log", "w")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={conf}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        live.wait_for(self.ready, "prometheus to be ready")

    def ready(self):
        if self.proc.poll() is not None:
            pytest.fail("prometheus exited with %d" % self.proc.returncode)
        try:
            return get(f"http://127.0.0.1:{self.port}/-/ready")[0] == 200
        except OSError:
            return False

    def query(self, expr):
        """{frozenset(labels): value} of an instant vector."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        doc = json.loads(get(url)[2])
        assert doc["status"] == "success", doc
        out = {}
        for r in doc["data"]["result"]:
            labels = {k: v for k, v in r["metric"].items() if k not in ("job", "instance", "__name__")}
            out[frozenset(labels.items())] = int(float(r["value"][1]))
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def promtool_check(text):
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def one(series, **labels):
    """The value of the one series with exactly these labels (fails if absent)."""
    key = frozenset(labels.items())
    assert key in series, (labels, series)
    return series[key]


def meter_expected(link_):
    """What `status --json` says, as {PromQL selector: {labels: value}}."""
    st = link_.status()
    iface = link_.iface
    meter, daemon = st["meter"], st["daemon"]
    # The metric of each statistic: RM_STAT_GROUPS in include/rocemeter/meter.h.
    with open(os.path.join(ROOT, "include", "rocemeter", "meter.h")) as f:
        text = f.read()
    stats = re.findall(r'X\((\w+), "(\w+)", (\w+),', re.search(r"#define RM_STATS\(X\)(.*?)\n\n", text, re.S).group(1))
    groups = dict(re.findall(r'X\((\w+), "(\w+)",', re.search(r"#define RM_STAT_GROUPS\(X\)(.*?)\n\n", text,
                                                                  re.S).group(1)))
    members = Counter(g for _, _, g in stats)
    want = {}
    for _, name, g in stats:
        metric = "rocemeter_meter_%s_total" % groups[g]
        labels = {"interface": iface}
        if members[g] > 1:
            labels["cause"] = name
        want.setdefault(metric, {})[frozenset(labels.items())] = meter[name]
    states = Counter(c["state"] for c in st["contexts"])
    want["rocemeter_meter_contexts"] = {frozenset({"interface": iface, "state": s}.items()): states.get(s, 0)
                                        for s in ("open", "closed", "disabled")}
    for key, metric in (("reports", "reports"), ("final_reports", "final_reports"),
                        ("closed_for_new_session", "epochs_closed_for_new_session")):
        want["rocemeter_meter_%s_total" % metric] = {frozenset({"interface": iface}.items()): daemon[key]}
    exp = daemon["export"]
    # An info metric: the session's number is a label (no gauge holds an ID).
    want["rocemeter_export_session_info"] = {frozenset({"interface": iface, "session": str(exp["session"])}.items()): 1}
    for key in ("records_sent", "messages_sent", "sessions", "reconnects"):
        want["rocemeter_export_%s_total" % key] = {frozenset({"interface": iface}.items()): exp[key]}
    want["rocemeter_export_records_lost_in_flight_total"] = {
        frozenset({"interface": iface}.items()): exp["lost_in_flight"]}
    want["rocemeter_export_records_dropped_total"] = {
        frozenset({"interface": iface, "cause": c}.items()): exp["dropped_" + c]
        for c in ("queue_full", "no_session", "session_lost", "invalid", "at_stop")}
    # Per-connection series (metrics_connections): the open epochs' counters.
    want["rocemeter_meter_connection_requests_total"] = {
        frozenset({"interface": iface, "source": c["sourceIPv4Address"], "destination": c["destinationIPv4Address"],
                   "qp": "0x%06x" % c["rdmaDestinationQP"], "pkey": "0x%04x" % c["rdmaPartitionKey"],
                   "observation_point": "7"}.items()):
        c["requestPacketTotalCount"] for c in st["contexts"] if c["state"] == "open"}
    return want


def matches(prom, want):
    return all(prom.query(metric) == series for metric, series in want.items())


def settle(prom, want_fn, what):
    """Wait until Prometheus shows want_fn()'s values; then assert them metric by metric
    (so that a failure names the metric and both sides)."""
    try:
        live.wait_for(lambda: matches(prom, want_fn()), what)
    except BaseException:
        pass
    for metric, series in want_fn().items():
        assert prom.query(metric) == series, metric


def test_prometheus_scrapes_meter_and_collector(tmp_path, pki, link):
    port = e2e.free_port()
    db = tmp_path / "collector.db"
    col_err = tmp_path / "collect.err"
    with open(col_err, "w") as err:
        col = subprocess.Popen(
            [ROCEMETER, "collect", "--listen", f"127.0.0.1:{port}", "--db", str(db), "--cert",
             f"{pki}/collector.pem", "--key", f"{pki}/collector.key", "--ca", f"{pki}/ca.pem", "--peer-name",
             "exporter.rocemeter.test", "--metrics", "127.0.0.1:0"], stderr=err)
    prom = None
    try:
        col_port = live.wait_for(lambda: served_port(col_err.read_text()), "the collector's metrics server")
        conf = e2e.export_config(tmp_path, pki, port)
        text = open(conf).read().replace("observation_point_id = 7\n",
                                         "observation_point_id = 7\nmetrics = 127.0.0.1:0\nmetrics_connections = 100\n")
        open(conf, "w").write(text)
        d = link.attach("--config", conf)
        e2e.wait_session(d)
        meter_port = served_port(d.stderr())
        assert meter_port, d.stderr()
        prom = Prometheus(tmp_path, {"meter": meter_port, "collector": col_port})

        link.send_pcap(CAPTURE)
        nframes = int(subprocess.run(["tshark", "-r", CAPTURE, "-T", "fields", "-e", "frame.number"],
                                     capture_output=True, text=True, check=True).stdout.split()[-1])
        link.wait_frames(nframes)
        live.wait_for(lambda: link.status()["daemon"]["export"]["records_sent"] ==
                      link.status()["daemon"]["reports"], "the reports to be sent")

        # The exposition itself: HTTP, content type, promtool.
        status, ctype, body = get(f"http://127.0.0.1:{meter_port}/metrics")
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), ctype
        promtool_check(body)
        assert "# TYPE rocemeter_meter_parsed_frames_total counter" in body
        promtool_check(get(f"http://127.0.0.1:{col_port}/metrics")[2])

        # Phase 1: the live meter, through Prometheus, equals `status --json`.
        settle(prom, lambda: meter_expected(link), "Prometheus to show what status --json shows")
        want = meter_expected(link)
        assert one(want["rocemeter_meter_frames_total"], interface=link.iface) == nframes
        assert sum(want["rocemeter_meter_connection_requests_total"].values()) > 0
        assert one(prom.query("rocemeter_export_session_up"), interface=link.iface) == 1

        # A scan: a connection that is no TLS at all never becomes a session; the collector
        # counts it per outcome, in its database and in the metric of refused connections.
        with socket.create_connection(("127.0.0.1", port)) as scan:
            scan.sendall(b"GET / HTTP/1.0\r\n\r\n")
        live.wait_for(lambda: "refused (handshake-failed)" in col_err.read_text(), "the scan to be refused")

        # Phase 2: the meter stops (final reports, TLS close_notify); the collector
        # retires the session's epochs. Its series equal report --json.
        assert d.stop() == 0, d.stderr()
        live.wait_for(lambda: "ended" in col_err.read_text(), "the collector to end the session")
        epochs = [json.loads(line) for line in subprocess.run(
            [ROCEMETER, "report", "--db", str(db), "--json"], capture_output=True, text=True,
            check=True).stdout.splitlines()]
        def read_limits():
            return json.loads(subprocess.run([ROCEMETER, "report", "--db", str(db), "--limits", "--json"],
                                             capture_output=True, text=True, check=True).stdout)
        # refused connections reach the database with the collector's next write (within a second)
        limits = live.wait_for(lambda: (lambda lm: lm if lm["refused_connections"].get("handshake-failed") else None)(
            read_limits()), "the refused connection in the database")
        assert epochs and all(not e["retained"] for e in epochs)
        con = sqlite3.connect(str(db))
        con.row_factory = sqlite3.Row
        session_row = dict(con.execute("SELECT seq_gaps, seq_missing, export_time_backwards FROM sessions").fetchone())
        con.close()
        outcomes = Counter(e["outcome"] for e in epochs)
        accepted = sum(e["coverage"]["accepted"] for e in epochs)
        want_col = {
            "rocemeter_collector_epochs_total": {frozenset({"outcome": o}.items()): outcomes.get(o, 0)
                                                 for o in ("complete", "incomplete", "invalid")},
            "rocemeter_collector_sessions_total": {frozenset({"outcome": "accepted"}.items()): 1,
                                                   frozenset({"outcome": "refused"}.items()): 0},
            "rocemeter_collector_sessions_open": {frozenset(): 0},
            "rocemeter_collector_epochs_retained": {frozenset(): 0},
            "rocemeter_collector_resource_drops_total": {
                frozenset({"limit": k}.items()): limits["drops"].get(k, 0)
                for k in ("session-limit", "epoch-admission", "raw-record-limit", "raw-byte-limit", "memory-budget",
                          "database", "store", "unread-at-crash")},
            "rocemeter_collector_database_unavailable": {frozenset(): 0},
            "rocemeter_collector_store_unavailable": {frozenset(): 0},
            "rocemeter_collector_refused_connections_total": {
                frozenset({"outcome": k}.items()): limits["refused_connections"].get(k, 0)
                for k in ("handshake-failed", "handshake-timeout", "handshake-evicted", "not-authorised",
                          "session-limit", "memory-budget")},
            # The session's header anomalies, stored in its sessions row once it ended.
            "rocemeter_collector_sequence_gaps_total": {frozenset(): session_row["seq_gaps"]},
            "rocemeter_collector_sequence_missing_records_total": {frozenset(): session_row["seq_missing"]},
            "rocemeter_collector_export_time_backwards_total": {frozenset(): session_row["export_time_backwards"]},
        }
        settle(prom, lambda: want_col, "Prometheus to show what report --json shows")
        records = prom.query("rocemeter_collector_records_total")
        assert one(records, outcome="accepted") == accepted
        assert sum(records.values()) == accepted  # every record of this clean run was accepted
        assert outcomes["complete"] == len(epochs)
        assert limits["refused_connections"].get("handshake-failed") == 1
        promtool_check(get(f"http://127.0.0.1:{col_port}/metrics")[2])
    finally:
        if prom:
            prom.stop()
        col.send_signal(signal.SIGTERM)
        col.wait(timeout=30)
