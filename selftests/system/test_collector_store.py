# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter collect` when its database misbehaves ([SEQOBS] "Collector
Processing": outcomes preserved on retirement, collector resource drops
kept apart from network loss, finite limits shown to the operator).

- A database on a small tmpfs that fills up while a session streams, then
  gets space back: nothing is lost silently; every epoch ends up stored
  with its outcome, and every record that could not be stored is a counted
  collector resource drop that `rocemeter report --limits` shows.
- A database write-locked by another process (Python's sqlite3 holding
  BEGIN EXCLUSIVE) while a session streams: once the lock goes, the
  session and its epochs are stored under the session's own ID. The
  metrics show the database unavailable meanwhile, and count the
  `database` drops as they happen.
- kill -9, then a restart on the same database: the dead run's open
  sessions end and their open epochs are retired as incomplete ("collector
  restarted").
- kill -9 while the collector reads (at random moments under load, with the
  database write-locked, with its disk full, past the journal's rotation):
  every record it had read is stored or a counted `collector-crash` drop of
  its session. What it had read comes from the kernel, not from the
  collector: the octets sent minus the exporter's unacknowledged ones
  (TIOCOUTQ) and the collector's unread ones (ss), the collector frozen with
  SIGSTOP first.
- kill -9 under load from rocemeter's own exporter (test_export --drive, TLS
  1.3): in its next Transport Session the exporter reports what its kernel
  had acknowledged of the dead one (the Reliability Options record, docs/
  ipfix-mapping.md), and the collector counts what it never read as an
  `unread-at-crash` drop: records sent = read (stored or `collector-crash`)
  + `unread-at-crash` + the exporter's `lost_in_flight`; silent loss 0.

IPFIX Messages are written by hand (the helpers of test_collector.py,
from RFC 7011 and [SEQOBS]); expected values come from what was sent.
Needs root for the tmpfs mount (the other tests do not).
"""
import ipaddress
import os
import random
import re
import shutil
import sqlite3
import subprocess
import time
import urllib.request

import pytest

from collector_proc import freeze, kill9, kill_while_reading, reap
from test_collector import (BIN, COLLECTOR, EXPORTER, V6, WAIT, Collector, close_tls, data_msg, epochs, free_port, later, pki,
                            report, templates_msg)

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built")

__all__ = ["pki"]  # the module-scoped PKI fixture of test_collector.py


class StoreCollector(Collector):
    """A collector whose database may live apart from its log (a tmpfs that fills up)."""

    def __init__(self, db, logdir, pki, *extra, port=None):
        self.port = port or free_port()
        self.db = str(db)
        self.errpath = os.path.join(str(logdir), "collector.log")
        self.pki = pki
        args = [BIN, "collect", "--listen", f"127.0.0.1:{self.port}", "--db", self.db,
                "--cert", f"{pki}/collector.pem", "--key", f"{pki}/collector.key",
                "--ca", f"{pki}/ca.pem", "--peer-name", EXPORTER] + list(extra)
        self.err = open(self.errpath, "a")
        self.proc = subprocess.Popen(args, stderr=self.err)
        self.wait_for(lambda: self.log().count("listening on") > self.starts_before, "collector start")

    starts_before = 0


def start(db, logdir, pki, *extra, port=None):
    before = 0
    path = os.path.join(str(logdir), "collector.log")
    if os.path.exists(path):
        with open(path) as f:
            before = f.read().count("listening on")
    StoreCollector.starts_before = before
    return StoreCollector(db, logdir, pki, *extra, port=port)


def metric(c, name):
    """The value of an unlabelled or labelled series (name as printed, labels included) of the
    collector's /metrics (collect --metrics 127.0.0.1:0: the port is in its log)."""
    c.wait_for(lambda: re.search(r"metrics: serving /metrics on \S+ \(port (\d+)\)", c.log()), "metrics server")
    port = re.findall(r"metrics: serving /metrics on \S+ \(port (\d+)\)", c.log())[-1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        body = r.read().decode()
    m = re.search(r"^%s (\d+)$" % re.escape(name), body, re.M)
    assert m, (name, body)
    return int(m.group(1))


def epoch_stream(n_epochs, first_epoch=1, rid=1, final=False):
    """Data Messages with report rid of epochs first_epoch.., 100 records per Message."""
    rs = []
    for e in range(first_epoch, first_epoch + n_epochs):
        r = report(epoch=e, rid=1)
        rs.append(later(r, rid, final=final) if rid > 1 or final else r)
    return [data_msg(*rs[i:i + 100], seq=0) for i in range(0, len(rs), 100)]


def invalid_msg(epoch):
    """A record that breaks a record rule (pending != 0 in a final record): kept raw."""
    return data_msg(report(epoch=epoch, rid=1, flags=0x21, pending=1, skipped=2), seq=0)


def count(c, sql, *args):
    rows = c.query(sql, *args)
    return rows[0][0] if rows else None


# ------------------------------------------------------------ a full disk

def tmpfs(size):
    """A tmpfs of size (mount's size=) at a path of this process, unmounted and removed after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    d = f"/tmp/rm-full-{os.getpid()}-{size}"
    os.makedirs(d, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d], check=True)
    yield d
    subprocess.run(["umount", "-l", d], check=False)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def small_fs(tmp_path):
    yield from tmpfs("8m")


@pytest.fixture
def roomy_fs(tmp_path):
    """Room for 100,000 epochs once the filler is gone."""
    yield from tmpfs("96m")


def fill(path):
    """Take every free block of the file system that holds path."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for chunk in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError:
                pass
    finally:
        os.close(fd)


def test_database_full_then_space_returns(small_fs, tmp_path, pki):
    n_epochs, n_invalid = 3000, 20
    c = start(os.path.join(small_fs, "c.db"), tmp_path, pki, "--metrics", "127.0.0.1:0")
    try:
        s = c.connect()
        s.settimeout(WAIT)  # a collector that stops reading fails the test instead of hanging it
        s.sendall(templates_msg())
        # Session 1 is stored; then the disk fills up.
        c.wait_for(lambda: c.query("SELECT id FROM sessions WHERE id = 1"), "session row")
        filler = os.path.join(small_fs, "filler")
        fill(filler)
        for m in epoch_stream(n_epochs):
            s.sendall(m)
        for i in range(n_invalid):
            s.sendall(invalid_msg(100000 + i))
        for m in epoch_stream(n_epochs, rid=2, final=True):
            s.sendall(m)
        c.wait_for(lambda: "database" in c.log() and "full" in c.log(), "the database error logged")
        time.sleep(1.5)  # more failed attempts while full: the log stays short
        os.unlink(filler)  # space returns
        close_tls(s)
        sess = c.wait_ended(1)
        c.wait_for(lambda: count(c, "SELECT count(*) FROM epochs WHERE outcome = 'complete'") == n_epochs,
                   "every epoch stored once space returned")
        c.wait_for(lambda: metric(c, "rocemeter_collector_database_unavailable") == 0, "the database writable")
        metric_drops = metric(c, 'rocemeter_collector_resource_drops_total{limit="database"}')
    finally:
        assert c.stop() == 0
    log = c.log()
    assert sum("database" in line for line in log.splitlines()) <= 6, log
    (s1,) = sess
    assert s1["accepted"] == 2 * n_epochs and s1["invalid"] == n_invalid
    assert s1["end_reason"] == "peer closed the session"
    es = epochs(c)
    assert len(es) == n_epochs + n_invalid
    ok = [e for e in es if e["outcome"] == "complete"]
    assert len(ok) == n_epochs and all(e["reports_accepted"] == 2 and e["session_id"] == 1 for e in ok)
    assert all(e["retired_ms"] is not None for e in es)
    # Every invalid record is either kept raw or a counted collector resource drop.
    kept = count(c, "SELECT count(*) FROM raw_records WHERE verdict = 'invalid'")
    dropped = count(c, "SELECT coalesce(sum(count), 0) FROM drops WHERE kind = 'database'")
    assert kept + dropped == n_invalid, (kept, dropped)
    assert metric_drops == dropped, (metric_drops, dropped)
    p = subprocess.run([BIN, "report", "--db", c.db, "--limits"], capture_output=True, text=True)
    assert p.returncode == 0
    if dropped:
        assert f"database              {dropped}" in p.stdout, p.stdout


DROPS_LINE = r"database unavailable: (\d+) epoch outcomes? and records not kept since the last line"


def logged_drops(log):
    """The database drops the collector's log lines account for."""
    return sum(int(n) for n in re.findall(DROPS_LINE, log))


def test_disk_full_stays_full_bound_is_enforced(roomy_fs, tmp_path, pki):
    """The disk full and staying full while one session sends 150,000 final epochs.
    At most 100,000 retired epochs wait in memory (docs/collector.md "When the database fails"); the
    other 50,000 are `database` drops of the session while it lasts (metrics, a log line at once and
    then at most every 10 s, not only at exit). Once space returns the 100,000 that waited are
    stored: stored + dropped == sent."""
    n, bound = 150000, 100000
    c = start(os.path.join(roomy_fs, "c.db"), tmp_path, pki, "--metrics", "127.0.0.1:0")
    drops = 'rocemeter_collector_resource_drops_total{limit="database"}'
    try:
        s = c.connect()
        s.settimeout(WAIT)
        s.sendall(templates_msg())
        c.wait_for(lambda: c.query("SELECT id FROM sessions WHERE id = 1"), "session row")
        filler = os.path.join(roomy_fs, "filler")
        fill(filler)
        for first in range(1, n + 1, 10000):
            s.sendall(b"".join(epoch_stream(10000, first_epoch=first, final=True)))
        close_tls(s)  # every epoch retires now: 100,000 wait, 50,000 are drops
        c.wait_for(lambda: metric(c, drops) == n - bound, f"{n - bound} database drops while the disk is full")
        # logged while it lasts, rate-limited: the first drop at once, the rest in a line due 10 s later
        # (also without a further drop); the lines account for every drop
        c.wait_for(lambda: logged_drops(c.log()) == n - bound, "every database drop in a log line")
        lines = re.findall(DROPS_LINE, c.log())
        assert len(lines) == 2 and lines[0] == "1", lines
        assert metric(c, drops) == n - bound  # still full: no more drops, nothing stored
        assert count(c, "SELECT count(*) FROM epochs") == 0
        os.unlink(filler)  # space returns
        c.wait_for(lambda: count(c, "SELECT count(*) FROM epochs") == bound, "the epochs that waited stored")
        c.wait_for(lambda: count(c, "SELECT coalesce(sum(count), 0) FROM drops WHERE kind = 'database'")
                   == n - bound, "the drops stored")
    finally:
        assert c.stop() == 0
    assert logged_drops(c.log()) == n - bound
    assert count(c, "SELECT count(*) FROM epochs WHERE outcome = 'complete' AND retired_ms IS NOT NULL") == bound
    (d,) = c.query("SELECT * FROM drops WHERE kind = 'database'")
    assert d["session_id"] == 1 and "database unavailable" in d["last_detail"]


# ------------------------------------------------------------ a write lock held by another process

def test_database_write_locked(tmp_path, pki):
    c = start(tmp_path / "c.db", tmp_path, pki, "--metrics", "127.0.0.1:0")
    try:
        lock = sqlite3.connect(c.db, isolation_level=None, timeout=30)
        lock.execute("BEGIN EXCLUSIVE")
        try:
            s = c.connect()
            s.settimeout(WAIT)  # a collector that stops reading fails the test instead of hanging it
            s.sendall(templates_msg())
            for m in epoch_stream(300):
                s.sendall(m)
            for m in epoch_stream(300, rid=2, final=True):
                s.sendall(m)
            s.sendall(invalid_msg(5000))
            close_tls(s)
            # Held well past any single busy timeout (today 5 s per statement).
            c.wait_for(lambda: "locked" in c.log() or "busy" in c.log(), "the lock noticed")
            assert metric(c, "rocemeter_collector_database_unavailable") == 1
            time.sleep(7)
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        sess = c.wait_ended(1)
        c.wait_for(lambda: count(c, "SELECT count(*) FROM epochs WHERE outcome = 'complete'") == 300,
                   "the epochs stored after the lock")
        assert metric(c, "rocemeter_collector_database_unavailable") == 0
        assert metric(c, 'rocemeter_collector_resource_drops_total{limit="database"}') == 0
    finally:
        assert c.stop() == 0
    (s1,) = sess
    assert s1["id"] == 1 and s1["accepted"] == 600 and s1["ended_ms"] is not None
    assert s1["peer_subject"] and EXPORTER in s1["peer_subject"]
    es = epochs(c)
    assert {e["session_id"] for e in es} == {1}
    assert len([e for e in es if e["outcome"] == "complete" and e["reports_accepted"] == 2]) == 300
    # The invalid record waited in memory: kept raw, nothing dropped.
    assert count(c, "SELECT count(*) FROM raw_records WHERE verdict = 'invalid' AND session_id = 1") == 1
    assert count(c, "SELECT count(*) FROM drops") == 0


# ------------------------------------------------------------ crash recovery

def test_restart_after_kill_retires_open_epochs(tmp_path, pki):
    db = tmp_path / "c.db"
    c = start(db, tmp_path, pki)
    s = c.connect()
    r_final = report(epoch=2, rid=1)
    s.sendall(templates_msg() + data_msg(report(epoch=1, rid=1), later(report(epoch=1, rid=1), 2), r_final,
                                         later(r_final, 2, final=True)))
    c.wait_for(lambda: count(c, "SELECT count(*) FROM epochs WHERE last_report_id = 2") == 2, "epochs committed")
    kill9(c, s)
    assert c.query("SELECT ended_ms FROM sessions")[0]["ended_ms"] is None  # the dead run left it open

    c2 = start(db, tmp_path, pki)
    try:
        c2.wait_for(lambda: "collector restarted" in c2.log(), "the recovery logged")
        (sess,) = c2.query("SELECT * FROM sessions")
        assert sess["ended_ms"] is not None and "collector restarted" in sess["end_reason"]
        e1, e2 = epochs(c2)
        assert e1["outcome"] == "incomplete" and "collector restarted" in e1["reason"]
        assert "without a final report (last report 2)" in e1["reason"]
        assert e1["retired_ms"] is not None and e1["last_report_id"] == 2
        assert e2["outcome"] == "complete" and e2["retired_ms"] is not None  # settled before the crash
        # The new run's sessions carry on with new IDs.
        s = c2.connect()
        s.sendall(templates_msg() + data_msg(report(epoch=1, rid=1)))
        close_tls(s)
        c2.wait_ended(2)
        assert [x["id"] for x in c2.query("SELECT id FROM sessions ORDER BY id")] == [1, 2]
    finally:
        assert c2.stop() == 0
    p = subprocess.run([BIN, "report", "--db", str(db), "--outcome", "open"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == ""


# ------------------------------------------------------------ kill -9 while reading: nothing read is lost uncounted

def crash_counts(c):
    """After the restart: the records of session 1 in the store (one accepted report per epoch), its
    'collector-crash' drops, its row (or None)."""
    stored = count(c, "SELECT coalesce(sum(reports_accepted), 0) FROM epochs WHERE session_id = 1")
    dropped = count(c, "SELECT coalesce(sum(count), 0) FROM drops WHERE session_id = 1 AND kind = 'collector-crash'")
    rows = c.query("SELECT * FROM sessions WHERE id = 1")
    return stored, dropped, rows[0] if rows else None


@pytest.mark.parametrize("trial", range(3))
def test_kill_while_reading_loses_nothing_uncounted(tmp_path, pki, trial):
    """kill -9 at a random moment under load (frozen first, so that the kernel's queues say what the
    collector had read): after the restart every record read is stored or a counted collector
    resource drop of its session; silent loss 0."""
    rnd = random.Random(trial)
    n = 30000
    db = tmp_path / "c.db"
    c = start(db, tmp_path, pki, "--plain-tcp")
    size = len(epoch_stream(100)[0])
    read, partial, sent = kill_while_reading(c, templates_msg(), epoch_stream(n),
                                             rnd.randrange(n // 100 // 10, n // 100 * 9 // 10) * size)
    c2 = start(db, tmp_path, pki, "--plain-tcp")
    try:
        stored, dropped, sess = crash_counts(c2)
    finally:
        assert c2.stop() == 0
    print(f"trial {trial}: sent {sent} records, read {read} (+{partial} octets), stored {stored}, "
          f"counted {dropped}, silently lost {read - stored - dropped}")
    assert read > 0
    assert stored + dropped == read, (read, stored, dropped)
    assert sess["resource_drops"] >= dropped and "collector restarted" in sess["end_reason"]
    if dropped:
        assert "collector-crash" in c2.log() and f"{dropped} of its" in c2.log()


def test_kill_after_journal_rotation(tmp_path, pki):
    """A session longer than the journal's bound (4 MiB, docs/collector.md): the file stays bounded
    (rewritten with the session's Templates) and after kill -9 the count is as exact as before."""
    n = 100000
    db = tmp_path / "c.db"
    c = start(db, tmp_path, pki, "--plain-tcp")
    size = len(epoch_stream(100)[0])
    sizes = []

    def journal_size():
        sizes.append(os.path.getsize(str(db) + ".received/1"))

    read, partial, sent = kill_while_reading(c, templates_msg(), epoch_stream(n), n // 100 * 9 // 10 * size,
                                             before_kill=journal_size)
    c2 = start(db, tmp_path, pki, "--plain-tcp")
    try:
        stored, dropped, sess = crash_counts(c2)
    finally:
        assert c2.stop() == 0
    print(f"rotation: sent {sent} records, read {read} (+{partial} octets), stored {stored}, counted {dropped}, "
          f"journal {sizes[0]} octets")
    assert read * size // 100 > 4 << 20 and sizes[0] < (4 << 20) + 2 * 262144
    assert stored + dropped == read, (read, stored, dropped)
    assert not os.listdir(str(db) + ".received")  # read at the restart, then removed


def test_kill_while_database_locked_loses_nothing_uncounted(tmp_path, pki):
    """kill -9 while another process holds the database's write lock: nothing of the session was ever
    committed; after the restart its row exists and every record read is a counted drop."""
    n = 25000
    db = tmp_path / "c.db"
    c = start(db, tmp_path, pki, "--plain-tcp")
    lock = sqlite3.connect(str(db), isolation_level=None, timeout=30)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        read, partial, sent = kill_while_reading(
            c, templates_msg(), epoch_stream(n), n // 100 * len(epoch_stream(100)[0]),
            ready=lambda: c.wait_for(lambda: "locked" in c.log() or "busy" in c.log(), "the lock noticed"))
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    c2 = start(db, tmp_path, pki, "--plain-tcp")
    try:
        stored, dropped, sess = crash_counts(c2)
    finally:
        assert c2.stop() == 0
    print(f"locked: sent {sent} records, read {read} (+{partial} octets), stored {stored}, counted {dropped}")
    assert read > 0 and stored == 0
    assert dropped == read, (read, dropped)
    assert sess["records"] >= read and sess["resource_drops"] == dropped


def test_kill_while_disk_full_loses_nothing_uncounted(small_fs, tmp_path, pki):
    """kill -9 while the database's file system is full (the journal's room was reserved when the
    session began): after space returns and the collector restarts, every record read is stored or
    a counted drop."""
    n = 25000
    db = os.path.join(small_fs, "c.db")
    c = start(db, tmp_path, pki, "--plain-tcp")
    filler = os.path.join(small_fs, "filler")

    def full():
        fill(filler)
        c.wait_for(lambda: "database" in c.log() and "full" in c.log(), "the database error logged")

    read, partial, sent = kill_while_reading(c, templates_msg(), epoch_stream(n),
                                             n // 100 * len(epoch_stream(100)[0]), ready=full)
    os.unlink(filler)
    c2 = start(db, tmp_path, pki, "--plain-tcp")
    try:
        stored, dropped, sess = crash_counts(c2)
    finally:
        assert c2.stop() == 0
    print(f"disk full: sent {sent} records, read {read} (+{partial} octets), stored {stored}, counted {dropped}")
    assert read > 0
    assert stored + dropped == read, (read, stored, dropped)
    assert sess["resource_drops"] >= dropped


# ------------------------------------------------------------ written, then retired

def test_written_epochs_then_retired(tmp_path, pki):
    """Epochs stored while retained (a settled one, an open one), then retired by the session's
    end: the settled one keeps its outcome and counters and gets its retirement time; the open
    one becomes incomplete ([SEQOBS] "Collector Processing": a session failure without
    finalEpoch leaves the epoch incomplete)."""
    c = start(tmp_path / "c.db", tmp_path, pki)
    try:
        s = c.connect()
        r1 = report(epoch=1, rid=1)
        s.sendall(templates_msg() + data_msg(r1, later(r1, 2, final=True), report(epoch=2, rid=1)))
        c.wait_for(lambda: count(c, "SELECT count(*) FROM epochs WHERE retired_ms IS NULL") == 2,
                   "both epochs stored while retained")
        close_tls(s)
        c.wait_ended(1)
        c.wait_for(lambda: count(c, "SELECT count(*) FROM epochs WHERE retired_ms IS NOT NULL") == 2,
                   "both epochs retired")
    finally:
        assert c.stop() == 0
    e1, e2 = epochs(c)
    assert (e1["outcome"], e1["state"], e1["reports_accepted"], e1["last_report_id"]) == ("complete", "final", 2, 2)
    assert e1["requests"] == later(r1, 2)["requests"] and e1["reason"] == ""
    assert e2["outcome"] == "incomplete" and "peer closed the session without a final report" in e2["reason"]


# ------------------------------------------------------------ a database of the earlier layout

EARLIER_LAYOUT = """
CREATE TABLE runs (id INTEGER PRIMARY KEY, started_ms INTEGER, stopped_ms INTEGER, listen TEXT, transport TEXT,
 max_sessions INTEGER, max_epochs INTEGER, max_raw_records INTEGER, inactivity_timeout_ms INTEGER, pen INTEGER);
CREATE TABLE sessions (id INTEGER PRIMARY KEY, run_id INTEGER, peer TEXT, peer_subject TEXT, transport TEXT,
 started_ms INTEGER, ended_ms INTEGER, end_reason TEXT, messages INTEGER DEFAULT 0, records INTEGER DEFAULT 0,
 octets INTEGER DEFAULT 0, rejected INTEGER DEFAULT 0, accepted INTEGER DEFAULT 0, repeats INTEGER DEFAULT 0,
 stale INTEGER DEFAULT 0, orphans INTEGER DEFAULT 0, unsupported INTEGER DEFAULT 0, invalid INTEGER DEFAULT 0,
 after_invalid INTEGER DEFAULT 0, key_conflicts INTEGER DEFAULT 0, resource_drops INTEGER DEFAULT 0,
 unbound INTEGER DEFAULT 0);
CREATE TABLE epoch_keys (id INTEGER PRIMARY KEY, session_id INTEGER, domain INTEGER, observation_point_id INTEGER,
 family INTEGER, src TEXT, dst TEXT, dest_qp INTEGER, pkey INTEGER, has_vlan_ns INTEGER, vlan_outer INTEGER,
 vlan_inner INTEGER, epoch_id INTEGER, first_seen_ms INTEGER);
CREATE INDEX epoch_keys_by_key ON epoch_keys(session_id, domain, epoch_id);
CREATE TABLE epoch_state (id INTEGER PRIMARY KEY, window INTEGER, flags INTEGER, flags_seen INTEGER,
 flow_start_ms INTEGER, flow_end_ms INTEGER, first_report_id INTEGER, last_report_id INTEGER,
 reports_accepted INTEGER, missing_initial INTEGER, missing_reports INTEGER, gaps INTEGER, repeats INTEGER,
 stale INTEGER, unsupported INTEGER, ignored INTEGER, requests INTEGER, skipped INTEGER, filled INTEGER,
 expired INTEGER, abandoned INTEGER, pending INTEGER, repeated INTEGER, unclassified_late INTEGER, state TEXT,
 outcome TEXT, reason TEXT, last_seen_ms INTEGER, retired_ms INTEGER);
CREATE VIEW epochs AS SELECT k.id AS id, session_id, domain, observation_point_id, family, src, dst, dest_qp, pkey,
 has_vlan_ns, vlan_outer, vlan_inner, epoch_id, window, flags, flags_seen, flow_start_ms, flow_end_ms,
 first_report_id, last_report_id, reports_accepted, missing_initial, missing_reports, gaps, repeats, stale,
 unsupported, ignored, requests, skipped, filled, expired, abandoned, pending, repeated, unclassified_late, state,
 outcome, reason, first_seen_ms, last_seen_ms, retired_ms FROM epoch_keys k JOIN epoch_state s ON s.id = k.id;
CREATE TABLE raw_records (id INTEGER PRIMARY KEY, session_id INTEGER, received_ms INTEGER, domain INTEGER,
 template_id INTEGER, epoch_id INTEGER, report_id INTEGER, flags INTEGER, verdict TEXT, reason TEXT, record BLOB,
 template BLOB);
CREATE TABLE drops (session_id INTEGER, kind TEXT, count INTEGER, first_ms INTEGER, last_ms INTEGER,
 last_detail TEXT, PRIMARY KEY(session_id, kind));
INSERT INTO runs (id, started_ms, listen, transport) VALUES (1, 1700000000000, '127.0.0.1:4740', 'tls');
INSERT INTO sessions (id, run_id, peer, started_ms) VALUES (1, 1, '127.0.0.1:1', 1700000000000);
INSERT INTO epoch_keys VALUES (1, 1, 0, 7, 4, '192.0.2.1', '192.0.2.2', 291, 65535, 0, 0, 0, 9, 1700000000000);
INSERT INTO epoch_state VALUES (1, 4, 32, 32, 1700000000000, 1700000000500, 1, 3, 3, 0, 0, 0, 0, 0, 0, 0,
 9, 3, 3, 0, 0, 0, 1, 0, 'open', 'open', '', 1700000000000, NULL);
"""


def test_earlier_layout_converted(tmp_path, pki):
    """A database written by the earlier layout (epoch_keys + epoch_state behind the view epochs),
    left by a run that died with a session open: converted at start, its rows kept with their IDs,
    the dead run's open epoch retired as incomplete, new IDs continue after the old ones."""
    db = tmp_path / "old.db"
    con = sqlite3.connect(str(db))
    con.executescript(EARLIER_LAYOUT)
    con.close()
    c = start(db, tmp_path, pki)
    try:
        c.wait_for(lambda: "collector restarted" in c.log(), "the recovery logged")
        s = c.connect()
        s.sendall(templates_msg() + data_msg(report(epoch=1, rid=1)))
        close_tls(s)
        c.wait_ended(2)
    finally:
        assert c.stop() == 0
    es = epochs(c)
    assert [e["id"] for e in es] == [1, 2]
    old = es[0]
    assert (old["epoch_id"], old["src"], old["requests"], old["last_report_id"]) == (9, "192.0.2.1", 9, 3)
    assert old["outcome"] == "incomplete" and "collector restarted" in old["reason"]
    assert es[1]["session_id"] == 2 and es[1]["outcome"] == "incomplete"
    assert c.query("SELECT count(*) AS n FROM sqlite_master WHERE name IN ('epoch_keys', 'epoch_state')")[0]["n"] == 0


# ------------------------------------------------------------ settled while retained: packed

def test_settled_epochs_stored_packed(tmp_path, pki):
    """Epochs settled by their final report stay retained (closure state, [SEQOBS] "Collector
    Processing") after the transaction that stores them: they are written packed, not as a row
    each (docs/collector.md "When the database is written"), and their retirement is recorded
    apart. Through the view epochs they read as rows would: a repeat after the write counts, the
    retirement time is the session's end, nothing is listed twice."""
    c = start(tmp_path / "c.db", tmp_path, pki)
    try:
        s = c.connect()
        s.sendall(templates_msg() + b"".join(epoch_stream(300, final=True)))
        c.wait_for(lambda: count(c, "SELECT count(*) FROM epochs WHERE retired_ms IS NULL") == 300,
                   "300 settled epochs stored while retained")
        assert count(c, "SELECT count(*) FROM epoch_rows") == 0  # no row per settled epoch
        s.sendall(data_msg(later(report(epoch=5, rid=1), 1, final=True), seq=0))  # identical repeat
        c.wait_for(lambda: count(c, "SELECT repeats FROM epochs WHERE epoch_id = 5") == 1, "the repeat stored")
        assert count(c, "SELECT count(*) FROM epochs") == 300
        close_tls(s)
        (sess,) = c.wait_ended(1)
        c.wait_for(lambda: count(c, "SELECT count(*) FROM epochs WHERE retired_ms IS NOT NULL") == 300,
                   "300 epochs retired")
    finally:
        assert c.stop() == 0
    es = epochs(c)
    assert [e["epoch_id"] for e in es] == list(range(1, 301))
    assert len({e["id"] for e in es}) == 300
    for e in es:
        assert (e["outcome"], e["state"], e["reason"]) == ("complete", "final", "")
        assert (e["reports_accepted"], e["first_report_id"], e["last_report_id"], e["missing_reports"]) == (1, 1, 1, 0)
        assert (e["requests"], e["skipped"], e["filled"], e["repeated"], e["pending"]) == (5, 1, 1, 1, 0)
        assert e["repeats"] == (1 if e["epoch_id"] == 5 else 0)
        assert e["retired_ms"] == sess["ended_ms"]  # retired by the session's end, at its time
    assert count(c, "SELECT count(*) FROM epoch_rows") <= 1  # at most the one changed after its write
    p = subprocess.run([BIN, "report", "--db", str(tmp_path / "c.db"), "--outcome", "complete", "--json"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.count('"retired_ms": null') == 0


def test_restart_after_kill_retires_packed_epochs(tmp_path, pki):
    """kill -9 after settled epochs were stored packed while retained: the restart retires them with
    their outcome (complete), and the open one as incomplete ("collector restarted")."""
    db = tmp_path / "c.db"
    c = start(db, tmp_path, pki)
    s = c.connect()
    s.sendall(templates_msg() + b"".join(epoch_stream(50, final=True)) + data_msg(report(epoch=51, rid=1), seq=0))
    c.wait_for(lambda: count(c, "SELECT count(*) FROM epochs WHERE retired_ms IS NULL") == 51, "epochs committed")
    kill9(c, s)
    c2 = start(db, tmp_path, pki)
    try:
        c2.wait_for(lambda: "collector restarted" in c2.log(), "the recovery logged")
        assert "50 settled epochs retired with their outcome" in c2.log()
    finally:
        assert c2.stop() == 0
    es = epochs(c2)
    assert len(es) == 51 and all(e["retired_ms"] is not None for e in es)
    assert all(e["outcome"] == "complete" for e in es[:50])
    assert es[50]["outcome"] == "incomplete" and "collector restarted" in es[50]["reason"]
    p = subprocess.run([BIN, "report", "--db", str(db), "--outcome", "open"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == ""


def test_packed_epochs_share_their_common_columns(tmp_path, pki):
    """Epochs packed in one transaction share most columns (session, key, times, outcome): each is
    stored as its differences from the chunk's first (docs/collector.md "What is stored"), some
    tens of octets instead of some two hundred, and reads back whole through the view epochs."""
    c = start(tmp_path / "c.db", tmp_path, pki)
    try:
        s = c.connect()
        rs = [later(report(epoch=e, rid=1, qp=0x100 + e), 1, final=True) for e in range(1, 301)]
        rs.append(report(epoch=301, rid=1))  # open: retired without a final, its own reason
        s.sendall(templates_msg() + b"".join(data_msg(*rs[i:i + 100], seq=0) for i in range(0, len(rs), 100)))
        close_tls(s)
        (sess,) = c.wait_ended(1)
    finally:
        assert c.stop() == 0
    es = epochs(c)
    assert [(e["epoch_id"], e["dest_qp"]) for e in es[:300]] == [(n, 0x100 + n) for n in range(1, 301)]
    assert all(e["outcome"] == "complete" and e["retired_ms"] == sess["ended_ms"] for e in es[:300])
    assert es[300]["outcome"] == "incomplete" and "without a final report" in es[300]["reason"]
    assert es[300]["requests"] == 5 and es[300]["retired_ms"] == sess["ended_ms"]
    (n, octets), = c.query("SELECT count(*), sum(length(data)) FROM epoch_archive")
    assert n >= 1 and octets / 301 < 80, octets / 301


def test_packed_epochs_with_their_own_addresses(tmp_path, pki):
    """Epochs packed in one chunk whose addresses differ from the chunk's first epoch (another IPv4
    source or destination, IPv6 in another Observation Domain, IPv6 octets equal to an IPv4 epoch's
    first four), one invalid, one with no accepted report (all columns: NULL where the base has
    values): each reads back through the view epochs with its own addresses, written as Python's
    ipaddress writes them, and its own state and outcome."""
    def v6(text):
        return ipaddress.ip_address(text).packed

    sent = [  # (domain, report): epoch IDs are per domain
        (0, later(report(epoch=1, rid=1), 1, final=True)),
        (0, later(report(epoch=2, rid=1, src=bytes([198, 51, 100, 7])), 1, final=True)),
        (0, later(report(epoch=3, rid=1, dst=bytes([203, 0, 113, 255])), 1, final=True)),
        (0, report(epoch=4, rid=1, window=0)),  # invalid: rdmaSequenceWindow 0
        (0, report(epoch=5, rid=1, flags=report()["flags"] | 0x0040)),  # unsupported only: no measurement
        (1, later(report(epoch=1, rid=1, src=v6("2001:db8::1"), dst=v6("2001:db8::2")), 1, final=True)),
        (1, later(report(epoch=2, rid=1, src=bytes([192, 0, 2, 1]) + bytes(12), dst=v6("2001:db8::ffff")), 1,
                  final=True)),
        (0, later(report(epoch=6, rid=1), 1, final=True)),  # the base's addresses again
    ]
    c = start(tmp_path / "c.db", tmp_path, pki)
    try:
        s = c.connect()
        msgs = templates_msg() + templates_msg(fields=V6, tid=300, domain=1)
        for dom, r in sent:
            msgs += data_msg(r, domain=dom, seq=0) if dom == 0 else data_msg(r, tid=300, fields=V6, domain=1, seq=0)
        s.sendall(msgs)
        close_tls(s)
        c.wait_ended(1)
    finally:
        assert c.stop() == 0
    assert count(c, "SELECT count(*) FROM epoch_archive") >= 1
    got = {(e["domain"], e["epoch_id"]): e for e in epochs(c)}
    assert len(got) == len(sent)
    for dom, r in sent:
        e = got[(dom, r["epoch"])]
        fam = 4 if len(r["src"]) == 4 else 6
        assert (e["family"], e["src"], e["dst"]) == (fam, str(ipaddress.ip_address(r["src"])),
                                                     str(ipaddress.ip_address(r["dst"]))), e
    assert (got[(0, 4)]["state"], got[(0, 4)]["outcome"]) == ("invalid", "invalid")
    assert got[(0, 5)]["outcome"] == "incomplete" and got[(0, 5)]["requests"] is None
    assert got[(0, 5)]["window"] is None and got[(0, 5)]["unsupported"] == 1
    for k in [(0, 1), (0, 2), (0, 3), (0, 6), (1, 1), (1, 2)]:
        assert (got[k]["state"], got[k]["outcome"], got[k]["requests"]) == ("final", "complete", 5), got[k]


EARLIER_ARCHIVE = """
CREATE TABLE runs (id INTEGER PRIMARY KEY, started_ms INTEGER, stopped_ms INTEGER, listen TEXT, transport TEXT,
 max_sessions INTEGER, max_epochs INTEGER, max_raw_records INTEGER, inactivity_timeout_ms INTEGER, pen INTEGER);
CREATE TABLE sessions (id INTEGER PRIMARY KEY, run_id INTEGER, peer TEXT, peer_subject TEXT, transport TEXT,
 started_ms INTEGER, ended_ms INTEGER, end_reason TEXT, messages INTEGER DEFAULT 0, records INTEGER DEFAULT 0,
 octets INTEGER DEFAULT 0, rejected INTEGER DEFAULT 0, accepted INTEGER DEFAULT 0, repeats INTEGER DEFAULT 0,
 stale INTEGER DEFAULT 0, orphans INTEGER DEFAULT 0, unsupported INTEGER DEFAULT 0, invalid INTEGER DEFAULT 0,
 after_invalid INTEGER DEFAULT 0, key_conflicts INTEGER DEFAULT 0, resource_drops INTEGER DEFAULT 0,
 unbound INTEGER DEFAULT 0);
CREATE TABLE epoch_archive (id INTEGER PRIMARY KEY, first_id INTEGER, last_id INTEGER, data TEXT);
INSERT INTO runs (id, started_ms, stopped_ms, listen, transport) VALUES (1, 1700000000000, 1700000009000, 'x', 'tls');
INSERT INTO sessions (id, run_id, peer, started_ms, ended_ms) VALUES (1, 1, '127.0.0.1:1', 1700000000000,
 1700000009000);
INSERT INTO epoch_archive (first_id, last_id, data) VALUES (1, 2, '[[1,1,0,7,4,"192.0.2.1","192.0.2.2",291,65535,0,0,0,9,4,33,33,1700000000000,1700000000500,1,3,3,0,0,0,0,0,0,0,9,3,3,0,0,0,1,0,"final","complete","",1700000000100,1700000000200,1700000009000],[2,1,0,7,4,"192.0.2.1","192.0.2.2",292,65535,0,0,0,10,null,null,0,null,null,null,null,0,0,0,0,0,0,0,0,null,null,null,null,null,null,null,null,"open","incomplete","no accepted report",1700000000300,1700000000300,1700000009000]]');
"""


def test_archive_of_an_earlier_version_read(tmp_path, pki):
    """Packed epochs written by an earlier version (epoch_archive without base: arrays of all columns)
    read back unchanged through the view epochs after a start, and new IDs continue after them."""
    db = tmp_path / "old.db"
    con = sqlite3.connect(str(db))
    con.executescript(EARLIER_ARCHIVE)
    con.close()
    c = start(db, tmp_path, pki)
    try:
        s = c.connect()
        s.sendall(templates_msg() + data_msg(later(report(epoch=1, rid=1), 1, final=True), seq=0))
        close_tls(s)
        c.wait_ended(2)
    finally:
        assert c.stop() == 0
    e1, e2, e3 = epochs(c)
    assert (e1["id"], e1["dest_qp"], e1["epoch_id"], e1["requests"], e1["last_report_id"]) == (1, 291, 9, 9, 3)
    assert (e1["outcome"], e1["state"], e1["retired_ms"], e1["flags"]) == ("complete", "final", 1700000009000, 33)
    assert (e2["id"], e2["requests"], e2["window"], e2["outcome"]) == (2, None, None, "incomplete")
    assert e2["reason"] == "no accepted report" and e2["last_seen_ms"] == 1700000000300
    assert (e3["id"], e3["session_id"], e3["outcome"]) == (3, 2, "complete")


# ------------------------------------------------------------ kill -9 under rocemeter's exporter: the exporter accounts

def crash_drops(c, session_id):
    """{kind: count} of the drops of a session."""
    return {r["kind"]: r["count"] for r in c.query("SELECT kind, count FROM drops WHERE session_id = ?", session_id)}


@pytest.mark.parametrize("trial", range(4))
def test_kill_under_rocemeter_exporter_loses_nothing_uncounted(tmp_path, pki, trial):
    """rocemeter's exporter streams over TLS 1.3; kill -9 of the collector at a random moment (in
    odd trials after freezing it for a random while, so that its kernel holds acknowledged octets
    it never read), restart on the same port. The exporter's next session reports the dead one;
    every record sent is read (stored, or a `collector-crash` drop), an `unread-at-crash` drop,
    or lost in flight (never acknowledged: the exporter's own count)."""
    from test_export import Driver, export_config  # the exporter's driver (selftests/system/test_export.c)

    rnd = random.Random(1000 + trial)
    db = tmp_path / "c.db"
    c = start(db, tmp_path, pki)
    try:
        d = Driver(export_config(tmp_path / "e.ini", pki, c.port, queue=50000, peer=COLLECTOR),
                   str(tmp_path / "exporter.log"))
    except BaseException:
        reap(c)  # the exporter did not start (e.g. test_export not built): never leave the collector running
        raise
    try:
        assert d.first == "started" and d.session() == 1
        end = time.monotonic() + rnd.uniform(0.1, 2.5)  # under load until a random moment
        while time.monotonic() < end:
            d.submit(1000)
            time.sleep(0.02)
        if trial % 2:
            freeze(c)
            for _ in range(3):
                d.submit(5000)
            time.sleep(rnd.uniform(0.2, 0.6))
        else:
            time.sleep(rnd.uniform(0, 0.05))
        kill9(c)
        c2 = start(db, tmp_path, pki, port=c.port)
        try:
            assert d.session(timeout_ms=60000) == 2
            d.submit(1000)
            assert d.cmd("flush 20000") == "flush 0"
            st = d.stop()
            c2.wait_ended(2)
            c2.wait_for(lambda: count(c2, "SELECT ended_ms FROM sessions WHERE id = 2"), "session 2 ended")
        finally:
            assert c2.stop() == 0
    finally:
        d.close()
        reap(c)  # a failure before the kill: never leave it running
    s1, s2 = c2.query("SELECT * FROM sessions ORDER BY id")
    drops = crash_drops(c2, 1)
    read1 = s1["records"] + s1["rejected"]
    crash, unread = drops.get("collector-crash", 0), drops.get("unread-at-crash", 0)
    stored = read1 - crash + s2["records"] + s2["rejected"]
    counted = crash + unread + st["lost_in_flight"]
    print(f"trial {trial}: sent {st['records_sent']} records, stored {stored}, counted {counted} "
          f"(collector-crash {crash}, unread-at-crash {unread}, lost in flight {st['lost_in_flight']}), "
          f"silently lost {st['records_sent'] - stored - counted}")
    assert st["sessions"] == 2 and st["sessions_lost"] == 1
    assert st["records_sent"] == stored + counted
    assert s1["resource_drops"] >= crash + unread
    if trial % 2:  # frozen: its kernel held acknowledged records it never read
        assert unread > 0 and "'unread-at-crash'" in c2.log()
    p = subprocess.run([BIN, "report", "--db", str(db), "--limits"], capture_output=True, text=True)
    assert p.returncode == 0
    if unread:
        assert "unread-at-crash" in p.stdout, p.stdout


def test_foreign_exporter_claims_nothing(tmp_path, pki):
    """A hand-encoded exporter (no Reliability record) after kill -9: the journal's count holds
    (part (a)), and no `unread-at-crash` drop is made up for its session."""
    n = 20000
    db = tmp_path / "c.db"
    c = start(db, tmp_path, pki, "--plain-tcp")
    size = len(epoch_stream(100)[0])
    read, partial, sent = kill_while_reading(c, templates_msg(), epoch_stream(n), n // 100 // 2 * size)
    c2 = start(db, tmp_path, pki, "--plain-tcp")
    try:
        s = c2.connect("plain")
        s.sendall(templates_msg() + data_msg(report(epoch=1, rid=1)))
        s.close()
        c2.wait_ended(2)
        stored, dropped, sess = crash_counts(c2)
    finally:
        assert c2.stop() == 0
    assert stored + dropped == read, (read, stored, dropped)
    assert "unread-at-crash" not in crash_drops(c2, 1)
