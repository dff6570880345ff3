# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter report --format html` opened in Debian's chromium, headless.

A real collector fills the stores: hand-written IPFIX Messages
(test_collector.py's builder, from RFC 7011 and [SEQOBS]'s profile) over
TLS 1.3 make epochs with every outcome (complete, incomplete, invalid, open)
and every way an epoch ends (a final record without a reason bit and with
each closure-reason bit, retired without a final, still open), positions
never seen, seen late, repeated and late, report gaps, an epoch without
measurement, a collector resource drop and a refused connection. The store
with the open epoch is a consistent copy (sqlite3's backup) taken while the
collector runs.

chromium loads each page from disk with a virtual time budget and prints the
DOM after the page's script ran; the numbers in its tables must equal what
`report --json` and `report --limits --json` say of the same store (summed
here), and the values the streams were built with. Every console message of
the page fails a test (the page itself logs nothing unless drawing fails;
CSP violations and uncaught exceptions are console messages), and so does
any network request in chromium's NetLog (with the browser's own background
traffic turned off and a proxy that refuses everything). A screenshot of each
page stays in the test's tmp dir; its path is printed. The same rows copied
into a ClickHouse server (tests/lib/clickhouse.py) give the same page data.
"""
import html.parser
import json
import os
import re
import shutil
import sqlite3
import subprocess

import pytest

from clickhouse import server, skip_reason
from test_collector import (BIN, FINAL, GEN_CERTS, GEN_UNVERIFIED, Collector, close_tls, data_msg, report,
                            send_session, templates_msg)

CHROMIUM = shutil.which("chromium")
D3 = "/usr/share/javascript/d3/d3.min.js"
PROFILE, CAPTURE, EXHAUSTION, SERIAL = 0x0002, 0x0004, 0x0008, 0x0010

pytestmark = [pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built"),
              pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make deps)"),
              pytest.mark.skipif(not os.path.exists(D3), reason="libjs-d3 not installed (make deps)")]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run([GEN_CERTS, str(d)], check=True, capture_output=True)
    return str(d)


# ------------------------------------------------------------ the streams

def ep(epoch, qp, rid=1, **kw):
    """A report of epoch `epoch` of connection qp; counters default to a clean epoch of 4 requests."""
    r = report(epoch=epoch, rid=rid, qp=qp, skipped=0, filled=0, expired=0, abandoned=0, pending=0, repeated=0,
               requests=4, late=0)
    r.update(kw)
    return r


# connection (dest QP) -> what its stream says: positions never seen (expired + abandoned), seen late, repeated,
# unclassified late requests
STREAM = {
    0x101: dict(never_seen=3, seen_late=1, repeated=1, unclassified_late=1, requests=9),
    0x102: dict(never_seen=0, seen_late=0, repeated=0, unclassified_late=0, requests=4),
    0x103: dict(never_seen=2, seen_late=0, repeated=0, unclassified_late=0, requests=4),
    0x104: dict(never_seen=0, seen_late=2, repeated=0, unclassified_late=0, requests=4),
    0x105: dict(never_seen=0, seen_late=0, repeated=2, unclassified_late=0, requests=6),
    0x301: dict(never_seen=0, pending=1, requests=3),
}


def full_streams(c):
    """Every outcome and closure; returns the path of a consistent copy taken while an epoch is still open."""
    fin = GEN_UNVERIFIED | FINAL
    closed = [
        # complete, closed: 2 expired + 1 abandoned, 1 filled, 1 repeated, 1 late
        ep(1, 0x101, 1, skipped=3, filled=1, expired=1, pending=1, repeated=1, requests=5),
        ep(1, 0x101, 2, skipped=4, filled=1, expired=2, abandoned=1, repeated=1, late=1, requests=9, flags=fin,
           end=1700000000900),
        ep(2, 0x102, flags=fin | PROFILE),
        ep(3, 0x103, skipped=2, expired=2, flags=fin | CAPTURE, start=1700000300000, end=1700000330000),
        ep(4, 0x104, skipped=2, filled=2, flags=fin | EXHAUSTION, start=1700000600000, end=1700000600100),
        ep(5, 0x105, repeated=2, requests=6, flags=fin | SERIAL, start=1700000900000, end=1700000950000),
    ]
    others = [
        # incomplete: reports 2 and 4 only (a missing initial report and a gap), then no final
        dict(ep(6, 0x106, 2, skipped=1, expired=1, requests=5), obs=8),
        dict(ep(6, 0x106, 4, skipped=1, expired=1, requests=7, end=1700000000800), obs=8),
        # invalid: skipped != filled + expired + abandoned + pending
        ep(7, 0x107), dict(ep(7, 0x107, 2, requests=6), skipped=9),
        # an unknown flag bit: kept raw, no measurement
        ep(8, 0x108, flags=GEN_UNVERIFIED | 0x0040),
    ]
    send_session(c, templates_msg(), data_msg(*closed))
    send_session(c, templates_msg(), data_msg(*others))
    # more epochs than --max-epochs: collector resource drops
    send_session(c, templates_msg(), data_msg(*[ep(e, 0x200 + e) for e in range(1, 9)]))
    c.wait_ended(3)
    c.wait_for(lambda: c.query("SELECT * FROM drops"), "the resource drops stored")
    try:
        s = c.connect("wrongname")
        s.sendall(templates_msg())
        s.recv(1)
        close_tls(s)
    except OSError:
        pass
    c.wait_for(lambda: c.query("SELECT * FROM connections"), "the refused connection counted")
    s = c.connect()
    s.sendall(templates_msg() + data_msg(ep(1, 0x301, skipped=1, pending=1, requests=3)))
    c.wait_for(lambda: c.query("SELECT id FROM epochs WHERE dest_qp = ?", 0x301), "the open epoch stored")
    snap = c.db + ".open.db"
    src, dst = sqlite3.connect(c.db), sqlite3.connect(snap)
    src.backup(dst)
    src.close()
    dst.close()
    close_tls(s)
    return snap


@pytest.fixture(scope="module")
def stores(tmp_path_factory, pki):
    """name -> SQLite store: empty, one epoch, full (every outcome and closure)."""
    out = {}
    d = tmp_path_factory.mktemp("stores")
    empty = str(d / "empty.db")
    subprocess.run([BIN, "collect", "--db", empty, "--store-init"], check=True, capture_output=True)
    out["empty"] = empty
    c = Collector(tmp_path_factory.mktemp("one"), pki)
    try:
        send_session(c, templates_msg(), data_msg(ep(1, 0x77, skipped=2, filled=1, expired=1, requests=6,
                                                     flags=GEN_UNVERIFIED | FINAL)))
        c.wait_ended(1)
    finally:
        assert c.stop() == 0
    out["one"] = c.db
    c = Collector(tmp_path_factory.mktemp("full"), pki, "--max-epochs", "6")
    try:
        out["full"] = full_streams(c)
    finally:
        assert c.stop() == 0
    return out


# ------------------------------------------------------------ the browser

class Dom(html.parser.HTMLParser):
    """The tables of the rendered page: per table id, its rows as (attributes, {data-k: text}, [texts])."""

    def __init__(self):
        super().__init__()
        self.tables, self.attrs, self.stack = {}, {}, []
        self.table = self.row = self.cell = None
        self.chart = self.group = self.legend = None
        self.rects = {}    # (chart div id, data-conn) -> [rect attributes]
        self.legends = {}  # legend div id -> [(style of its <i>, text)]

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.attrs[a["id"]] = a
        if tag == "div" and a.get("id"):
            self.chart = a["id"]
            if a.get("class") == "legend":
                self.legends[a["id"]] = []
        elif tag == "g" and "data-conn" in a:
            self.group = a["data-conn"]
        elif tag == "rect" and self.group:
            self.rects.setdefault((self.chart, self.group), []).append(a)
        elif tag == "i" and self.chart in self.legends:
            self.legend = [a.get("style", ""), ""]
            self.legends[self.chart].append(self.legend)
        if tag == "table":
            self.table = a.get("id") or a.get("data-k") or "?"
            self.tables.setdefault(self.table, [])
        elif tag == "tr" and self.table:
            self.row = (a, {}, [])
            self.tables[self.table].append(self.row)
        elif tag in ("td", "th") and self.row is not None:
            self.cell = [a.get("data-k"), ""]
        elif tag == "p" and a.get("id"):
            self.stack.append([a["id"], ""])

    def handle_data(self, data):
        if self.legend is not None:
            self.legend[1] += data
        if self.cell is not None:
            self.cell[1] += data
        for s in self.stack:
            s[1] += data

    def handle_endtag(self, tag):
        if tag == "span":
            self.legend = None
        elif tag == "g":
            self.group = None
        if tag in ("td", "th") and self.cell is not None:
            k, text = self.cell
            self.row[2].append(text)
            if k:
                self.row[1][k] = text
            self.cell = None
        elif tag == "tr":
            self.row = None
        elif tag == "table":
            self.table = None
        elif tag == "p" and self.stack:
            k, text = self.stack.pop()
            self.attrs.setdefault(k, {})["text"] = text


def number(text):
    assert re.fullmatch(r"[0-9][0-9,]*", text), text
    return int(text.replace(",", ""))


BROWSER_QUIET = ["--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--disable-default-apps", "--disable-domain-reliability",
                 "--disable-client-side-phishing-detection", "--disable-features=Translate,OptimizationHints",
                 "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
                 "--host-resolver-rules=MAP * ~NOTFOUND"]


def chromium(page, tmp, *extra):
    """Load page in headless chromium; (dom text, console messages of the page, URLs requested, stderr)."""
    prof, net = os.path.join(tmp, "profile"), os.path.join(tmp, "netlog.json")
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + prof,
                        "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--log-net-log=" + net,
                        *BROWSER_QUIET, *extra, "file://" + page], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    console = [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
    log = json.load(open(net))
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    # the page's requests: the browser's own (update checks and the like, refused by the proxy) have no origin
    urls = sorted({e["params"]["url"] for e in log["events"]
                   if types.get(e["type"]) == "URL_REQUEST_START_JOB" and "url" in e.get("params", {})
                   and e["params"].get("initiator") != "not an origin"})
    return p.stdout, console, urls, p.stderr


def render(page, tmp):
    """The page's DOM after its script ran, with the checks every page must pass; a screenshot is kept."""
    os.makedirs(tmp, exist_ok=True)
    dom, console, urls, err = chromium(page, os.path.join(tmp, "dom"), "--dump-dom")
    assert console == [], console
    assert urls == [], urls
    shot = os.path.join(tmp, "page.png")
    chromium(page, os.path.join(tmp, "shot"), "--screenshot=" + shot, "--window-size=1500,2600",
             "--hide-scrollbars")
    assert open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    print("screenshot:", shot)
    d = Dom()
    d.feed(dom)
    assert d.attrs["rendered"].get("data-done") == "1", d.attrs.get("error")
    assert not d.attrs["error"].get("text", "").strip(), d.attrs["error"]
    return d


