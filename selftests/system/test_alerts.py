# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The shipped alert rules (docs/prometheus/rocemeter-rules.yml) live: a
real Prometheus server (Debian's `prometheus`) scrapes a real meter attached
to a veth pair and the collector it exports to, evaluates the rules, and
sends its alerts to a real Alertmanager (Debian's `prometheus-alertmanager`),
both started by the test as plain processes on loopback ports, whose webhook
receiver is an HTTP server the test runs.

Clean traffic raises nothing. Three requests dropped on the way make the
positions-never-seen alerts fire (the meter's, per interface and
observation point, and the collector's, per observation domain and point);
the webhook receives them firing. Clean traffic again: they resolve and the
webhook receives the resolution. The rules are the shipped ones with their
5-minute ranges shortened to RANGE_S seconds, so that the test need not
wait 5 minutes for a resolution.

Without prometheus-alertmanager (scripts/deps.sh installs it) the variant
with Alertmanager is skipped; the other checks the alerts through
Prometheus's own API.
"""
import json
import os
import shutil
import signal
import subprocess
import threading
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

import test_export_e2e as e2e
import test_live_meter as live
import test_sequence_metrics as seqm

ROOT = e2e.ROOT
ROCEMETER = e2e.ROCEMETER
RULES = os.path.join(ROOT, "docs", "prometheus", "rocemeter-rules.yml")
ALERTMANAGER = shutil.which("prometheus-alertmanager")
RANGE_S = 15
NEVER_SEEN = ("RocemeterPositionsNeverSeen", "RocemeterReportedPositionsNeverSeen")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (XDP on a veth)"),
    pytest.mark.skipif(not shutil.which("prometheus"), reason="needs Debian's prometheus package (make deps)"),
]

link = live.link
pki = e2e.pki


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read().decode())


class Webhook:
    """Alertmanager's webhook receiver: every notification POSTed, kept in order."""

    def __init__(self):
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                received.append(json.loads(self.rfile.read(n)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass
        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def alerts(self, status):
        """(alertname, frozenset(labels)) of the alerts notified with that status."""
        return {(a["labels"]["alertname"], frozenset(a["labels"].items()))
                for n in self.received for a in n["alerts"] if a["status"] == status}

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Process:
    """A server started as a plain process with its output in a file."""

    def __init__(self, argv, log_path):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)

    def ready(self, url):
        if self.proc.poll() is not None:
            pytest.fail("%s exited with %d: %s" % (self.proc.args[0], self.proc.returncode,
                                                   open(self.log_path).read()[-2000:]))
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def start_alertmanager(tmp_path, hook):
    port = e2e.free_port()
    conf = tmp_path / "alertmanager.yml"
    conf.write_text(f"""route:
  receiver: hook
  group_by: [alertname, instance, interface, observation_domain, observation_point]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: http://127.0.0.1:{hook.port}/
        send_resolved: true
""")
    am = Process([ALERTMANAGER, f"--config.file={conf}", f"--storage.path={tmp_path / 'am'}",
                  f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=", "--log.level=warn"],
                 tmp_path / "alertmanager.log")
    live.wait_for(lambda: am.ready(f"http://127.0.0.1:{port}/-/ready"), "alertmanager to be ready")
    return am, port


def start_prometheus(tmp_path, targets, am_port):
    """The shipped rules with their 5-minute ranges shortened; every target scraped each second."""
    rules = tmp_path / "rocemeter-rules.yml"
    text = open(RULES).read()
    assert text.count("[5m]") >= 8
    rules.write_text(text.replace("[5m]", "[%ds]" % RANGE_S))
    port = e2e.free_port()
    jobs = "".join(f"""  - job_name: {job}
    static_configs:
      - targets: ["127.0.0.1:{p}"]
""" for job, p in targets.items())
    alerting = f"""alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:{am_port}"]
""" if am_port else ""
    conf = tmp_path / "prometheus.yml"
    conf.write_text(f"""global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files: ["{rules}"]
{alerting}scrape_configs:
{jobs}""")
    prom = Process(["prometheus", f"--config.file={conf}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], tmp_path / "prometheus.log")
    live.wait_for(lambda: prom.ready(f"http://127.0.0.1:{port}/-/ready"), "prometheus to be ready")
    return prom, port


def prometheus_alerts(port, state):
    """(alertname, frozenset(labels)) of Prometheus's alerts in that state (pending, firing)."""
    doc = get_json(f"http://127.0.0.1:{port}/api/v1/alerts")
    return {(a["labels"]["alertname"], frozenset(a["labels"].items()))
            for a in doc["data"]["alerts"] if a["state"] == state}


def prometheus_value(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    res = get_json(url)["data"]["result"]
    return [float(r["value"][1]) for r in res]


def never_seen(alerts):
    return {(name, labels) for name, labels in alerts if name in NEVER_SEEN}


def labels_of(alerts, name):
    return [dict(labels) for n, labels in alerts if n == name]


@pytest.mark.parametrize("with_alertmanager", [False, True], ids=["prometheus", "alertmanager"])
def test_positions_never_seen_fire_and_resolve(tmp_path, pki, link, with_alertmanager):
    if with_alertmanager and not ALERTMANAGER:
        pytest.skip("needs Debian's prometheus-alertmanager package (make deps)")
    servers, hook = [], None
    port = e2e.free_port()
    col_err = tmp_path / "collect.err"
    with open(col_err, "w") as err:
        col = subprocess.Popen(
            [ROCEMETER, "collect", "--listen", f"127.0.0.1:{port}", "--db", str(tmp_path / "c.db"), "--cert",
             f"{pki}/collector.pem", "--key", f"{pki}/collector.key", "--ca", f"{pki}/ca.pem", "--peer-name",
             "exporter.rocemeter.test", "--metrics", "127.0.0.1:0"], stderr=err)
    try:
        col_port = live.wait_for(lambda: seqm.served_port(col_err.read_text()), "the collector's metrics server")
        d = link.attach("--config", seqm.meter_config(tmp_path, pki, port, window=4))
        e2e.wait_session(d)
        meter_port = seqm.served_port(d.stderr())
        am_port = None
        if with_alertmanager:
            hook = Webhook()
            am, am_port = start_alertmanager(tmp_path, hook)
            servers.append(am)
        prom, prom_port = start_prometheus(tmp_path, {"meter": meter_port, "collector": col_port}, am_port)
        servers.append(prom)
        qp = 0x000301
        requests = f'rocemeter_meter_requests_total{{interface="{link.iface}",observation_point="7"}}'

        # Clean traffic: the requests arrive, nothing is raised.
        link.send([live.send_only(qp, p) for p in range(0, 50)], "clean1.pcap")
        live.wait_for(lambda: prometheus_value(prom_port, requests) == [50.0], "Prometheus to see 50 requests")
        live.wait_for(lambda: prometheus_value(prom_port, "rocemeter:positions_never_seen:increase5m") == [0.0],
                      "the recording rule to be evaluated")
        assert never_seen(prometheus_alerts(prom_port, "firing") | prometheus_alerts(prom_port, "pending")) == set()

        # Three requests dropped on the way: positions never seen, on the meter and in the collector's reports.
        psns, _ = seqm.dropped_stream(50, 99, {60, 70, 80})
        link.send([live.send_only(qp, p) for p in psns], "dropped.pcap")
        live.wait_for(lambda: len(never_seen(prometheus_alerts(prom_port, "firing"))) == 2, "the alerts to fire")
        firing = prometheus_alerts(prom_port, "firing")
        (meter_alert,) = labels_of(firing, "RocemeterPositionsNeverSeen")
        assert (meter_alert["interface"], meter_alert["observation_point"], meter_alert["job"]) == \
            (link.iface, "7", "meter"), meter_alert
        (col_alert,) = labels_of(firing, "RocemeterReportedPositionsNeverSeen")
        assert (col_alert["observation_domain"], col_alert["observation_point"], col_alert["job"]) == \
            (str(seqm.DOMAIN), "7", "collector"), col_alert
        if hook:
            live.wait_for(lambda: {n for n, _ in hook.alerts("firing")} >= set(NEVER_SEEN),
                          "the webhook to receive the alerts firing", timeout=60)
            (got,) = labels_of(hook.alerts("firing"), "RocemeterPositionsNeverSeen")
            assert got == meter_alert

        # Clean again: once the dropped positions leave the rules' range, both resolve.
        link.send([live.send_only(qp, p) for p in range(100, 150)], "clean2.pcap")
        live.wait_for(lambda: never_seen(prometheus_alerts(prom_port, "firing")) == set(), "the alerts to resolve",
                      timeout=RANGE_S + 60)
        if hook:
            live.wait_for(lambda: {n for n, _ in hook.alerts("resolved")} >= set(NEVER_SEEN),
                          "the webhook to receive the resolutions", timeout=60)
        assert prometheus_value(prom_port, requests) == [147.0]  # 50 + 47 + 50
        assert d.stop() == 0, d.stderr()
    finally:
        for s in reversed(servers):
            s.stop()
        if hook:
            hook.stop()
        col.send_signal(signal.SIGTERM)
        col.wait(timeout=30)
