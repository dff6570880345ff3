# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter report` where an operator of two switches' mirror copies looks:
mirror loss and the other closure reasons as columns of --summary, rows of
--anomalies and marks of the HTML page, each with the observation point's
name; --observation-point, --reason, the SESSION column; the collector's
configuration as report's default store; the HTML page at 1,400 and 1,920
px in Debian's chromium (labels inside their charts, no horizontal scroll,
a 24-hour UTC time axis).

A real collector fills the store with hand-written IPFIX (test_collector.py's
builder, RFC 7011 and [SEQOBS]'s profile) over TLS 1.3, as one meter with two
ERSPAN sessions would send it: the exporter names observation point 11
"leaf1" and 12 "leaf2" (Options Template 262); at leaf2, 16 of 20 epochs
end with captureDiscontinuity (mirror loss: GRE sequence gaps) and one
position was never seen; at leaf1 one epoch ends with profileViolation. A
second Transport Session starts its epoch IDs at 1 again. Every expected
value below follows from those records, never from report's output.
"""
import csv
import datetime
import io
import json
import os
import re
import shutil
import subprocess

import pytest

from test_collector import (BIN, FINAL, GEN_UNVERIFIED, V6, Collector, data_msg, points_msg, report, send_session,
                            templates_msg)
from test_report_html import CHROMIUM, D3, chromium

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILE, CAPTURE = 0x0002, 0x0004
T0 = int(datetime.datetime(2026, 11, 30, 11, 0, tzinfo=datetime.timezone.utc).timestamp() * 1000)
HOUR = 3600 * 1000
ZERO = dict(skipped=0, filled=0, expired=0, abandoned=0, pending=0, repeated=0, late=0, requests=10)
A = dict(src=bytes([192, 0, 2, 1]), dst=bytes([192, 0, 2, 2]), qp=0x123)
A_TEXT = "192.0.2.1,192.0.2.2,0x123"
B6 = dict(src=bytes.fromhex("fd00000100020003000400050006ab11"), dst=bytes.fromhex("fd00000100020003000400050006ab22"),
          qp=0xabcdef)
B_TEXT = "fd00:1:2:3:4:5:6:ab11,fd00:1:2:3:4:5:6:ab22,0xabcdef"
LEAF1, LEAF2 = 11, 12

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run([os.path.join(ROOT, "scripts", "gen-certs"), str(d)], check=True, capture_output=True)
    return str(d)


def epoch(n, obs, conn, i, flags=0, length=60000, **kw):
    """Epoch n of conn at obs, the i-th of its connection: a final report of 10 requests, clean unless kw says,
    15 minutes apart from 11:00 UTC (so the page's time axis runs past 13:00), length ms long."""
    start = T0 + i * HOUR // 4
    r = report(epoch=n, rid=1, obs=obs, start=start, end=start + length, **dict(ZERO, **kw), **conn)
    r["flags"] = GEN_UNVERIFIED | FINAL | flags
    return r


def switch_records():
    """Session 1: (IPv4 records, IPv6 records), epoch IDs increasing in the order sent. leaf2: 16 of its 20
    epochs closed by captureDiscontinuity, one position never seen in another; leaf1: one epoch closed by
    profileViolation."""
    v4, v6 = [], []
    for i in range(10):
        v4.append(epoch(len(v4) + 1, LEAF1, A, i))
        v4.append(epoch(len(v4) + 1, LEAF2, A, i, flags=CAPTURE if i < 8 else 0,
                        **(dict(skipped=1, expired=1) if i == 8 else {})))
    for i in range(10):
        v6.append(epoch(21 + len(v6), LEAF1, B6, i, flags=PROFILE if i == 9 else 0))
        v6.append(epoch(21 + len(v6), LEAF2, B6, i, flags=CAPTURE if i < 8 else 0))
    return v4, v6


@pytest.fixture(scope="module")
def store(tmp_path_factory, pki):
    c = Collector(tmp_path_factory.mktemp("collector"), pki)
    try:
        v4, v6 = switch_records()
        send_session(c, templates_msg(), templates_msg(V6, 300), points_msg([(LEAF1, b"leaf1"), (LEAF2, b"leaf2")]),
                     data_msg(*v4, seq=2), data_msg(*v6, tid=300, fields=V6, seq=2 + len(v4)))
        # a second Transport Session: its epoch IDs start at 1 again
        send_session(c, templates_msg(), data_msg(epoch(1, LEAF1, A, 10), epoch(2, LEAF1, A, 11, length=66000)))
        c.wait_ended(2)
    finally:
        assert c.stop() == 0
    return c.db


def report_run(db, *args, env=None):
    return subprocess.run([BIN, "report", "--db", db, *args], capture_output=True, text=True, timeout=60, env=env)


def out(db, *args):
    p = report_run(db, *args)
    assert p.returncode == 0, p.stderr
    return p.stdout


def header_cells(text, names):
    """A text table as dicts: its header must be names, one space or more apart; a cell is one word but OP (the
    point, then its name: the words before the connection, which holds commas) and the last column (free text)."""
    lines = text.splitlines()
    assert re.fullmatch(" *" + " +".join(re.escape(n) for n in names), lines[0]), lines[0]
    rows = []
    for line in lines[1:]:
        words, cells = line.split(), {}
        for n in names:
            if n == names[-1]:
                k = len(words)
            elif n == "OP":
                k = next(i for i, w in enumerate(words) if "," in w)
            else:
                k = 1
            cells[n], words = " ".join(words[:k]), words[k:]
        rows.append(cells)
    return rows


SUMMARY = ["OP", "CONNECTION", "EPOCHS", "REQUESTS", "NEVER SEEN", "PENDING", "SEEN LATE", "REPEATED", "UNCL LATE"]
EPOCHS = ["FLOW END", "SESSION", "EPOCH", "OUTCOME", "OP", "CONNECTION", "REQUESTS", "SEQUENCE"]


# ------------------------------------------------------------ --summary

def test_summary_shows_capture_discontinuity_with_the_point_name(store):
    """16 of leaf2's 20 epochs closed with captureDiscontinuity: a column of --summary (CAPTURE DISC), and
    leaf1's profile violation one (VIOLATION); OP shows the point's name as the epochs' table does. Before,
    the summary had no such column and showed "12" where the table showed "12 leaf2"."""
    rows = header_cells(out(store, "--summary"), SUMMARY + ["VIOLATION", "CAPTURE DISC", "NOT COMPLETE"])
    got = [(r["OP"], r["CONNECTION"], r["EPOCHS"], r["NEVER SEEN"], r["VIOLATION"], r["CAPTURE DISC"]) for r in rows]
    # never seen first (leaf2's A: 1), then most epochs closed with a reason (leaf2's B: 8, leaf1's B: 1)
    assert got == [("12 leaf2", A_TEXT, "10", "1", "-", "8"), ("12 leaf2", B_TEXT, "10", "-", "-", "8"),
                   ("11 leaf1", B_TEXT, "10", "-", "1", "-"), ("11 leaf1", A_TEXT, "12", "-", "-", "-")]
    # the columns of the reasons that occur only
    assert header_cells(out(store, "--summary", "--observation-point", "leaf1", "--connection", A_TEXT),
                        SUMMARY + ["NOT COMPLETE"])


def test_summary_json_and_csv_count_every_closure_reason(store):
    rows = [json.loads(x) for x in out(store, "--summary", "--json").splitlines()]
    got = {(r["key"]["observationPointId"], r["observation_point_name"], r["key"]["rdmaDestinationQP"]):
           r["closures"] for r in rows}
    none = dict(profileViolation=0, captureDiscontinuity=0, stateExhaustion=0, serialDiscontinuity=0)
    assert got == {(12, "leaf2", 0x123): dict(none, captureDiscontinuity=8),
                   (12, "leaf2", 0xabcdef): dict(none, captureDiscontinuity=8),
                   (11, "leaf1", 0xabcdef): dict(none, profileViolation=1), (11, "leaf1", 0x123): none}
    recs = list(csv.DictReader(io.StringIO(out(store, "--summary", "--format", "csv"))))
    assert [(r["observation_point_name"], r["captureDiscontinuity"], r["profileViolation"]) for r in recs] == [
        ("leaf2", "8", "0"), ("leaf2", "8", "0"), ("leaf1", "0", "1"), ("leaf1", "0", "0")]


# ------------------------------------------------------------ --anomalies, --reason, --observation-point

def test_anomalies_keep_epochs_closed_with_a_reason(store):
    """--anomalies skipped the 16 epochs closed with captureDiscontinuity (their counters are clean): now they
    are rows, each with its point's name and the reason in SEQUENCE; with the never-seen one and the profile
    violation, 18 rows."""
    rows = header_cells(out(store, "--anomalies"), EPOCHS)
    assert len(rows) == 18
    capture = [r for r in rows if r["SEQUENCE"] == "clean; closed: capture discontinuity"]
    assert len(capture) == 16 and {r["OP"] for r in capture} == {"12 leaf2"}
    assert [r["SEQUENCE"] for r in rows if r["OP"] == "11 leaf1"] == ["clean; closed: profile violation"]
    assert [r["SEQUENCE"] for r in rows if "never" in r["SEQUENCE"]] == ["never seen 1"]


def test_reason_filter(store):
    epochs = [json.loads(x) for x in out(store, "--json", "--reason", "captureDiscontinuity").splitlines()]
    assert len(epochs) == 16
    assert all("captureDiscontinuity" in e["qualifications"]["flag_names"] for e in epochs)
    assert {e["observation_point_name"] for e in epochs} == {"leaf2"}
    # the name as [SEQOBS] spells it, case aside
    assert len(out(store, "--reason", "PROFILEVIOLATION", "--json").splitlines()) == 1
    assert out(store, "--reason", "stateExhaustion") == ""
    p = report_run(store, "--limits", "--reason", "captureDiscontinuity")
    assert p.returncode == 2 and "--limits shows the collector's limits: not with --reason" in p.stderr, p.stderr
    p = report_run(store, "--reason", "mirror-loss")
    assert p.returncode == 2
    assert p.stderr == ("rocemeter report: --reason: 'mirror-loss' is not a closure reason: profileViolation, "
                        "captureDiscontinuity, stateExhaustion or serialDiscontinuity\n"), p.stderr


def test_observation_point_filter(store):
    """By name, by ID, by DOMAIN/ID: the same epochs; an unknown point is a usage error listing the known ones."""
    by_name = out(store, "--json", "--observation-point", "leaf2")
    assert len(by_name.splitlines()) == 20
    assert by_name == out(store, "--json", "--observation-point", "12") == out(store, "--json",
                                                                                "--observation-point", "0/12")
    assert {json.loads(x)["key"]["observationPointId"] for x in by_name.splitlines()} == {LEAF2}
    assert len(out(store, "--json", "--observation-point", "leaf1").splitlines()) == 22
    # with the other filters: a known point without a matching epoch is nothing to report
    assert out(store, "--observation-point", "leaf1", "--reason", "captureDiscontinuity") == ""
    for bad in ("leaf3", "13", "1/12"):
        p = report_run(store, "--observation-point", bad)
        assert p.returncode == 2, (bad, p.stderr)
        assert p.stderr == (f"rocemeter report: --observation-point: '{bad}' is no observation point of the store; "
                            "known: 11 leaf1, 12 leaf2\n"), p.stderr
        assert p.stdout == ""


def test_session_column(store):
    """EPOCH restarts at 1 in each Transport Session: SESSION tells epoch 1 of session 1 from epoch 1 of 2."""
    rows = header_cells(out(store, "--observation-point", "leaf1", "--connection", A_TEXT), EPOCHS)
    assert [(r["SESSION"], r["EPOCH"]) for r in rows] == [("1", str(1 + 2 * i)) for i in range(10)] + [
        ("2", "1"), ("2", "2")]


# ------------------------------------------------------------ the collector's configuration

def collect_conf(path, store_line):
    path.write_text("[collect]\nlisten = 127.0.0.1:4740\n" + store_line + "\ncert = /nonexistent/c.pem\n"
                    "key = /nonexistent/c.key\nca = /nonexistent/ca.pem\npeer_name = exporter.example.net\n")
    return path


def test_report_reads_the_collectors_configuration(store, tmp_path):
    """With no option, report reads the store of the package's /etc/rocemeter/collect.conf (here under
    ROCEMETER_SYSCONFDIR); --config FILE names another; --store overrides it. Before, report without
    --store printed its usage and exited 2."""
    etc = tmp_path / "etc"
    (etc / "rocemeter").mkdir(parents=True)
    collect_conf(etc / "rocemeter" / "collect.conf", f"store = sqlite:{store}")
    env = dict(os.environ, ROCEMETER_SYSCONFDIR=str(etc))
    want = out(store, "--summary")
    p = subprocess.run([BIN, "report", "--summary"], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout == want, p.stderr
    other = collect_conf(tmp_path / "other.conf", f"db = {store}")
    p = subprocess.run([BIN, "report", "--config", str(other), "--summary"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == want, p.stderr
    # --store over the file's
    empty = tmp_path / "empty.db"
    subprocess.run([BIN, "collect", "--db", str(empty), "--store-init"], check=True, capture_output=True)
    p = subprocess.run([BIN, "report", "--config", str(other), "--store", f"sqlite:{empty}"], capture_output=True,
                       text=True)
    assert p.returncode == 0 and p.stdout == "", p.stderr


def test_report_without_a_store_or_configuration(tmp_path):
    env = dict(os.environ, ROCEMETER_SYSCONFDIR=str(tmp_path))
    p = subprocess.run([BIN, "report"], capture_output=True, text=True, env=env)
    assert p.returncode == 2
    conf = tmp_path / "rocemeter" / "collect.conf"
    assert p.stderr == ("rocemeter report: no store: give --store STORE (or --db FILE), or --config FILE, the "
                        f"collector's configuration ({conf}: No such file or directory)\n"), p.stderr
    bad = tmp_path / "bad.conf"
    bad.write_text("[collect]\nlisten = 127.0.0.1:4740\n")
    p = subprocess.run([BIN, "report", "--config", str(bad)], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.startswith(f"rocemeter report: --config: {bad}: [collect] "), p.stderr
    p = subprocess.run([BIN, "report", "--config", str(tmp_path / "none.conf")], capture_output=True, text=True)
    assert p.returncode == 2 and "none.conf" in p.stderr, p.stderr


def test_help_names_the_new_options():
    h = subprocess.run([BIN, "report", "--help"], capture_output=True, text=True).stdout
    for opt in ("--config FILE", "--observation-point ID|NAME", "--reason NAME"):
        assert opt in h, opt
    assert "/etc/rocemeter/collect.conf" in h


# ------------------------------------------------------------ the HTML page in chromium

# Run in the page after its own script: what an operator would see cut, scroll or misread, as JSON in the DOM.
LAYOUT_JS = r"""
<script>
(function () {
  var vw = window.innerWidth, out = {vw: vw, scroll: document.documentElement.scrollWidth, cut: [], ticks: [],
    tables: [], labels: [], marks: {}};
  function first(t) { for (var n = t.firstChild; n; n = n.nextSibling) if (n.nodeType === 3) return n.nodeValue;
    return ""; }
  Array.prototype.forEach.call(document.querySelectorAll("svg"), function (svg) {
    var b = svg.getBoundingClientRect();
    Array.prototype.forEach.call(svg.querySelectorAll("text"), function (t) {
      var r = t.getBoundingClientRect();
      if (!r.width) return;
      if (r.left < b.left - 0.5 || r.right > b.right + 0.5 || r.top < b.top - 0.5 || r.bottom > b.bottom + 0.5 ||
          r.left < 0 || r.right > vw)
        out.cut.push([first(t), r.left, r.right, b.left, b.right]);
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("g.axis.time text"), function (t) {
    out.ticks.push(t.textContent); });
  out.counts = Array.prototype.map.call(document.querySelectorAll("g.axis:not(.time) text"), function (t) {
    return t.textContent; });
  out.reasons = document.getElementById("coll-reasons").textContent;
  Array.prototype.forEach.call(document.querySelectorAll("table"), function (t) {
    out.tables.push([t.id || t.getAttribute("data-k"), t.getBoundingClientRect().right]); });
  Array.prototype.forEach.call(document.querySelectorAll("#timeline-chart text.label, #heatmap-chart text.label"),
    function (t) { out.labels.push(first(t)); });
  Array.prototype.forEach.call(document.querySelectorAll("#timeline-chart path.mark"), function (m) {
    var k = m.parentNode.getAttribute("data-conn") + " " + m.getAttribute("data-reason");
    out.marks[k] = (out.marks[k] || 0) + 1; });
  out.bars = Array.prototype.map.call(document.querySelectorAll("#timeline-chart rect"), function (r) {
    return [r.parentNode.getAttribute("data-conn"), r.getAttribute("fill"), r.getBoundingClientRect().width]; });
  var pre = document.createElement("pre");
  pre.id = "layout-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""

SIZES = [(1400, 900), (1920, 1080)]
TICK = re.compile(r"\d\d:\d\d(:\d\d(\.\d{3})?)?|[A-Z][a-z]{2} \d\d|\d{4}")


def layout(page, tmp, width, height, shot=None):
    """The page at width x height in headless chromium: LAYOUT_JS's measurements. With shot, a screenshot of the
    page at that width is kept there."""
    probe = os.path.join(tmp, "probe-%d.html" % width)
    text = open(page).read()
    with open(probe, "w") as f:
        f.write(text.replace("</body>", LAYOUT_JS + "</body>"))
    dom, console, urls, _ = chromium(probe, os.path.join(tmp, "dom-%d" % width), "--dump-dom",
                                     "--window-size=%d,%d" % (width, height))
    assert console == [] and urls == [], (console, urls)
    assert 'data-done="1"' in dom
    m = json.loads(re.search(r'<pre id="layout-check">(.*?)</pre>', dom, re.S).group(1).replace("&quot;", '"')
                   .replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    assert m["vw"] == width
    if shot:
        os.makedirs(os.path.dirname(shot), exist_ok=True)
        chromium(page, os.path.join(tmp, "shot-%d" % width), "--screenshot=" + shot,
                 "--window-size=%d,%d" % (width, 3000), "--hide-scrollbars")
        assert open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
        print("screenshot:", shot)
    return m


def assert_readable(m, width, sources):
    """Nothing cut, no horizontal scroll, no table wider than the window, every row label starting with its
    connection's whole source address, a 24-hour UTC time axis."""
    assert m["cut"] == [], m["cut"][:5]
    assert m["scroll"] <= width, m["scroll"]
    assert all(right <= width for _, right in m["tables"]), m["tables"]
    assert m["labels"] and all(any(x.startswith(s + " \u2192 ") for s in sources) for x in m["labels"]), m["labels"]
    assert m["ticks"] and all(TICK.fullmatch(t) for t in m["ticks"]), m["ticks"]
    assert not any(re.search(r"AM|PM", t) for t in m["ticks"])
    # counts of epochs and positions on the axes: whole numbers (before: SI fractions, "200m")
    assert m["counts"] and all(re.fullmatch(r"\d{1,3}(,\d{3})*", t) for t in m["counts"]), m["counts"]


def write_page(db, path, *args):
    p = report_run(db, "--format", "html", "--output", str(path), *args)
    assert p.returncode == 0, p.stderr
    return str(path)


@pytest.mark.skipif(CHROMIUM is None or not os.path.exists(D3), reason="chromium or libjs-d3 not installed (make deps)")
@pytest.mark.parametrize("width,height", SIZES)
def test_two_switch_page(store, tmp_path, width, height):
    """The page of the two switches at 1,400 x 900 and 1,920 x 1,080: before, the labels were cut on the left
    (a 330 px margin for labels of 480 px: the source address lost), the connections' table was wider than
    the window, the time axis said "01 PM" or "01:15" on a 12-hour clock, and leaf2's 16 epochs closed with
    captureDiscontinuity were a 2 px outline. Now each of them has a mark, the times past noon read 13:00 and
    later, and the point's table has the closure reasons' columns with the point's name."""
    page = write_page(store, tmp_path / "switches.html")
    m = layout(page, str(tmp_path), width, height,
               shot=os.path.join(ROOT, "build", "report-two-switches-%d.png" % width))
    assert_readable(m, width, ["192.0.2.1", "fd00:1:2:3:4:5:6:ab11"])
    assert m["reasons"] == "none"  # the collector recorded no reason: said, not an empty table
    assert any(int(t[:2]) >= 13 for t in m["ticks"] if re.fullmatch(r"\d\d:\d\d", t)), m["ticks"]
    assert m["marks"] == {f"{LEAF2}|192.0.2.1|192.0.2.2|0x000123|65535 captureDiscontinuity": 8,
                          f"{LEAF2}|fd00:1:2:3:4:5:6:ab11|fd00:1:2:3:4:5:6:ab22|0xabcdef|65535 captureDiscontinuity": 8,
                          f"{LEAF1}|fd00:1:2:3:4:5:6:ab11|fd00:1:2:3:4:5:6:ab22|0xabcdef|65535 profileViolation": 1}
    # an epoch that is not clean at least 6 px wide
    never = [b for b in m["bars"] if b[1] == "#d62728"]
    assert len(never) == 1 and never[0][2] >= 6
    data = json.loads(re.search(r'id="rocemeter-data">(.*?)</script>', open(page).read(), re.S).group(1))
    points = {p["observation_point_name"]: p["closures"]["captureDiscontinuity"]
              for p in data["observation_points"]["rows"]}
    assert points == {"leaf1": 0, "leaf2": 16}


@pytest.mark.skipif(CHROMIUM is None or not os.path.exists(D3), reason="chromium or libjs-d3 not installed (make deps)")
def test_page_of_one_minute(store, tmp_path):
    """One epoch ending at 13:46:06: time ticks with seconds and milliseconds, the widest there are, from
    the first bucket's start ("13:46:06", at the very left of each chart) inside every chart (before, a
    chart with a narrow count axis cut that first tick on the left: 18 px of margin for half of 45)."""
    page = write_page(store, tmp_path / "minute.html", "--observation-point", "leaf1", "--since",
                      str(T0 + 11 * HOUR // 4 + 1000), "--connection", A_TEXT)
    m = layout(page, str(tmp_path), 1400, 900)
    assert_readable(m, 1400, ["192.0.2.1"])
    assert "13:46:06" in m["ticks"], m["ticks"]


def demo_store(tmp_path, pki):
    """The demo's captures (scripts/demo: the NCCL captures, one with requests dropped, swapped and duplicated
    by scripts/demo-gaps, the rping capture and the IPv6 copy of scripts/demo-ipv6) replayed one by one with
    the demo's [meter] settings and a derived-looking 19-digit observation point, each replay's --ipfix-out
    bytes sent to a collector as one Transport Session: the demo's store without its namespaces."""
    pcaps = os.path.join(ROOT, "data", "pcaps")
    node0 = os.path.join(pcaps, "linlinw5_nccl_nccl_node0.pcap")
    gaps, ipv6 = str(tmp_path / "gaps.pcap"), str(tmp_path / "ipv6.pcap")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "demo-gaps"), node0, gaps], check=True,
                   capture_output=True)
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "demo-ipv6"), node0, ipv6], check=True,
                   capture_output=True)
    caps = [gaps] + sorted(os.path.join(pcaps, f) for f in os.listdir(pcaps)
                           if f.startswith("linlinw5_nccl_") and f != "linlinw5_nccl_nccl_node0.pcap")
    caps += [os.path.join(pcaps, "linlinw5_rping.pcap"), ipv6]
    conf = tmp_path / "meter.conf"
    conf.write_text("[meter]\nwindow = 1024\nprovision_all = yes\nidle_timeout_ms = 1500\n"
                    "observation_point_id = 7948299746425149258\n")
    c = Collector(tmp_path / "collector", pki, plain=True)
    try:
        for i, cap in enumerate(caps):
            ipfix = tmp_path / ("demo%d.ipfix" % i)
            subprocess.run([BIN, "replay", "--config", str(conf), "--ipfix-out", str(ipfix), cap], check=True,
                           capture_output=True)
            s = c.connect("plain")
            s.sendall(ipfix.read_bytes())
            s.close()
        c.wait_ended(len(caps))
    finally:
        assert c.stop() == 0
    return c.db


@pytest.mark.skipif(CHROMIUM is None or not os.path.exists(D3), reason="chromium or libjs-d3 not installed (make deps)")
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (replay runs the meter's BPF program)")
def test_demo_page(tmp_path, pki):
    """The demo's page at both sizes: IPv4 and IPv6 connections at a derived 19-digit observation point."""
    (tmp_path / "collector").mkdir()
    db = demo_store(tmp_path, pki)
    page = write_page(db, tmp_path / "demo.html")
    sources = {json.loads(x)["key"].get("sourceIPv4Address") or json.loads(x)["key"]["sourceIPv6Address"]
               for x in out(db, "--json").splitlines()}
    assert any(":" in s for s in sources)
    for width, height in SIZES:
        m = layout(page, str(tmp_path), width, height,
                   shot=os.path.join(ROOT, "build", "report-demo-%d.png" % width) if width == 1400 else None)
        assert_readable(m, width, sorted(sources))