def write_html(db, out, *args, env=None):
    p = subprocess.run([BIN, "report", "--db", db, "--format", "html", "--output", out, *args],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    return out


def report_json(db, *args):
    p = subprocess.run([BIN, "report", "--db", db, "--json", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


def limits_json(db):
    p = subprocess.run([BIN, "report", "--db", db, "--limits", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


# ------------------------------------------------------------ what report --json says

COUNTERS = ("requests", "never_seen", "expired", "abandoned", "seen_late", "repeated", "unclassified_late", "pending")
# the kinds of an epoch's health ([SEQOBS]'s words; clean: none of them)
KINDS = ("never_seen", "pending", "seen_late", "repeated", "unclassified_late")


def counters(e):
    o = e["observed"]
    if o is None:
        return dict.fromkeys(COUNTERS, 0)
    return dict(requests=o["requestPacketTotalCount"],
                never_seen=o["expiredPsnTotalCount"] + o["abandonedPsnTotalCount"],
                expired=o["expiredPsnTotalCount"], abandoned=o["abandonedPsnTotalCount"],
                seen_late=o["filledPsnTotalCount"], repeated=o["repeatedPsnTotalCount"],
                unclassified_late=o["unclassifiedLatePacketTotalCount"], pending=o["pendingPsnCount"])


def conn_key(e):
    k = e["key"]
    src = k.get("sourceIPv4Address", k.get("sourceIPv6Address"))
    dst = k.get("destinationIPv4Address", k.get("destinationIPv6Address"))
    return f'{k["observationPointId"]}|{src}|{dst}|0x{k["rdmaDestinationQP"]:06x}|{k["rdmaPartitionKey"]}'


# [SEQOBS] "Defined Masks": the closure reasons, by their flag names
REASONS = ("profileViolation", "captureDiscontinuity", "stateExhaustion", "serialDiscontinuity")


def reasons_of(epochs):
    """The closure reasons some epoch's flags carry: the page's closure columns."""
    return [r for r in REASONS if any(r in e["qualifications"]["flag_names"] for e in epochs)]


def expected(epochs):
    """Totals and per-connection sums of report --json's epochs (with the epochs closed with each closure
    reason that occurs, and with any: "closed")."""
    tot = dict.fromkeys(COUNTERS, 0)
    conns, seen = {}, reasons_of(epochs)
    for e in epochs:
        c = counters(e)
        row = conns.setdefault(conn_key(e), dict(dict.fromkeys(COUNTERS + tuple(seen), 0), epochs=0, not_clean=0))
        row["epochs"] += 1
        row["not_clean"] += e["observed"] is not None and any(c[k] for k in KINDS)
        for k in COUNTERS:
            row[k] += c[k]
            tot[k] += c[k]
        for r in seen:
            row[r] += r in e["qualifications"]["flag_names"]
    tot["epochs"] = len(epochs)
    tot["measured"] = sum(e["observed"] is not None for e in epochs)
    return tot, conns


def closed(epochs):
    """Per connection: its epochs closed with any closure reason."""
    n = {}
    for e in epochs:
        n[conn_key(e)] = n.get(conn_key(e), 0) + any(r in e["qualifications"]["flag_names"] for r in REASONS)
    return n


def assert_page_equals_json(d, epochs, limits):
    tot, conns = expected(epochs)
    cells = d.tables["totals"][1][1]
    assert {k: number(v) for k, v in cells.items()} == tot
    kinds = {k: number(v) for k, v in d.tables["kinds"][1][1].items()}
    measured = [counters(e) for e in epochs if e["observed"] is not None]
    assert kinds == {"epochs_clean": sum(not any(c[k] for k in KINDS) for c in measured),
                     **{"epochs_" + k: sum(c[k] > 0 for c in measured) for k in KINDS}}
    # the epochs closed with each closure reason, from the epochs' flag names
    assert {k: number(v) for k, v in d.tables["closures"][1][1].items()} == {
        r: sum(r in e["qualifications"]["flag_names"] for e in epochs) for r in REASONS}
    rows = {r[0]["data-conn"]: {k: number(v) for k, v in r[1].items() if k != "outcomes"}
            for r in d.tables["conn-table"][1:]}
    assert rows == conns
    # ordered by positions never seen, then epochs closed with a reason, then the other kinds in order, then
    # requests
    ends = closed(epochs)
    shown = [(number(r[1]["never_seen"]), ends[r[0]["data-conn"]]) + tuple(number(r[1][k]) for k in KINDS[1:] +
             ("requests",)) for r in d.tables["conn-table"][1:]]
    assert shown == sorted(shown, reverse=True)
    # per observation point
    obs, seen = {}, reasons_of(epochs)
    for e in epochs:
        o = obs.setdefault(str(e["key"]["observationPointId"]), dict.fromkeys(
            ("epochs", "requests", "never_seen", "seen_late", "repeated", "unclassified_late") + tuple(seen), 0))
        o["epochs"] += 1
        for k in ("requests", "never_seen", "seen_late", "repeated", "unclassified_late"):
            o[k] += counters(e)[k]
        for r in seen:
            o[r] += r in e["qualifications"]["flag_names"]
    assert {r[0]["data-obs"]: {k: number(v) for k, v in r[1].items()} for r in d.tables["obs-table"][1:]} == obs
    # the collector's panel: from the epochs' coverage and outcomes, and from --limits
    cov = [e["coverage"] for e in epochs]
    coll = {k: number(v) for k, v in d.tables["coll-table"][1][1].items()}
    assert coll == {
        "epochs_without_measurement": sum(e["observed"] is None for e in epochs),
        "invalid_epochs": sum(e["outcome"] == "invalid" for e in epochs),
        "incomplete_epochs": sum(e["outcome"] == "incomplete" for e in epochs),
        "epochs_with_report_gaps": sum(c["missing_reports"] > 0 for c in cov),
        "report_gaps": sum(c["gaps"] for c in cov), "missing_reports": sum(c["missing_reports"] for c in cov),
        "missing_initial": sum(c["missing_initial"] for c in cov),
        "identical_repeats": sum(c["identical_repeats"] for c in cov), "stale": sum(c["stale"] for c in cov),
        "ignored_after_invalid": sum(c["ignored_after_invalid"] for c in cov),
        "unsupported_records": sum(e["qualifications"]["unsupported_records"] for e in epochs)}
    outcomes = {k: number(v) for k, v in d.tables["coll-outcomes"][1][1].items()}
    assert outcomes == {"outcome_" + o: sum(e["outcome"] == o for e in epochs)
                        for o in ("complete", "incomplete", "invalid", "open")}
    drops = {r[2][0]: number(r[2][1]) for r in d.tables.get("drops", [])[1:] if r[2][0] != "none"}
    refused = {r[2][0]: number(r[2][1]) for r in d.tables.get("refused_connections", [])[1:] if r[2][0] != "none"}
    if limits:
        assert drops == limits[0]["drops"]
        assert refused == limits[0]["refused_connections"]
    return rows


# ------------------------------------------------------------ tests

def test_full_store(stores, tmp_path):
    db = stores["full"]
    page = write_html(db, str(tmp_path / "full.html"))
    d = render(page, str(tmp_path))
    epochs = report_json(db)
    # the store has what the test means it to
    assert {e["outcome"] for e in epochs} == {"complete", "incomplete", "invalid", "open"}
    flag_sets = {tuple(e["qualifications"]["flag_names"]) for e in epochs}
    for f in ("profileViolation", "captureDiscontinuity", "stateExhaustion", "serialDiscontinuity"):
        assert any(f in s for s in flag_sets), f
    assert any(e["observed"] is None for e in epochs)
    limits = limits_json(db)
    assert limits[0]["drops"] and limits[0]["refused_connections"]
    rows = assert_page_equals_json(d, epochs, limits)
    # and what the streams were built with
    for qp, want in STREAM.items():
        row = rows[f"7|192.0.2.1|192.0.2.2|0x{qp:06x}|65535"]
        assert {k: row[k] for k in want} == want, hex(qp)
    assert rows["8|192.0.2.1|192.0.2.2|0x000106|65535"]["never_seen"] == 1
    coll = {k: number(v) for k, v in d.tables["coll-table"][1][1].items()}
    assert coll["epochs_with_report_gaps"] == 1 and coll["missing_initial"] == 1 and coll["missing_reports"] == 2
    assert coll["invalid_epochs"] == 1 and coll["epochs_without_measurement"] == 1
    # the top connection is the one with most positions never seen
    assert d.tables["conn-table"][1][0]["data-conn"].endswith("0x000101|65535")


def legend(d, div):
    """Legend name -> its colour (the first #rrggbb of its swatch's style)."""
    return {text.strip(): re.search(r"#[0-9a-f]{6}", style).group(0) for style, text in d.legends[div]}


def test_timeline_colours(stores, tmp_path):
    """Each epoch's bar: filled by its health, outlined by how it ended, as the legends say."""
    d = render(write_html(stores["full"], str(tmp_path / "t.html")), str(tmp_path))
    health, closure = legend(d, "health-legend"), legend(d, "closure-legend")
    assert len(set(health.values())) == len(health) and len(set(closure.values())) == len(closure)
    want = {  # QP -> (health, how it ended), from the streams above
        0x101: ("never seen", "closed"), 0x102: ("clean", "closed: profile violation"),
        0x103: ("never seen", "closed: capture discontinuity"),
        0x104: ("seen late", "closed: state exhaustion (evicted)"),
        0x105: ("repeated", "closed: serial discontinuity"),
        0x106: ("never seen", "retired without a final record"), 0x107: ("clean", "retired without a final record"),
        0x108: ("no measurement", "retired without a final record"), 0x301: ("pending", "open (no final record yet)"),
    }
    for qp, (h, c) in want.items():
        obs = 8 if qp == 0x106 else 7
        bars = d.rects[("timeline-chart", f"{obs}|192.0.2.1|192.0.2.2|0x{qp:06x}|65535")]
        assert [(b["fill"], b["stroke"]) for b in bars] == [(health[h], closure[c])], hex(qp)
        # one epoch: its positions never seen in one cell of the connection's heatmap row, the others empty
        key = f"{obs}|192.0.2.1|192.0.2.2|0x{qp:06x}|65535"
        heat = [r["fill"] != "#f4f4f4" for r in d.rects[("heatmap-chart", key)]]
        assert sum(heat) == (h == "never seen"), hex(qp)


def test_caps_on_a_large_store(tmp_path, pki):
    """More connections than the top, more epochs than a timeline shows, a long time range: capped, and said."""
    c = Collector(tmp_path, pki, "--max-epochs", "2000")
    try:
        reps, e = [], 0
        for k in range(40):  # connection k: k + 1 positions never seen in total, one epoch each ...
            e += 1
            reps.append(ep(e, 0x400 + k, skipped=k + 1, expired=k + 1, flags=GEN_UNVERIFIED | FINAL,
                           start=1700000000000 + k * 1000, end=1700000000000 + k * 1000 + 10))
        for i in range(400):  # ... and the top one 400 more clean epochs over 30 hours
            e += 1
            t = 1700000000000 + i * 270000
            reps.append(ep(e, 0x400 + 39, flags=GEN_UNVERIFIED | FINAL, start=t, end=t + 5))
        for i in range(0, len(reps), 100):
            send_session(c, templates_msg(), data_msg(*reps[i:i + 100]))
        c.wait_ended(len(range(0, len(reps), 100)))
    finally:
        assert c.stop() == 0
    d = render(write_html(c.db, str(tmp_path / "big.html")), str(tmp_path))
    epochs = report_json(c.db)
    assert len(epochs) == 440
    tot, conns = expected(epochs)
    assert {k: number(v) for k, v in d.tables["totals"][1][1].items()} == tot  # every epoch counted
    rows = [r[0]["data-conn"] for r in d.tables["conn-table"][1:]]
    assert len(rows) == 25
    # the 25 with most positions never seen: QPs 0x427 down to 0x40f
    assert rows == [f"7|192.0.2.1|192.0.2.2|0x{0x400 + k:06x}|65535" for k in range(39, 14, -1)]
    top = d.rects[("timeline-chart", rows[0])]
    assert len(top) == 300
    heat = d.rects[("heatmap-chart", rows[0])]
    assert 100 <= len(heat) <= 240
    assert sum(1 for r in heat if r["fill"] != "#f4f4f4") >= 1
    caps = d.attrs["caps"]["text"]
    assert "top 25 of 40 connections" in caps and "last 300 epochs" in caps and "at most 240 buckets" in caps


def test_top(stores, tmp_path):
    """--top N: the N first connections of --summary's order, the totals still of every epoch."""
    db = stores["full"]
    d = render(write_html(db, str(tmp_path / "top.html"), "--top", "3"), str(tmp_path))
    rows = [r[0]["data-conn"] for r in d.tables["conn-table"][1:]]
    assert rows == [f"7|192.0.2.1|192.0.2.2|0x{qp:06x}|65535" for qp in (0x101, 0x103)] + \
        ["8|192.0.2.1|192.0.2.2|0x000106|65535"]  # never seen 3, 2, then 1 (the one with 1 pending has none)
    assert "top 3 of" in d.attrs["caps"]["text"]
    assert {k: number(v) for k, v in d.tables["totals"][1][1].items()} == expected(report_json(db))[0]
    assert {len(d.rects[("timeline-chart", r)]) for r in rows} == {1}


def test_ipv6_and_values_above_2_53(tmp_path, pki):
    """test_clickhouse_report.py's scenario (IPv6, two domains, counters and IDs above 2^63): exact on the page."""
    from test_clickhouse_report import SQLiteCollector, drive
    c = SQLiteCollector(tmp_path, pki, "--max-epochs", "6")
    drive(c)
    d = render(write_html(c.db, str(tmp_path / "big.html")), str(tmp_path / "r"))
    epochs = report_json(c.db)
    assert any(e["observed"] and e["observed"]["requestPacketTotalCount"] > 2**63 for e in epochs)
    assert any("sourceIPv6Address" in e["key"] for e in epochs)
    assert_page_equals_json(d, epochs, limits_json(c.db))


def test_filters_as_report(stores, tmp_path):
    """The page's numbers follow report's filters: --outcome, --connection, --since/--until."""
    db = stores["full"]
    for i, args in enumerate([("--outcome", "complete"), ("--connection", "192.0.2.1,192.0.2.2,0x101"),
                              ("--since", "1700000300000", "--until", "1700000600000")]):
        page = write_html(db, str(tmp_path / f"f{i}.html"), *args)
        d = render(page, str(tmp_path / f"f{i}"))
        epochs = report_json(db, *args)
        assert epochs
        assert_page_equals_json(d, epochs, limits_json(db))


def test_one_epoch(stores, tmp_path):
    d = render(write_html(stores["one"], str(tmp_path / "one.html")), str(tmp_path))
    rows = assert_page_equals_json(d, report_json(stores["one"]), limits_json(stores["one"]))
    assert rows == {"7|192.0.2.1|192.0.2.2|0x000077|65535": dict(
        epochs=1, not_clean=1, requests=6, never_seen=1, expired=1, abandoned=0, seen_late=1, repeated=0,
        unclassified_late=0, pending=0)}


def test_empty_store(stores, tmp_path):
    d = render(write_html(stores["empty"], str(tmp_path / "empty.html")), str(tmp_path))
    assert_page_equals_json(d, [], [])
    assert len(d.tables["conn-table"]) == 1


def test_page_is_self_contained(stores, tmp_path):
    """D3 is inlined, the data is JSON, nothing outside the file is named; the policy allows no request."""
    text = open(write_html(stores["full"], str(tmp_path / "p.html"))).read()
    assert open(D3).read() in text
    assert "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'" in text
    markup = re.sub(r"<script[^>]*>.*?</script>", "", text, flags=re.S)
    assert not re.search(r"(src|href|action)\s*=", markup, re.I)
    data = json.loads(re.search(r'id="rocemeter-data">(.*?)</script>', text, re.S).group(1))
    assert data["connections"]["total"] == len({conn_key(e) for e in report_json(stores["full"])})


def test_harness_catches_errors_and_requests(tmp_path):
    """The checks can fail: a console error, an uncaught exception, a CSP violation and a request are seen."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                   "'none'; script-src 'unsafe-inline'\"></head><body><img src=\"http://192.0.2.9/a.png\">"
                   "<script>console.error('drawing failed'); nosuch();</script></body></html>")
    _, console, urls, _ = chromium(str(bad), str(tmp_path / "a"), "--dump-dom")
    text = "\n".join(console)
    assert "drawing failed" in text and "nosuch" in text and "Content Security Policy" in text
    leaky = tmp_path / "leaky.html"
    leaky.write_text("<!DOCTYPE html><html><body><img src=\"http://192.0.2.9/b.png\"></body></html>")
    _, _, urls, _ = chromium(str(leaky), str(tmp_path / "b"), "--dump-dom")
    assert "http://192.0.2.9/b.png" in urls


def test_missing_d3_is_a_clear_error(stores, tmp_path):
    out = tmp_path / "x.html"
    env = dict(os.environ, ROCEMETER_D3_JS=str(tmp_path / "nosuch.js"))
    p = subprocess.run([BIN, "report", "--db", stores["one"], "--format", "html", "--output", str(out)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 1
    assert "nosuch.js" in p.stderr and "libjs-d3" in p.stderr
    assert not out.exists()


def test_output(stores, tmp_path):
    """'-' is standard output; a page that cannot be written is an error naming the file, and leaves nothing."""
    p = subprocess.run([BIN, "report", "--db", stores["one"], "--format", "html", "--output", "-"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("<!DOCTYPE html>") and p.stdout.rstrip().endswith("</html>")
    bad = str(tmp_path / "nosuch" / "x.html")
    p = subprocess.run([BIN, "report", "--db", stores["one"], "--format", "html", "--output", bad],
                       capture_output=True, text=True)
    assert p.returncode == 1 and bad in p.stderr and "No such file or directory" in p.stderr, p.stderr
    d = tmp_path / "dir"
    d.mkdir()
    p = subprocess.run([BIN, "report", "--db", stores["one"], "--format", "html", "--output", str(d)],
                       capture_output=True, text=True)
    assert p.returncode == 1 and str(d) in p.stderr, p.stderr
    assert os.listdir(d) == [] and sorted(os.listdir(tmp_path)) == ["dir"]


@pytest.mark.parametrize("args,why", [
    (("--format", "html"), "--format html needs --output FILE"),
    (("--output", "x.html"), "--output is for --format html"),
    (("--format", "html", "--output", "x.html", "--limits"), "--limits is text or json"),
    (("--format", "html", "--output", "x.html", "--summary"), "not with --summary"),
    (("--format", "html", "--output", "x.html", "--anomalies"), "not with --anomalies"),
    (("--format", "json", "--top", "3"), "--top counts the lines of --summary"),
])
def test_usage(stores, args, why):
    p = subprocess.run([BIN, "report", "--db", stores["one"], *args], capture_output=True, text=True)
    assert p.returncode == 2 and why in p.stderr, p.stderr


def page_data(path):
    """The JSON document a page draws from, without what names the store and the time it was written."""
    text = open(path).read()
    data = json.loads(re.search(r'id="rocemeter-data">(.*?)</script>', text, re.S).group(1))
    del data["store"], data["generated"]
    for run in data["collector"]["runs"]:
        run.pop("collector_id", None)
    return data


@pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
def test_clickhouse_store_gives_the_same_page(stores, tmp_path):
    """The same epochs in ClickHouse (test_clickhouse_report.py's copy, older versions first) draw the same page."""
    from test_clickhouse_report import copy_store
    db = stores["full"]
    with server(tmp_path / "ch") as ch:
        r = subprocess.run([BIN, "collect", "--store-init", "--store", ch.url, "--store-credentials", ch.credentials],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        copy_store(db, ch, "collector-a")
        for i, args in enumerate([(), ("--outcome", "incomplete"), ("--connection", "192.0.2.1,192.0.2.2,0x101"),
                                  ("--since", "1700000300000", "--collector", "collector-a")]):
            want = write_html(db, str(tmp_path / f"s{i}.html"), *[a for a in args if a != "--collector"
                                                                   and a != "collector-a"])
            got = str(tmp_path / f"c{i}.html")
            p = subprocess.run([BIN, "report", "--store", ch.url, "--store-credentials", ch.credentials,
                                "--format", "html", "--output", got, *args], capture_output=True, text=True)
            assert p.returncode == 0, p.stderr
            got_data = page_data(got)
            assert got_data["filters"].pop("collector", "collector-a") == "collector-a"
            assert got_data == page_data(want), args
        d = render(got, str(tmp_path / "render"))
        assert d.tables["conn-table"][1:]
