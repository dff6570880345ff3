# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter collect` on a hostile network: availability and bounded
resources (docs/collector.md "Collector limits"; [SEQOBS] "Collector
Processing": collectors MUST set finite resource limits, "Security
Considerations").

Real peers: Python's ssl module and `openssl s_client` with the test PKI of
scripts/gen-certs, raw TCP sockets for the unauthenticated ones, a veth
pair into a network namespace for a peer that vanishes. IPFIX Messages are
hand-written with the helpers of test_collector.py (struct.pack from RFC 7011
and [SEQOBS]). Expected numbers come from the documented rules: the bytes
charged per object are read from docs/collector.md, never from the
collector. Waits are bounded (WAIT) and never timing assertions; the one
bound on SIGTERM under load is a generous liveness check.
"""
import os
import re
import select
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import threading
import time

import pytest

from procs import sh  # tests/lib
from test_collector import (BIN, COLLECTOR, EXPORTER, V4, WAIT, Collector, close_tls, data_msg, epochs, ipfix_set,
                            later, message, raw, report, spec, template_record, templates_msg)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "collector.md")

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run([os.path.join(ROOT, "scripts", "gen-certs"), str(d)], check=True, capture_output=True)
    return str(d)


@pytest.fixture
def start(tmp_path, pki):
    """start(*options) -> a running collector (TLS, the test PKI), stopped at the end."""
    running = []

    def go(*extra):
        c = Collector(tmp_path, pki, *extra)
        running.append(c)
        return c

    yield go
    for c in running:
        if c.proc.poll() is None:
            c.proc.kill()
            c.proc.wait()
        c.err.close()


def documented_bytes(what):
    """The bytes docs/collector.md says the memory budget charges for `what` (its table)."""
    with open(DOC) as f:
        m = re.search(r"^\| " + re.escape(what) + r" \| (\d+)", f.read(), re.M)
    assert m, f"docs/collector.md documents no charge for {what!r}"
    return int(m.group(1))


def documented_default(key):
    """The default docs/collector.md gives a [collect] key (its limits table)."""
    with open(DOC) as f:
        m = re.search(r"^\| `" + re.escape(key) + r"` \| [^|]* \| (\d+)", f.read(), re.M)
    assert m, f"docs/collector.md documents no default for {key}"
    return int(m.group(1))


def session_rows(c):
    return c.query("SELECT * FROM sessions ORDER BY id")


def connection_rows(c):
    return c.query("SELECT * FROM connections ORDER BY minute_ms, source, outcome")


def limits_text(c):
    p = subprocess.run([BIN, "report", "--db", c.db, "--limits"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def exporter_context(pki):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(f"{pki}/ca.pem")
    ctx.load_cert_chain(f"{pki}/exporter.pem", f"{pki}/exporter.key")
    return ctx


def complete_session(c, epoch=1, source=None):
    """An authorised exporter (Python ssl, the exporter certificate): one epoch, reports 1 and 2 (final).
    Like any TLS client (rocemeter's exporter, openssl s_client) it has its context ready before it
    connects, so its ClientHello follows the connection at once."""
    ctx = exporter_context(c.pki)
    s = socket.socket()
    s.settimeout(WAIT)
    if source:
        s.bind((source, 0))
    s.connect(("127.0.0.1", c.port))
    t = ctx.wrap_socket(s, server_hostname=COLLECTOR)
    r1 = report(epoch=epoch)
    t.sendall(templates_msg() + data_msg(r1, later(r1, 2, final=True)))
    close_tls(t)


# ------------------------------------------------------------ pre-authentication lock-out

class IdleAttacker:
    """n idle TCP connections (no octet sent) from the given source addresses, each re-opened as
    soon as the collector closes it, until stop()."""

    def __init__(self, port, sources, n):
        self.port, self.sources, self.n = port, sources, n
        self.socks = {}
        self.opened = self.failed = 0
        self.retry = []
        self.halt = threading.Event()
        for i in range(n):
            self.open(i)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def open(self, i):
        s = socket.socket()
        s.bind((self.sources[i % len(self.sources)], 0))
        s.settimeout(WAIT)
        s.connect(("127.0.0.1", self.port))
        s.setblocking(False)
        self.socks[s] = i
        self.opened += 1

    def run(self):
        while not self.halt.is_set():
            while self.retry:
                try:
                    self.open(self.retry[0])
                    self.retry.pop(0)
                except OSError:
                    break
            r, _, _ = select.select(list(self.socks), [], [], 0.05)
            for s in r:
                try:
                    d = s.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    d = b""
                if not d:
                    i = self.socks.pop(s)
                    s.close()
                    try:
                        self.open(i)
                    except OSError:
                        self.failed += 1  # the collector's backlog is full: try again later
                        self.retry.append(i)

    def stop(self):
        self.halt.set()
        self.thread.join(WAIT)
        for s in self.socks:
            s.close()


@pytest.mark.parametrize("n_sources", [1, 64])
def test_idle_connections_do_not_lock_out_exporters(start, n_sources):
    """As many idle TCP connections as the default max_sessions (64), re-opened as the collector
    closes them, from one source or from 64: an authorised exporter still gets a Transport
    Session; no unauthenticated connection ever became one, and each is counted once."""
    assert documented_default("max_sessions") == 64
    c = start()
    sources = [f"127.0.1.{i + 1}" for i in range(n_sources)]
    att = IdleAttacker(c.port, sources, 64)
    try:
        time.sleep(1.0)  # let the collector see the idle connections first
        complete_session(c, epoch=7)
        c.wait_for(lambda: epochs(c, "outcome = 'complete'"), "the exporter's epoch")
        assert att.thread.is_alive()
    finally:
        att.stop()
    (sess,) = session_rows(c)  # only the authorised exporter is a session
    assert EXPORTER in sess["peer_subject"] and sess["peer"].startswith("127.0.0.1:")
    assert sess["accepted"] == 2
    # Every idle connection, closed now, is counted once per source and minute.
    c.wait_for(lambda: sum(r["count"] for r in connection_rows(c)) == att.opened, f"{att.opened} counted")
    rows = connection_rows(c)
    assert {r["source"] for r in rows} <= set(sources)
    assert {r["outcome"] for r in rows} <= {"handshake-failed", "handshake-evicted", "handshake-timeout"}
    assert c.stop() == 0


def test_handshake_eviction_order(start):
    """Handshakes in progress (a partial ClientHello each): the fifth from one address evicts that
    address's oldest (max_handshakes_per_source 4); when all 16 slots (max_handshakes) are taken a
    new connection evicts the oldest; an exporter arriving then evicts the next oldest and gets its
    session."""
    assert (documented_default("max_handshakes"), documented_default("max_handshakes_per_source")) == (16, 4)
    c = start()
    held = []

    def stall(source):
        s = socket.socket()
        s.bind((source, 0))
        s.connect(("127.0.0.1", c.port))
        s.sendall(b"\x16\x03\x01\x00")  # the first octets of a TLS record, then nothing
        held.append(s)

    for _ in range(5):
        stall("127.0.3.1")   # A1..A5: A5 evicts A1
    for i in range(13):
        stall(f"127.0.3.{i + 2}")  # B1..B13: B13 finds 16 in the handshake and evicts A2
    c.wait_for(lambda: sum(r["count"] for r in connection_rows(c)) == 2, "two evictions")
    complete_session(c, epoch=5)  # evicts A3
    c.wait_for(lambda: epochs(c, "outcome = 'complete'"), "the exporter's epoch")
    c.wait_for(lambda: sum(r["count"] for r in connection_rows(c)) == 3, "three evictions")
    # one row per source, outcome and wall-clock minute: the three may straddle a minute boundary
    rows = connection_rows(c)
    assert {(r["source"], r["outcome"]) for r in rows} == {("127.0.3.1", "handshake-evicted")}, rows
    assert sum(r["count"] for r in rows) == 3
    assert "max_handshakes 16" in rows[-1]["last_detail"]
    # the other connections are still in their handshake: let them go
    for s in held:
        s.close()
    assert len(session_rows(c)) == 1
    assert c.stop() == 0


def test_failed_handshakes_are_aggregated(start):
    """Connections that never authenticate leave no sessions row: they are counted per source and
    minute, at most 64 sources a minute (the rest as source 'other')."""
    c = start()
    n_src, per_src = 100, 3
    # All of them inside one wall-clock minute, or the 100 sources could split over two minutes of
    # 64 or fewer each and no 'other' row would be due: start early in a minute.
    if time.time() % 60 > 40:
        time.sleep(60.5 - time.time() % 60)
    for i in range(n_src):
        for _ in range(per_src):
            s = socket.socket()
            s.bind((f"127.0.2.{i + 1}", 0))
            s.connect(("127.0.0.1", c.port))
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")  # not a TLS ClientHello
            s.close()
    total = n_src * per_src
    c.wait_for(lambda: sum(r["count"] for r in connection_rows(c)) == total, f"{total} counted connections")
    assert session_rows(c) == []
    rows = connection_rows(c)
    # each one fails its handshake, unless a newer one from its source evicted it first
    assert {r["outcome"] for r in rows} <= {"handshake-failed", "handshake-evicted"}
    per_minute = {}
    for r in rows:
        per_minute.setdefault(r["minute_ms"], set()).add(r["source"])
        assert r["minute_ms"] % 60000 == 0 and r["first_ms"] >= r["minute_ms"]
    for srcs in per_minute.values():
        assert len(srcs - {"other"}) <= 64
    assert "other" in set().union(*per_minute.values())  # 100 sources cannot all fit in one minute's 64
    assert "handshake-failed" in limits_text(c)
    assert c.stop() == 0


def test_unauthorised_and_over_limit_are_not_sessions(start):
    """A peer whose certificate is not authorised, and an authorised one over max_sessions: counted
    connections, not sessions rows; the second is also a collector resource drop."""
    c = start("--max-sessions", "1")
    keep = c.connect()  # holds the only session
    keep.sendall(templates_msg())
    c.wait_for(lambda: len(session_rows(c)) == 1, "first session")
    for cert in ("wrongname", "exporter"):
        try:
            s = c.connect(cert)
            s.sendall(templates_msg())
            s.recv(1)
            s.close()
        except (ssl.SSLError, OSError):
            pass
    c.wait_for(lambda: sum(r["count"] for r in connection_rows(c)) == 2, "two counted connections")
    # the certificate's name is judged during the handshake or right after it
    outcomes = {r["outcome"]: r["count"] for r in connection_rows(c)}
    assert outcomes.pop("session-limit") == 1
    assert outcomes in ({"not-authorised": 1}, {"handshake-failed": 1})
    assert len(session_rows(c)) == 1
    (d,) = c.query("SELECT * FROM drops")
    assert d["kind"] == "session-limit" and d["count"] == 1
    close_tls(keep)
    assert c.stop() == 0


# ------------------------------------------------------------ dead sessions

def s_client(c, *prefix):
    """openssl s_client as an authorised exporter; stdin is the IPFIX stream."""
    host = "127.0.0.1" if not prefix else prefix[-1]
    cmd = list(prefix[:-1]) + ["openssl", "s_client", "-connect", f"{host}:{c.port}", "-tls1_3", "-quiet",
                               "-nocommands", "-cert", f"{c.pki}/exporter.pem", "-key", f"{c.pki}/exporter.key",
                               "-CAfile", f"{c.pki}/ca.pem", "-verify_return_error"]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_frozen_peer_ends_by_session_timeout(start):
    """An authorised exporter process that freezes (SIGSTOP) after sending a report: its kernel still
    answers, so only the session inactivity limit ends it; the open epoch becomes incomplete
    with that reason."""
    c = start("--session-timeout-ms", "1500")
    p = s_client(c)
    try:
        p.stdin.write(templates_msg() + data_msg(report(epoch=3)))
        p.stdin.flush()
        c.wait_for(lambda: epochs(c), "epoch stored")
        os.kill(p.pid, signal.SIGSTOP)
        (sess,) = c.wait_ended(1)
    finally:
        os.kill(p.pid, signal.SIGCONT)
        p.kill()
        p.wait()
    assert "session_timeout_ms 1500" in sess["end_reason"]
    (e,) = epochs(c)
    assert e["outcome"] == "incomplete" and "session_timeout_ms 1500" in e["reason"]
    assert e["retired_ms"] is not None


@pytest.fixture
def netns():
    """A network namespace and a veth pair, names with this process's ID; (ns, inner dev, outer dev,
    collector address, peer address)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespace, veth)")
    if not shutil.which("ip"):
        pytest.skip("needs iproute2")
    pid = os.getpid()
    ns, outer, inner = f"rmcl{pid}", f"rmco{pid}", f"rmci{pid}"
    a, b = "10.213.7.1", "10.213.7.2"
    try:
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
        sh("ip", "addr", "add", f"{a}/30", "dev", outer)
        sh("ip", "link", "set", outer, "up")
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{b}/30", "dev", inner)
        sh("ip", "netns", "exec", ns, "ip", "link", "set", inner, "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        yield ns, inner, outer, a, b
    finally:
        subprocess.run(["ip", "link", "del", outer], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_vanished_peer_ends_by_keepalive(start, netns):
    """The exporter's host vanishes (its veth goes down in its namespace): TCP keepalive and
    TCP_USER_TIMEOUT end the session; the open epoch becomes incomplete with that reason."""
    ns, inner, outer, a, b = netns
    port = free_port_on(a)
    c = start("--dead-peer-timeout-ms", "2000", "--listen", f"{a}:{port}")  # the last --listen wins
    c.port = port
    p = s_client(c, "ip", "netns", "exec", ns, a)
    try:
        p.stdin.write(templates_msg() + data_msg(report(epoch=4)))
        p.stdin.flush()
        c.wait_for(lambda: epochs(c), "epoch stored")
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", inner, "down"], check=True)
        (sess,) = c.wait_ended(1)
    finally:
        p.kill()
        p.wait()
    assert "timed out" in sess["end_reason"]
    (e,) = epochs(c)
    assert e["outcome"] == "incomplete" and "timed out" in e["reason"]


def free_port_on(addr):
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


# ------------------------------------------------------------ starvation, SIGTERM under load

def test_flood_starves_nobody_and_sigterm_is_answered(start):
    """One exporter keeps its socket full (Messages of records bound to no epoch: each costs a
    database write); a second one's records are committed while the flood goes on, and SIGTERM
    under the flood ends the collector within 5 s (a liveness bound, not a speed figure)."""
    c = start()
    flood = c.connect()
    flood.sendall(templates_msg())
    msg = data_msg(*[report(epoch=0, rid=k + 1) for k in range(540)])  # 64,820 octets
    halt, sent, errors = threading.Event(), [0], []

    def run():
        try:
            while not halt.is_set():
                flood.sendall(msg)
                sent[0] += 1
        except (OSError, ssl.SSLError) as ex:
            errors.append(ex)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        c.wait_for(lambda: c.query("SELECT count(*) AS n FROM raw_records")[0]["n"] > 0, "the flood stored")
        complete_session(c, epoch=9)
        c.wait_for(lambda: epochs(c, "outcome = 'complete'"), "the second exporter's epoch, during the flood")
        mark = sent[0]  # and the flood is still being read
        c.wait_for(lambda: sent[0] > mark + 2, "more of the flood")
        assert t.is_alive() and not errors
        assert c.query("SELECT ended_ms FROM sessions WHERE id = 1")[0]["ended_ms"] is None
        t0 = time.monotonic()
        c.proc.send_signal(signal.SIGTERM)
        try:
            rc = c.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            rc = None
        elapsed = time.monotonic() - t0
    finally:
        halt.set()
        t.join(WAIT)
        flood.close()
    assert rc == 0 and elapsed < 5.0, f"SIGTERM under flood: exit {rc} after {elapsed:.1f} s"
    assert c.query("SELECT end_reason FROM sessions WHERE id = 1")[0]["end_reason"] == "collector shutdown"


# ------------------------------------------------------------ a peer stopping inside a Message

def test_peer_stalled_inside_a_message_times_out(start):
    """An authorised peer sends half of a Message and then nothing, keeping the connection: the
    message-assembly timeout ends the session; the open epoch becomes incomplete."""
    c = start("--message-timeout-ms", "1000")
    s = c.connect()
    r1 = report(epoch=2)
    s.sendall(templates_msg() + data_msg(r1) + data_msg(later(r1, 2))[:70])
    try:
        (sess,) = c.wait_ended(1)
    finally:
        s.close()
    assert "truncated IPFIX message" in sess["end_reason"] and "70 of 140" in sess["end_reason"]
    assert "message_timeout_ms 1000" in sess["end_reason"]
    (e,) = epochs(c)
    assert e["outcome"] == "incomplete" and e["last_report_id"] == 1 and "message_timeout_ms" in e["reason"]


# ------------------------------------------------------------ raw-record amplification

def amplifying_template(tid=256, n_fields=16000):
    """A Template of n_fields Field Specifiers whose Data Records are 1 octet (paddingOctets of
    length 0, then octetDeltaCount of length 1): every record refers to 4 + 4 * n_fields octets of
    Template, stored beside each rejected record."""
    fields = [("pad", 0, 210, 0)] * (n_fields - 1) + [("octets", 0, 1, 1)]
    return template_record(tid, fields)


def raw_bytes(c, session=None):
    where = "" if session is None else f" WHERE session_id = {int(session)}"
    row = c.query("SELECT coalesce(sum(length(record) + coalesce(length(template), 0)), 0) AS n, count(*) AS rows"
                  " FROM raw_records" + where)[0]
    return row["n"], row["rows"]


def test_amplifying_template_stays_within_the_raw_byte_bound(start):
    """Default limits: 2,000 rejected 1-octet records of a 64,004-octet Template (128 MB raw
    without a byte bound) keep at most max_raw_bytes_per_session; the rest are counted drops."""
    share = documented_default("max_raw_bytes_per_session")
    c = start()
    tmpl = amplifying_template()
    assert len(tmpl) == 64004
    n = 2000
    send = c.connect()
    send.sendall(message(ipfix_set(2, tmpl)) + message(ipfix_set(256, bytes(n))))
    close_tls(send)
    (sess,) = c.wait_ended(1)
    per_row = 1 + len(tmpl)
    stored_bytes, rows = raw_bytes(c)
    assert rows == share // per_row and stored_bytes == rows * per_row <= share
    (d,) = c.query("SELECT * FROM drops WHERE kind = 'raw-byte-limit'")
    assert d["count"] == n - rows and d["session_id"] == sess["id"]
    assert "raw-byte-limit" in limits_text(c) and "max_raw_bytes" in limits_text(c)
    assert c.stop() == 0  # the last connection closes the write-ahead log into the database
    assert os.path.getsize(c.db) < share + (4 << 20)


def test_raw_bytes_global_bound_and_session_share(start):
    """The global bound holds across sessions; each session keeps at most its share."""
    c = start("--max-raw-bytes", "1000000", "--max-raw-bytes-per-session", "600000")
    tmpl = amplifying_template()
    per_row = 1 + len(tmpl)
    for _ in range(2):
        s = c.connect()
        s.sendall(message(ipfix_set(2, tmpl)) + message(ipfix_set(256, bytes(200))))
        close_tls(s)
    c.wait_ended(2)
    first = 600000 // per_row                      # the share
    second = (1000000 - first * per_row) // per_row  # what the global bound leaves
    assert raw_bytes(c, 1) == (first * per_row, first)
    assert raw_bytes(c, 2) == (second * per_row, second)
    drops = {d["session_id"]: d["count"] for d in c.query("SELECT * FROM drops WHERE kind = 'raw-byte-limit'")}
    assert drops == {1: 200 - first, 2: 200 - second}


# ------------------------------------------------------------ one memory budget

def test_memory_budget_refuses_epochs_as_counted_drops(start):
    """max_memory_bytes = one handshake slot + one session + the two Templates + 10 epochs, at the
    documented charges: of 20 new epochs 10 are retained, 10 refused as memory-budget drops."""
    data_t = template_record(256, V4)
    opt_t = struct.pack(">HHH", 260, 2, 1) + spec(0, 145, 2) + spec(0, 173, 8)
    budget = (documented_bytes("handshake slot") + documented_bytes("Transport Session")
              + 2 * documented_bytes("Template") + len(data_t) + len(opt_t)
              + 10 * documented_bytes("retained epoch"))
    c = start("--max-handshakes", "1", "--max-memory-bytes", str(budget))
    s = c.connect()
    s.sendall(templates_msg() + data_msg(*[report(epoch=e) for e in range(1, 21)]))
    close_tls(s)
    (sess,) = c.wait_ended(1)
    assert sess["accepted"] == 10 and sess["resource_drops"] == 10
    assert [e["epoch_id"] for e in epochs(c)] == list(range(1, 11))
    (d,) = c.query("SELECT * FROM drops")
    assert d["kind"] == "memory-budget" and d["count"] == 10
    text = limits_text(c)
    assert re.search(r"memory-budget\s+10\b", text) and f"max_memory_bytes      {budget}" in text


def test_one_exporter_cannot_take_the_memory_budget(start):
    """Over real TLS sessions, one exporter keeps 6,000 epochs open in a 4 MiB budget
    (without shares it held all of it and the next sessions were refused). Its share, the default
    max_memory_bytes_per_session of docs/configuration.md (a quarter of max_memory_bytes), holds its two
    Templates and as many epochs of 1024 bytes as fit; the rest are memory-budget drops of that session,
    and 10 other exporters are admitted meanwhile with all their epochs accepted."""
    data_t = template_record(256, V4)
    opt_t = struct.pack(">HHH", 260, 2, 1) + spec(0, 145, 2) + spec(0, 173, 8)
    budget = 4 << 20
    share = budget // 4
    kept = (share - 2 * documented_bytes("Template") - len(data_t) - len(opt_t)) // documented_bytes("retained epoch")
    n = 6000
    c = start("--max-handshakes", "1", "--max-memory-bytes", str(budget))
    hog = c.connect()
    hog.sendall(templates_msg())
    for first in range(1, n + 1, 500):
        hog.sendall(data_msg(*[report(epoch=e) for e in range(first, first + 500)], seq=first))
    drops = lambda: c.query("SELECT coalesce(sum(count), 0) AS n FROM drops WHERE kind = 'memory-budget'")[0]["n"]
    c.wait_for(lambda: drops() == n - kept, f"{n - kept} epochs of the first session refused")
    for i in range(10):
        s = c.connect()
        s.sendall(templates_msg() + data_msg(*[report(epoch=e) for e in range(1, 11)]))
        close_tls(s)
        c.wait_ended(i + 1)
    close_tls(hog)
    rows = c.wait_ended(11)
    first = rows[0]
    assert first["accepted"] == kept and first["resource_drops"] == n - kept
    assert [(r["accepted"], r["resource_drops"]) for r in rows[1:]] == [(10, 0)] * 10
    (d,) = c.query("SELECT * FROM drops WHERE kind = 'memory-budget'")
    assert d["session_id"] == first["id"] and d["count"] == n - kept
    assert "max_memory_bytes_per_session %d" % share in d["last_detail"], d["last_detail"]
    assert c.query("SELECT coalesce(sum(count), 0) AS n FROM connections")[0]["n"] == 0
    assert re.search(r"max_memory_bytes_per_session\s+%d\b" % share, limits_text(c)), limits_text(c)


def test_memory_budget_must_hold_the_handshakes_and_a_session(tmp_path):
    """max_memory_bytes below max_handshakes x the handshake slot + one session: a usage error (2)
    that names the key, before anything listens."""
    need = 100 * documented_bytes("handshake slot") + documented_bytes("Transport Session")
    # Port 1: a valid address that is never bound, the budget is refused first.
    p = subprocess.run([BIN, "collect", "--plain-tcp", "--db", str(tmp_path / "m.db"), "--listen", "127.0.0.1:1",
                        "--max-handshakes", "100", "--max-memory-bytes", str(need - 1)],
                       capture_output=True, text=True, timeout=WAIT)
    assert p.returncode == 2 and f"max_memory_bytes {need - 1}" in p.stderr and str(need) in p.stderr
    assert not (tmp_path / "m.db").exists()


def test_template_notes_are_rate_limited(start):
    """20,000 Template withdrawals (valid IPFIX, [RFC7011] 8.1: a Template Record with Field Count
    0), each after the Template is defined again: the decoder's notes of one session are logged 10
    times, then at most once a minute (with the count not logged); every Message is still decoded."""
    c = start()
    n = 20000
    s = c.connect()
    define = templates_msg()
    withdraw = message(ipfix_set(2, struct.pack("!HH", 256, 0)))
    s.sendall((define + withdraw) * n)
    close_tls(s)
    (sess,) = c.wait_ended(1)
    assert sess["messages"] == 2 * n
    log = c.log()
    notes = [line for line in log.splitlines() if re.search(r"session \d+ domain 0: ", line)]
    assert "withdrawn" in log
    assert len(notes) <= 12, len(notes)
    assert "more notes of this session: at most one a minute" in log


def cpu_seconds(pid):
    """utime + stime of a process (proc(5)), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_accept_out_of_descriptors_backs_off(start):
    """The collector's open-file limit (set on the running process with prlimit(1)) below what the
    waiting connections need: accept() fails with EMFILE while connections wait in the listen
    queue. The loop backs off instead of spinning (its CPU time over 2 s stays small), logs the
    failure once (naming the limit to raise), and accepts again once descriptors are free."""
    c = start()
    fds = len(os.listdir(f"/proc/{c.proc.pid}/fd"))
    soft = subprocess.run(["prlimit", f"--pid={c.proc.pid}", "--nofile", "--raw", "--noheadings", "-o", "SOFT"],
                          check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["prlimit", f"--pid={c.proc.pid}", f"--nofile={fds + 3}:"], check=True)
    socks = [socket.create_connection(("127.0.0.1", c.port)) for _ in range(20)]  # no handshake: they wait
    c.wait_for(lambda: "Too many open files" in c.log(), "EMFILE logged")
    t0 = cpu_seconds(c.proc.pid)
    time.sleep(2)
    used = cpu_seconds(c.proc.pid) - t0
    assert used < 0.3, f"{used:.2f} s of CPU in 2 s while out of descriptors"
    assert sum("accept:" in line for line in c.log().splitlines()) == 1, c.log()
    assert "LimitNOFILE" in c.log()
    for s in socks:
        s.close()
    subprocess.run(["prlimit", f"--pid={c.proc.pid}", f"--nofile={soft}:"], check=True)
    s = c.connect()
    s.sendall(templates_msg() + data_msg(report(epoch=1)))
    close_tls(s)
    c.wait_for(lambda: len(c.query("SELECT id FROM sessions WHERE ended_ms IS NOT NULL")) >= 1, "a session again")


def exporter_cert(pki, name, not_before, not_after):
    """An exporter certificate (the exporter's name and key usage) signed by the test CA, valid from
    not_before to not_after (datetimes): PKI/NAME.pem and NAME.key."""
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    with open(f"{pki}/ca.pem", "rb") as f:
        ca = x509.load_pem_x509_certificate(f.read())
    with open(f"{pki}/ca.key", "rb") as f:
        ca_key = serialization.load_pem_private_key(f.read(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "rocemeter test"),
                         x509.NameAttribute(NameOID.COMMON_NAME, EXPORTER)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(EXPORTER)]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    with open(f"{pki}/{name}.pem", "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(f"{pki}/{name}.key", "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return name


def test_certificate_refusals_say_why(start, pki):
    """An exporter certificate that has expired, one not yet valid, one of an unknown CA: each
    refused handshake names the reason (OpenSSL's verification result), not only "certificate
    verify failed"."""
    import datetime
    now = datetime.datetime.now(datetime.timezone.utc)
    day = datetime.timedelta(days=1)
    cases = {exporter_cert(pki, "expired", now - 10 * day, now - day): "certificate has expired",
             exporter_cert(pki, "notyet", now + day, now + 10 * day): "certificate is not yet valid",
             "untrusted": "unable to get local issuer certificate"}
    c = start()
    for i, cert in enumerate(cases):
        try:  # one source each: a source's refusals of one kind are logged once a minute
            s = c.tls(socket.create_connection(("127.0.0.1", c.port), source_address=(f"127.0.0.{i + 2}", 0)),
                      cert)
            s.sendall(templates_msg())
            s.recv(1)
            s.close()
        except (ssl.SSLError, OSError):
            pass
    c.wait_for(lambda: sum(r["count"] for r in connection_rows(c)) == 3, "three refused connections")
    log = c.log()
    for why in cases.values():
        assert f"exporter certificate refused: {why}" in log, log
    assert len(session_rows(c)) == 0
    assert c.stop() == 0
