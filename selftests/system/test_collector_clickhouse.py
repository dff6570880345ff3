# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter collect --store clickhouse:URL` against real clickhouse-server
processes (tests/lib/clickhouse.py: plain processes, never the system
service), docs/fleet.md "Writing":

- one server: the collector rule scenarios of test_collector.py ([SEQOBS]
  "Collector Processing", hand-written IPFIX over TLS 1.3) give the same
  rows in ClickHouse as in SQLite (the SQLite outcomes are the ones
  test_collector.py checks against [SEQOBS]): epochs, sessions, raw
  records, drops, refused connections, IDs included;
- two servers as two shards behind Distributed tables, two collectors,
  several exporters each: the rows over the Distributed tables are the union
  of what each collector accepted (its metrics), nothing lost or duplicated;
- ClickHouse stopped for a while and started again under load: every
  retired epoch is in ClickHouse with its outcome or counted as a "store"
  drop (metrics, log, `drops`), and the sender says when it is back.
"""
import functools
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_collector as tc  # noqa: E402  the IPFIX vectors and the collector harness
from clickhouse import DATABASE, cluster, server, skip_reason  # noqa: E402
from collector_proc import freeze, kill9, kill_while_reading, reap  # noqa: E402
import procs  # noqa: E402  tests/lib: commands

ROOT = tc.ROOT
BIN = tc.BIN
WAIT = 60.0  # bound for rows to reach ClickHouse; never a timing assertion
U64 = 2**64 - 1

pytestmark = [pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built"),
              pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")]


wait_for = functools.partial(procs.wait_for, timeout=WAIT)


def store_init(ch, *extra):
    r = subprocess.run([BIN, "collect", "--store-init", "--store", ch.url, "--store-credentials", ch.credentials,
                        *extra], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def jrows(ch, sql):
    """sql's rows as dicts, (U)Int64 as Python integers (ClickHouse's JSON quotes them)."""
    j = json.loads(ch.query(sql + " FORMAT JSON", database=DATABASE))
    ints = {m["name"] for m in j["meta"] if re.search(r"Int64", m["type"])}
    return [{k: int(v) if k in ints and v is not None else v for k, v in r.items()} for r in j["data"]]


class CHCollector(tc.Collector):
    """The harness of test_collector.py with --store clickhouse:URL (the --db it passes is replaced)."""

    def __init__(self, tmp, pki, ch, cid, *extra, spool=None, plain=False, port=None):
        self.ch, self.cid = ch, cid
        self.spool = spool or os.path.join(str(tmp), "spool")
        super().__init__(tmp, pki, "--store", ch.url, "--store-credentials", ch.credentials,
                         "--collector-id", cid, "--store-spool-dir", self.spool, *extra, plain=plain, port=port)

    def ended(self):
        return jrows(self.ch, f"SELECT id FROM sessions FINAL WHERE collector_id = '{self.cid}'"
                              " AND isNotNull(ended_ms)")

    def wait_ended(self, n):
        wait_for(lambda: len(self.ended()) >= n, f"{n} ended sessions in ClickHouse")


# ------------------------------------------------------------ one server: the same outcomes as SQLite

def sc_complete(c):
    r1 = tc.report(epoch=3, rid=1)
    tc.send_session(c, tc.templates_msg(), tc.data_msg(r1, tc.later(r1, 2)), tc.data_msg(tc.later(r1, 3, True)))
    c.wait_ended(1)


def sc_ipv6_two_domains(c):
    r = tc.report(epoch=1, rid=1, src=bytes.fromhex("20010db8000000000000000000000001"),
                  dst=bytes.fromhex("20010db8000000000000000000000002"))
    tc.send_session(c, tc.templates_msg(tc.V6, 300, domain=1), tc.templates_msg(tc.V4, 256, domain=2),
                    tc.data_msg(r, tid=300, fields=tc.V6, domain=1),
                    tc.data_msg(tc.report(epoch=1, rid=1), domain=2))
    c.wait_ended(1)


def sc_gap_missing_initial(c):
    r3 = tc.report(epoch=4, rid=3)
    tc.send_session(c, tc.templates_msg(), tc.data_msg(r3), tc.data_msg(tc.later(r3, 6, final=True)))
    c.wait_ended(1)


def sc_unsigned64(c):
    r1 = tc.report(epoch=2**64 - 2, rid=2**63 + 1, obs=2**63 + 7, requests=2**63 + 5)
    tc.send_session(c, tc.templates_msg(), tc.data_msg(r1, tc.later(r1, 2**63 + 2, final=True)))
    c.wait_ended(1)


def sc_rules(c):
    a1 = tc.report(epoch=1, rid=1)
    b1 = tc.report(epoch=2, rid=1)
    c1 = tc.report(epoch=3, rid=1)
    e1 = tc.report(epoch=5, rid=1)
    tc.send_session(c, tc.templates_msg(),
                    tc.data_msg(a1, dict(tc.later(a1, 2), skipped=9), b1, dict(b1, report=2, requests=4), c1,
                                dict(c1, end=c1["end"] + 1), tc.report(epoch=4, flags=tc.GEN_UNVERIFIED | tc.SERIAL),
                                tc.later(e1, 2), e1, tc.report(epoch=6, flags=tc.GEN_UNVERIFIED | 0x0040),
                                tc.report(epoch=7, window=0)),
                    tc.data_msg(tc.report(epoch=3, rid=1)))
    c.wait_ended(1)


def sc_orphan_conflict_sessions(c):
    e5 = tc.report(epoch=5, rid=1)
    tc.send_session(c, tc.templates_msg(),
                    tc.data_msg(e5, tc.report(epoch=3, rid=1), dict(tc.later(e5, 2), qp=0x000999)))
    tc.send_session(c, tc.templates_msg(), tc.data_msg(tc.report(epoch=2, rid=1)))
    c.wait_ended(2)


def sc_undecodable(c):
    bad = bytearray(tc.data_msg(tc.report(epoch=2, rid=1)))
    tc.struct.pack_into(">H", bad, 18, len(bad) - 16 + 4)
    tc.send_session(c, tc.templates_msg(), bytes(bad), tc.data_msg(tc.report(epoch=1)),
                    tc.data_msg(tc.report(), tid=300))
    r1 = tc.report(epoch=1, rid=1)
    tc.send_session(c, tc.templates_msg(), tc.data_msg(r1), tc.data_msg(tc.later(r1, 2))[:70])
    c.wait_ended(2)


def sc_limits(c):
    s1 = c.connect()
    s1.sendall(tc.templates_msg() + tc.data_msg(tc.report(epoch=1), tc.report(epoch=2),
                                                tc.later(tc.report(epoch=2), 2)))
    time.sleep(0.5)  # the first session is admitted before the second connects (order, not speed)
    try:
        s2 = c.connect()
        s2.sendall(tc.templates_msg())
        s2.recv(1)
        s2.close()
    except (tc.ssl.SSLError, OSError):
        pass
    wait_for(lambda: "max_sessions" in c.log() or True, "refusal")
    time.sleep(1.5)  # the refused connection is counted at the next tick
    tc.close_tls(s1)
    c.wait_ended(1)


def sc_inactivity_raw_limit(c):
    s = c.connect()
    s.sendall(tc.templates_msg() + tc.data_msg(tc.report(epoch=1), tc.report(epoch=2, window=0),
                                               tc.report(epoch=3, window=0)))
    time.sleep(1.5)  # past the inactivity timeout (200 ms) and a tick
    s.sendall(tc.data_msg(tc.later(tc.report(epoch=1), 2)))
    tc.close_tls(s)
    c.wait_ended(1)


def sc_sigterm_open(c):
    s = c.connect()
    s.sendall(tc.templates_msg() + tc.data_msg(tc.report(epoch=1)))
    time.sleep(1.5)  # the report is read and the epoch written before the stop
    c.stop()
    s.close()


SCENARIOS = {
    "complete": (sc_complete, ()),
    "ipv6-two-domains": (sc_ipv6_two_domains, ()),
    "gap-missing-initial": (sc_gap_missing_initial, ()),
    "unsigned64": (sc_unsigned64, ()),
    "rules": (sc_rules, ()),
    "orphan-conflict-sessions": (sc_orphan_conflict_sessions, ()),
    "undecodable": (sc_undecodable, ()),
    "limits": (sc_limits, ("--max-epochs", "1", "--max-sessions", "1")),
    "inactivity-raw-limit": (sc_inactivity_raw_limit, ("--inactivity-timeout-ms", "200", "--max-raw-records", "1")),
    "sigterm-open": (sc_sigterm_open, ()),
}

# Columns compared as values; times (the collector's clock) only as present or NULL.
EPOCH_TIMES = {"first_seen_ms", "last_seen_ms", "retired_ms"}
SESSION_SKIP = {"peer", "started_ms", "ended_ms"}  # the exporter's port differs between the two runs


def u64(v):
    return v & U64 if isinstance(v, int) else v


def sqlite_rows(db, sql):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [{k: u64(r[k]) for k in r.keys()} for r in con.execute(sql)]
    finally:
        con.close()


def normal_epochs(rows):
    return [{k: (v is not None if k in EPOCH_TIMES else v) for k, v in r.items()
             if k not in ("collector_id", "version")} for r in rows]


def normal_sessions(rows):
    return [{k: v for k, v in r.items() if k not in SESSION_SKIP | {"collector_id", "version", "run_id"}}
            for r in rows]


def normal_raw(rows):
    return [{k: (bytes(v).hex() if k in ("record", "template") and v is not None else v) for k, v in r.items()
             if k not in ("collector_id", "received_ms")} for r in rows]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run([tc.GEN_CERTS, str(d)], check=True, capture_output=True)
    return str(d)


@pytest.fixture(scope="module")
def ch1(tmp_path_factory):
    with server(tmp_path_factory.mktemp("ch")) as ch:
        store_init(ch)
        yield ch


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_same_outcomes_as_sqlite(tmp_path, pki, ch1, name):
    run, extra = SCENARIOS[name]
    (tmp_path / "sq").mkdir()
    (tmp_path / "ch").mkdir()
    sq = tc.Collector(tmp_path / "sq", pki, *extra)
    try:
        run(sq)
    finally:
        sq.stop()
    cid = f"scn-{name}-{os.getpid()}"
    c = CHCollector(tmp_path / "ch", pki, ch1, cid, *extra)
    try:
        run(c)
    finally:
        assert c.stop() == 0
    q = f"collector_id = '{cid}'"
    # epochs: every column but the collector's clock, IDs included
    want = normal_epochs(sqlite_rows(sq.db, "SELECT * FROM epochs ORDER BY id"))
    got = normal_epochs(jrows(ch1, f"SELECT * FROM epochs FINAL WHERE {q} ORDER BY id"))
    assert got == want and want
    want = normal_sessions(sqlite_rows(sq.db, "SELECT * FROM sessions ORDER BY id"))
    got = normal_sessions(jrows(ch1, f"SELECT * FROM sessions FINAL WHERE {q} ORDER BY id"))
    assert got == want
    want = normal_raw(sqlite_rows(sq.db, "SELECT * FROM raw_records ORDER BY id"))
    got = jrows(ch1, f"SELECT id, session_id, domain, template_id, epoch_id, report_id, flags, verdict, reason,"
                     f" lower(hex(record)) AS record, if(isNull(template), NULL,"
                     f" lower(hex(assumeNotNull(template)))) AS template FROM raw_records WHERE {q} ORDER BY id")
    assert got == want
    want = sqlite_rows(sq.db, "SELECT session_id, kind, count FROM drops ORDER BY session_id, kind")
    got = jrows(ch1, f"SELECT session_id, kind, sum(count) AS count FROM drops WHERE {q}"
                     " GROUP BY session_id, kind ORDER BY session_id, kind")
    assert got == want
    want = sqlite_rows(sq.db, "SELECT source, outcome, count FROM connections ORDER BY source, outcome")
    got = jrows(ch1, f"SELECT source, outcome, sum(count) AS count FROM connections WHERE {q}"
                     " GROUP BY source, outcome ORDER BY source, outcome")
    assert got == want
    want = sqlite_rows(sq.db, "SELECT name, value FROM run_limits ORDER BY rowid")
    got = jrows(ch1, f"SELECT name, value FROM run_limits WHERE {q} ORDER BY seq")
    assert got == want
    (run_row,) = jrows(ch1, f"SELECT * FROM runs FINAL WHERE {q}")
    assert run_row["stopped_ms"] is not None and run_row["id"] == 1


@pytest.mark.parametrize("trial", range(3))
def test_kill_while_reading_loses_nothing_uncounted(tmp_path, pki, ch1, trial):
    """docs/collector.md "What the dead run had read", with ClickHouse: kill -9 at a random moment
    under load (frozen first, so that the kernel's queues say what the collector had read: the
    helpers of test_collector_store.py); after the restart with the same collector ID and spool
    directory (the journal is STORE_SPOOL_DIR/COLLECTOR_ID.TAG.received) every record read is in
    ClickHouse or a counted `collector-crash` drop of its session; silent loss 0."""
    import random

    from test_collector_store import epoch_stream

    rnd = random.Random(trial)
    n = 100000 if trial == 2 else 30000  # trial 2: long enough for batches to reach ClickHouse first
    cid = f"crash-{os.getpid()}-{trial}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    c = CHCollector(tmp_path / "a", pki, ch1, cid, plain=True)
    size = len(epoch_stream(100)[0])
    read, partial, sent = kill_while_reading(c, tc.templates_msg(), epoch_stream(n),
                                             rnd.randrange(n // 100 // 10, n // 100 * 9 // 10) * size)
    jdir = os.path.join(c.spool, spool_name(ch1.url, cid)[:-len(".spool")] + ".received")
    assert os.listdir(jdir) == ["1"], "the dead run's journal file of session 1"
    c2 = CHCollector(tmp_path / "b", pki, ch1, cid, spool=c.spool, plain=True)
    try:
        c2.wait_for(lambda: not os.listdir(jdir), "the journal read at the start")
    finally:
        assert c2.stop() == 0
    q = f"collector_id = '{cid}'"
    (st,) = jrows(ch1, f"SELECT toUInt64(sum(reports_accepted)) AS n FROM epochs FINAL WHERE {q} AND session_id = 1")
    (dr,) = jrows(ch1, f"SELECT toUInt64(sum(count)) AS n FROM drops WHERE {q} AND session_id = 1"
                       " AND kind = 'collector-crash'")
    (sess,) = jrows(ch1, f"SELECT * FROM sessions FINAL WHERE {q} AND id = 1")
    stored, dropped = st["n"] or 0, dr["n"] or 0
    print(f"clickhouse trial {trial}: sent {sent} records, read {read} (+{partial} octets), stored {stored}, "
          f"counted {dropped}, silently lost {read - stored - dropped}")
    assert read > 0
    assert stored + dropped == read, (read, stored, dropped)
    assert sess["records"] == read and sess["resource_drops"] >= dropped
    assert "collector restarted" in sess["end_reason"]
    if dropped:
        assert "collector-crash" in c2.log() and f"{dropped} of its" in c2.log()


@pytest.mark.parametrize("trial", range(2))
def test_kill_under_rocemeter_exporter_loses_nothing_uncounted(tmp_path, pki, ch1, trial):
    """docs/collector.md "What the dead run never read", with ClickHouse: rocemeter's exporter
    streams over TLS 1.3, kill -9 of the collector (trial 1: frozen with SIGSTOP first, so that its
    kernel holds acknowledged records it never read), restart on the same port with the same
    collector ID: the exporter's Reliability record is matched by the store's sender thread, and
    every record sent is stored, a `collector-crash` or `unread-at-crash` drop, or lost in flight."""
    import random

    from test_export import Driver, export_config

    rnd = random.Random(2000 + trial)
    cid = f"acked-{os.getpid()}-{trial}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    c = CHCollector(tmp_path / "a", pki, ch1, cid)
    try:
        d = Driver(export_config(tmp_path / "e.ini", pki, c.port, queue=50000, peer=tc.COLLECTOR),
                   str(tmp_path / "exporter.log"))
    except BaseException:
        reap(c)  # the exporter did not start (e.g. test_export not built): never leave the collector running
        raise
    q = f"collector_id = '{cid}'"
    try:
        assert d.first == "started" and d.session() == 1
        end = time.monotonic() + rnd.uniform(0.5, 2.0)
        while time.monotonic() < end:
            d.submit(1000)
            time.sleep(0.02)
        if trial % 2:
            freeze(c)
            for _ in range(3):
                d.submit(5000)
            time.sleep(0.4)
        kill9(c)
        c2 = CHCollector(tmp_path / "b", pki, ch1, cid, spool=c.spool, port=c.port)
        try:
            assert d.session(timeout_ms=60000) == 2
            d.submit(1000)
            assert d.cmd("flush 20000") == "flush 0"
            st = d.stop()
            c2.wait_ended(2)
            wait_for(lambda: "'unread-at-crash'" in c2.log() or "not counted" in c2.log(), "the report matched")
        finally:
            assert c2.stop() == 0
    finally:
        d.close()
        reap(c)  # a failure before the kill: never leave it running
    s1, s2 = jrows(ch1, f"SELECT * FROM sessions FINAL WHERE {q} ORDER BY id")
    drops = {r["kind"]: r["n"] for r in jrows(ch1, f"SELECT kind, toUInt64(sum(count)) AS n FROM drops"
                                                    f" WHERE {q} AND session_id = 1 GROUP BY kind")}
    crash, unread = drops.get("collector-crash", 0), drops.get("unread-at-crash", 0)
    stored = s1["records"] + s1["rejected"] - crash + s2["records"] + s2["rejected"]
    counted = crash + unread + st["lost_in_flight"]
    print(f"clickhouse trial {trial}: sent {st['records_sent']} records, stored {stored}, counted {counted} "
          f"(collector-crash {crash}, unread-at-crash {unread}, lost in flight {st['lost_in_flight']}), "
          f"silently lost {st['records_sent'] - stored - counted}")
    assert "not counted" not in c2.log(), c2.log()
    assert st["records_sent"] == stored + counted
    assert s1["resource_drops"] >= crash + unread
    if trial % 2:
        assert unread > 0


def test_restart_after_kill_as_sqlite(tmp_path, pki, ch1, request):
    """docs/collector.md "After a crash": a collector killed with an open session, started again
    with the same database / collector ID, ends that session and retires its epochs as SQLite does;
    the epochs of the session that had ended keep their outcome (a later version never brings an
    older state back)."""
    # The older versions this test needs must not be merged away meanwhile (the restart writes
    # parts of its own: the journal's counts).
    for t in ("sessions", "epochs"):
        ch1.query(f"SYSTEM STOP MERGES {DATABASE}.{t}")
        request.addfinalizer(lambda t=t: ch1.query(f"SYSTEM START MERGES {DATABASE}.{t}"))
    results = {}
    cid = f"restart-{os.getpid()}"
    for kind in ("sqlite", "clickhouse"):
        d = tmp_path / kind
        d.mkdir()

        def start():
            return tc.Collector(d, pki) if kind == "sqlite" else CHCollector(d, pki, ch1, cid)

        c = start()
        r1 = tc.report(epoch=3, rid=1)
        s = c.connect()
        s.sendall(tc.templates_msg() + tc.data_msg(r1))
        # stored open first (retired_ms NULL, the session not ended), then final and ended: in
        # ClickHouse an older version of each row has the NULLs the recovery looks for
        if kind == "sqlite":
            c.wait_for(lambda: c.query("SELECT id FROM epochs"), "epoch stored")
        else:
            wait_for(lambda: jrows(ch1, f"SELECT id FROM epochs WHERE collector_id = '{cid}'"), "epoch stored")
            wait_for(lambda: jrows(ch1, f"SELECT id FROM sessions WHERE collector_id = '{cid}'"), "session stored")
        s.sendall(tc.data_msg(tc.later(r1, 2, final=True)))
        tc.close_tls(s)
        c.wait_ended(1)
        s = c.connect()
        s.sendall(tc.templates_msg() + tc.data_msg(tc.report(epoch=1), tc.report(epoch=2)))
        if kind == "sqlite":
            c.wait_for(lambda: len(c.query("SELECT id FROM epochs WHERE session_id = 2")) == 2, "epochs stored")
        else:
            wait_for(lambda: len(jrows(ch1, f"SELECT id FROM epochs FINAL WHERE collector_id = '{cid}'"
                                            " AND session_id = 2")) == 2 and
                     len(jrows(ch1, f"SELECT id FROM sessions FINAL WHERE collector_id = '{cid}'")) == 2,
                     "epochs in ClickHouse")
        kill9(c, s)
        c = start()
        assert c.stop() == 0
        if kind == "sqlite":
            results[kind] = (sqlite_rows(c.db, "SELECT * FROM epochs ORDER BY id"),
                             sqlite_rows(c.db, "SELECT * FROM sessions ORDER BY id"))
        else:
            q = f"collector_id = '{cid}'"
            results[kind] = (jrows(ch1, f"SELECT * FROM epochs FINAL WHERE {q} ORDER BY id"),
                             jrows(ch1, f"SELECT * FROM sessions FINAL WHERE {q} ORDER BY id"))
    # the case the recovery must get right: the ended session and its epoch have older versions
    # with ended_ms / retired_ms NULL besides their latest one
    (v,) = jrows(ch1, f"SELECT countIf(session_id = 1 AND isNull(retired_ms)) AS old_e FROM epochs"
                      f" WHERE collector_id = '{cid}'")
    (w,) = jrows(ch1, f"SELECT countIf(id = 1 AND isNull(ended_ms)) AS old_s FROM sessions"
                      f" WHERE collector_id = '{cid}'")
    assert v["old_e"] >= 1 and w["old_s"] >= 1
    (ws, wss), (gs, gss) = results["sqlite"], results["clickhouse"]
    assert [e["outcome"] for e in ws] == ["complete", "incomplete", "incomplete"]
    assert all("collector restarted" in e["reason"] for e in ws[1:])
    assert normal_epochs(gs) == normal_epochs(ws)
    assert normal_sessions(gss) == normal_sessions(wss)


# ------------------------------------------------------------ load: IPFIX files replayed by exporters

def metrics(c):
    """The collector's /metrics as {series: value} (collect --metrics 127.0.0.1:0: the port is in its log)."""
    pat = r"metrics: serving /metrics on \S+ \(port (\d+)\)"
    c.wait_for(lambda: re.search(pat, c.log()), "metrics server")
    port = re.findall(pat, c.log())[-1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        body = r.read().decode()
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+) (\d+)$", body, re.M)}


def retired(m):
    return sum(m.get(f'rocemeter_collector_epochs_total{{outcome="{o}"}}', 0)
               for o in ("complete", "incomplete", "invalid"))


def ipfix_file(path, first_epoch, n_epochs, reports, per_msg=100):
    """An exporter's IPFIX file: Templates, then n_epochs epochs of `reports` reports each, the last
    final ([SEQOBS] "Verification Examples", example 1 counters), per_msg records per Message."""
    recs = []
    for k in range(reports):
        for e in range(first_epoch, first_epoch + n_epochs):
            r = tc.report(epoch=e, rid=1)
            recs.append(tc.later(r, k + 1, final=k == reports - 1) if k else
                        (tc.later(r, 1, final=True) if reports == 1 else r))
    with open(path, "wb") as f:
        f.write(tc.templates_msg())
        for i in range(0, len(recs), per_msg):
            f.write(tc.data_msg(*recs[i:i + per_msg], seq=i))
    return path


def replay_file(c, path):
    """Send an IPFIX file over one TLS 1.3 session (an exporter replaying it) and close."""
    with open(path, "rb") as f:
        data = f.read()
    s = c.connect()
    s.sendall(data)
    tc.close_tls(s)


def test_two_shards_two_collectors(tmp_path, pki):
    """Distributed tables over two shards, a collector writing through each server, three exporters
    per collector: the rows read over the Distributed tables (from either server) are the union of
    what each collector accepted, nothing lost or duplicated."""
    n_exp, n_epochs, reports = 3, 300, 3
    with cluster(tmp_path / "cl") as (a, b):
        for s in (a, b):
            store_init(s, "--cluster", a.cluster)
        cols = []
        for i, s in enumerate((a, b)):
            d = tmp_path / f"c{i}"
            d.mkdir()
            cols.append(CHCollector(d, pki, s, f"fleet-{i}-{os.getpid()}", "--metrics", "127.0.0.1:0"))
        files = [ipfix_file(tmp_path / f"e{i}-{j}.ipfix", 1 + j * n_epochs, n_epochs, reports)
                 for i in range(2) for j in range(n_exp)]
        threads = [threading.Thread(target=replay_file, args=(cols[i // n_exp], f)) for i, f in enumerate(files)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for c in cols:
            wait_for(lambda: metrics(c).get('rocemeter_collector_sessions_total{outcome="accepted"}') == n_exp and
                     metrics(c)["rocemeter_collector_sessions_open"] == 0, "sessions ended")
        accepted = [metrics(c) for c in cols]
        for c in cols:
            assert c.stop() == 0
        for i, (c, m) in enumerate(zip(cols, accepted)):
            # first principles: every exporter's epochs complete with all their reports
            assert m['rocemeter_collector_records_total{outcome="accepted"}'] == n_exp * n_epochs * reports
            assert m['rocemeter_collector_epochs_total{outcome="complete"}'] == n_exp * n_epochs
            assert m['rocemeter_collector_resource_drops_total{limit="store"}'] == 0
        want = {c.cid: (retired(m), m['rocemeter_collector_records_total{outcome="accepted"}'])
                for c, m in zip(cols, accepted)}
        for reader in (a, b):  # the Distributed tables answer the same from either server
            sql = ("SELECT collector_id, count() AS epochs, sum(reports_accepted) AS records,"
                   " countIf(outcome = 'complete') AS complete FROM epochs FINAL GROUP BY collector_id"
                   " ORDER BY collector_id")
            got = wait_for(lambda: (lambda r: r if {x["collector_id"]: (x["epochs"], x["records"])
                                                    for x in r} == want else None)(jrows(reader, sql)),
                           "every epoch over the Distributed table")
            assert all(x["complete"] == x["epochs"] for x in got)
            # nothing duplicated: one row per (collector, epoch ID) and session, whatever the versions
            (d,) = jrows(reader, "SELECT count() AS n, uniqExact(collector_id, session_id, domain, epoch_id) AS u"
                                 " FROM epochs FINAL")
            assert d["n"] == d["u"] == sum(e for e, _ in want.values())
            sessions = ("SELECT count() AS n, sum(accepted) AS acc FROM sessions FINAL WHERE isNotNull(ended_ms)")
            wait_for(lambda: jrows(reader, sessions)[0]["n"] >= 2 * n_exp, "every session over the Distributed table")
            (s,) = jrows(reader, sessions)
            assert s["n"] == 2 * n_exp and s["acc"] == sum(r for _, r in want.values())
        # each collector's rows live on one shard (sharding by collector ID)
        per_shard = [{x["collector_id"] for x in jrows(s, "SELECT DISTINCT collector_id FROM epochs_local")}
                     for s in (a, b)]
        assert not (per_shard[0] & per_shard[1]) and per_shard[0] | per_shard[1] == set(want)


def test_cluster_restart_reuses_no_id(tmp_path, pki):
    """A collector writing through one server to a Distributed table whose shard for its collector
    ID is the other server, killed and started again while its last rows still wait in the first
    server's queue for the other shard (the servers forward queued rows only every 20 s here): the
    new run must not hand out the session and run IDs of those rows again (ReplacingMergeTree
    would fold two sessions into one). The writer's INSERTs are synchronous
    (insert_distributed_sync=1): they return once the shard has the rows."""
    with cluster(tmp_path / "cl", settings={"distributed_directory_monitor_sleep_time_ms": 20000}) as (a, b):
        for s in (a, b):
            store_init(s, "--cluster", a.cluster)
        # a collector ID that the Distributed tables shard to b (shard index 1)
        cid = next(f"remote-{os.getpid()}-{i}" for i in range(64)
                   if a.query(f"SELECT sipHash64('remote-{os.getpid()}-{i}') % 2").strip() == "1")
        d = tmp_path / "c"
        d.mkdir()
        c = CHCollector(d, pki, a, cid)
        tc.send_session(c, tc.templates_msg(), tc.data_msg(tc.later(tc.report(epoch=1, rid=1), 1, final=True)))
        queued = os.path.join(a.root, "data", DATABASE)

        def sent():
            """The ended session is on b, or waits in a's queue for b (.bin files of the Distributed table)."""
            on_b = jrows(b, f"SELECT id FROM sessions_local FINAL WHERE collector_id = '{cid}'"
                            " AND isNotNull(ended_ms)")
            waiting = [f for _, _, fs in os.walk(queued) for f in fs if f.endswith(".bin")]
            return on_b or waiting
        wait_for(sent, "the first session written")
        kill9(c)
        c = CHCollector(d, pki, a, cid)
        tc.send_session(c, tc.templates_msg(), tc.data_msg(tc.later(tc.report(epoch=2, rid=1), 1, final=True)))
        assert c.stop() == 0
        for reader in (a, b):
            got = wait_for(lambda: (lambda r: r if len(r) >= 2 else None)(
                jrows(reader, f"SELECT id, accepted FROM sessions FINAL WHERE collector_id = '{cid}' ORDER BY id")),
                "both sessions over the Distributed table")
            assert [(x["id"], x["accepted"]) for x in got] == [(1, 1), (2, 1)]
            runs = jrows(reader, f"SELECT id FROM runs FINAL WHERE collector_id = '{cid}' ORDER BY id")
            assert [x["id"] for x in runs] == [1, 2]
        assert jrows(b, f"SELECT count() AS n FROM sessions_local FINAL WHERE collector_id = '{cid}'")[0]["n"] == 2


def load(c, stop, first_epoch, n_epochs=200, sent=None):
    """Sessions of n_epochs one-report final epochs each, one after the other, until stop is set;
    sent (a list) gets n_epochs for each session sent whole."""
    e = first_epoch
    while not stop.is_set():
        recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(e, e + n_epochs)]
        tc.send_session(c, tc.templates_msg(), tc.data_msg(*recs[:100]), tc.data_msg(*recs[100:], seq=100))
        if sent is not None:
            sent.append(n_epochs)
        e += n_epochs


def test_outage_under_load(tmp_path, pki):
    """ClickHouse stopped for a while and started again while exporters send: the loop goes on,
    the buffer (--store-buffer-bytes) fills, what it cannot take is counted as "store" drops; once
    ClickHouse is back every retired epoch is either in ClickHouse with its outcome or a drop."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"outage-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid, "--metrics", "127.0.0.1:0", "--store-buffer-bytes", "262144")
        stop = threading.Event()
        t = threading.Thread(target=load, args=(c, stop, 1))
        t.start()
        try:
            wait_for(lambda: jrows(ch, f"SELECT count() AS n FROM epochs WHERE collector_id = '{cid}'")[0]["n"],
                     "rows in ClickHouse")
            ch.stop()
            wait_for(lambda: metrics(c)["rocemeter_collector_store_unavailable"] == 1, "the store unavailable")
            wait_for(lambda: metrics(c)['rocemeter_collector_resource_drops_total{limit="store"}'] > 0,
                     "store drops while ClickHouse is down")
            ch.start()
            wait_for(lambda: metrics(c)["rocemeter_collector_store_unavailable"] == 0, "the store back")
        finally:
            stop.set()
            t.join()
        wait_for(lambda: metrics(c)["rocemeter_collector_sessions_open"] == 0, "sessions ended")
        m = metrics(c)
        assert c.stop() == 0
        log = c.log()
        assert "ClickHouse store unavailable" in log and "ClickHouse store available again" in log
        assert "collector resource drops of kind store" in log
        # every drop is in a log line (a summary is due on a timer, not only at the next drop),
        # with the sessions named
        assert log_drops(log) == m['rocemeter_collector_resource_drops_total{limit="store"}'], log
        assert re.search(r"store drops? since the last line \([^)]*session \d+: \d+", log), log
        dropped = m['rocemeter_collector_resource_drops_total{limit="store"}']
        q = f"collector_id = '{cid}'"
        # the sum check: every retired epoch is stored with its outcome or counted
        (r,) = jrows(ch, f"SELECT count() AS n FROM epochs FINAL WHERE {q} AND isNotNull(retired_ms)")
        assert r["n"] + dropped == retired(m) and dropped > 0 and r["n"] > 0
        # the drops reached ClickHouse too, per session, once it was back
        (d,) = jrows(ch, f"SELECT sum(count) AS n FROM drops WHERE {q} AND kind = 'store'")
        assert d["n"] == dropped


def final_session(c, first, n):
    """One TLS session of n one-report final epochs from epoch first, 100 records per Message."""
    recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(first, first + n)]
    tc.send_session(c, tc.templates_msg(), *[tc.data_msg(*recs[i:i + 100], seq=i) for i in range(0, n, 100)])


class Attempts(threading.Thread):
    """A listener on a stopped server's HTTP port that accepts and closes each connection (a server
    going down or coming up): the times of the sender's attempts."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self.sock.settimeout(0.05)
        self.times, self.done = [], threading.Event()
        self.start()

    def run(self):
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.times.append(time.monotonic())
            conn.close()
        self.sock.close()

    def close(self):
        self.done.set()
        self.join()


def test_no_drops_once_clickhouse_is_back(tmp_path, pki):
    """After an outage the collector once went on dropping for 6-15 s once ClickHouse was back
    (the sender's backoff had grown to 5 s). A server that refuses or closes connections is tried
    every RM_CHSTORE_RETRY_MIN_MS (docs/fleet.md "Writing"): ClickHouse stopped, a session sent
    (the buffer fills: "store" drops), the port held by a listener that closes each connection for
    7 s, then ClickHouse started right after one of the sender's attempts, and 2 s later another
    session: every epoch of it is stored, none counted as dropped."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"back-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid, "--metrics", "127.0.0.1:0", "--store-buffer-bytes", "262144")
        drops = 'rocemeter_collector_resource_drops_total{limit="store"}'
        q = f"collector_id = '{cid}'"
        try:
            final_session(c, 1, 100)
            wait_for(lambda: jrows(ch, f"SELECT count() AS n FROM epochs WHERE {q}")[0]["n"], "rows in ClickHouse")
            ch.stop()
            final_session(c, 1000, 3000)  # about 1 MB of epoch rows into a buffer of 256 KiB
            wait_for(lambda: metrics(c)[drops] > 0, "store drops while ClickHouse is down")
            a = Attempts(ch.http)
            try:
                time.sleep(7)  # the old backoff doubled to 5 s by now (0.1 + 0.2 + ... + 3.2 s)
                n = len(a.times)
                wait_for(lambda: len(a.times) > n, "an attempt of the sender", timeout=10)
            finally:
                a.close()
            ch.start()
            before = metrics(c)[drops]
            # the documented bound: RM_CHSTORE_RETRY_MIN_MS, then the INSERT of the rows waiting; with
            # margin for a loaded machine, and well before the old backoff's next attempt (5 s)
            time.sleep(2)
            final_session(c, 10000, 200)
            wait_for(lambda: metrics(c)["rocemeter_collector_sessions_open"] == 0, "sessions ended")
            wait_for(lambda: jrows(ch, f"SELECT count() AS n FROM epochs FINAL WHERE {q} AND session_id = 3"
                                       " AND isNotNull(retired_ms)")[0]["n"] == 200 or metrics(c)[drops] > before,
                     "the last session's epochs stored or dropped")
            assert metrics(c)[drops] == before, c.log()
            (r,) = jrows(ch, f"SELECT count() AS n FROM epochs FINAL WHERE {q} AND session_id = 3"
                             " AND outcome = 'complete' AND isNotNull(retired_ms)")
            assert r["n"] == 200
        finally:
            assert c.stop() == 0


def test_frozen_clickhouse_drops_count_each_epoch_once(tmp_path, pki):
    """clickhouse-server frozen (SIGSTOP: its sockets still accept, its requests
    time out) for 10 s under load with a 1 MiB buffer, then thawed. A long session's 2,000 final
    epochs are in ClickHouse (their rows while retained) before the freeze, and it ends while the
    buffer is full: their retirements wait (a row exists: never a drop). A "store" drop counts one
    retired epoch not stored, once: the distinct epochs in ClickHouse plus the store drops are
    exactly the epochs the exporters sent (each accepted and retired: epochs_total), and every
    stored epoch has its retirement."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"frozen-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid, "--metrics", "127.0.0.1:0", "--store-buffer-bytes", "1048576")
        q = f"collector_id = '{cid}'"
        long_n, first_load = 2000, 10001
        recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(1, long_n + 1)]
        held = c.connect()
        held.sendall(tc.templates_msg())
        for i in range(0, long_n, 100):
            held.sendall(tc.data_msg(*recs[i:i + 100], seq=1 + i))
        wait_for(lambda: jrows(ch, f"SELECT count() AS n FROM epochs WHERE {q}")[0]["n"] == long_n,
                 "the long session's epochs in ClickHouse while it is open")
        stop = threading.Event()
        sent = [long_n]
        t = threading.Thread(target=load, args=(c, stop, first_load, 200, sent))
        t.start()
        try:
            ch.proc.send_signal(signal.SIGSTOP)
            try:
                wait_for(lambda: metrics(c)['rocemeter_collector_resource_drops_total{limit="store"}'] > 0,
                         "store drops while ClickHouse is frozen")
                tc.close_tls(held)  # its 2,000 retirements meet a full buffer
                wait_for(lambda: retired(metrics(c)) >= long_n, "the long session's epochs retired")
                time.sleep(8)
            finally:
                ch.proc.send_signal(signal.SIGCONT)
            time.sleep(3)  # load goes on with ClickHouse back
        finally:
            stop.set()
            t.join()
        wait_for(lambda: metrics(c)["rocemeter_collector_sessions_open"] == 0, "sessions ended")
        wait_for(lambda: metrics(c)["rocemeter_collector_store_buffer_bytes"] == 0, "every row sent")
        m = metrics(c)
        assert c.stop() == 0
        dropped = m['rocemeter_collector_resource_drops_total{limit="store"}']
        (r,) = jrows(ch, f"SELECT uniqExact(epoch_id) AS n, countIf(isNull(retired_ms)) AS open FROM epochs FINAL"
                         f" WHERE {q}")
        assert retired(m) == sum(sent)
        assert r["n"] + dropped == sum(sent) and dropped > 0, (r, dropped, sum(sent))
        assert r["open"] == 0
        (h,) = jrows(ch, f"SELECT count() AS n FROM epochs FINAL WHERE {q} AND epoch_id <= {long_n}"
                         " AND isNotNull(retired_ms) AND outcome = 'complete'")
        assert h["n"] == long_n
        (d,) = jrows(ch, f"SELECT sum(count) AS n FROM drops WHERE {q} AND kind = 'store'")
        assert d["n"] == dropped
        assert log_drops(c.log()) == dropped


def collect_once(tmp, url, *extra):
    """`collect --store URL` (plain TCP) expected to refuse at start: its CompletedProcess (one that
    is still running after WAIT s is stopped and reported as it ended)."""
    port = tc.free_port()
    p = subprocess.Popen([BIN, "collect", "--listen", f"127.0.0.1:{port}", "--plain-tcp", "--store", url,
                          "--store-spool-dir", os.path.join(str(tmp), "spool"), *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def log_drops(log):
    """The store drops the collector's log lines account for: each "N store drops since the last line"."""
    return sum(int(n) for n in re.findall(r"ClickHouse store: (\d+) store drops? since the last line", log))


def test_sigterm_while_clickhouse_down_spooled(tmp_path, pki):
    """SIGTERM while ClickHouse is down: what waits is spooled to a file (one per collector ID in
    --store-spool-dir) and sent first at the next start, then the file is removed: every epoch sent
    is in ClickHouse (first principles: 50 one-report final epochs = 50 complete outcomes), the first
    run's stop and its session's end included; nothing is a store drop."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"spool-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid)
        ch.stop()
        recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(1, 51)]
        tc.send_session(c, tc.templates_msg(), tc.data_msg(*recs))
        c.wait_for(lambda: "ClickHouse store unavailable" in c.log(), "the store unavailable")
        assert c.stop() == 0
        log = c.log()
        spool = os.path.join(c.spool, spool_name(ch.url, cid))
        assert os.path.exists(spool), log
        assert "spooled to" in log and "not spooled" not in log and "since the last line" not in log, log
        ch.start()
        c = CHCollector(tmp_path, pki, ch, cid)
        c.wait_for(lambda: not os.path.exists(spool), "the spool sent and removed")
        assert c.stop() == 0
        q = f"collector_id = '{cid}'"
        got = jrows(ch, f"SELECT epoch_id, outcome, session_id FROM epochs FINAL WHERE {q} ORDER BY epoch_id")
        assert [(e["epoch_id"], e["outcome"], e["session_id"]) for e in got] == [(x, "complete", 1)
                                                                               for x in range(1, 51)]
        sessions = jrows(ch, f"SELECT id, accepted, end_reason FROM sessions FINAL WHERE {q} ORDER BY id")
        assert [(s["id"], s["accepted"]) for s in sessions] == [(1, 50)]
        assert "restarted" not in (sessions[0]["end_reason"] or "")
        runs = jrows(ch, f"SELECT id, stopped_ms FROM runs FINAL WHERE {q} ORDER BY id")
        assert [r["id"] for r in runs] == [1, 2] and all(r["stopped_ms"] is not None for r in runs)
        (d,) = jrows(ch, f"SELECT count() AS n FROM drops WHERE {q}")
        assert d["n"] == 0


def test_spool_waits_while_clickhouse_stays_down(tmp_path, pki):
    """A start while ClickHouse is still down: the spool waits (queued first, IDs from the clock),
    a second SIGTERM writes it again with the new rows, and the start after ClickHouse is back sends
    everything: 50 + 30 one-report final epochs, all complete, the spool file removed."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"respool-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid)
        ch.stop()
        spool = os.path.join(c.spool, spool_name(ch.url, cid))
        for first, n in ((1, 50), (51, 30)):
            if first > 1:
                c = CHCollector(tmp_path, pki, ch, cid)
                c.wait_for(lambda: "the spool" in c.log() and "waits" in c.log(), "the spool waiting")
            recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(first, first + n)]
            tc.send_session(c, tc.templates_msg(), tc.data_msg(*recs))
            c.wait_for(lambda: "ClickHouse store unavailable" in c.log(), "the store unavailable")
            assert c.stop() == 0
            assert os.path.exists(spool) and "spooled to" in c.log(), c.log()
        ch.start()
        c = CHCollector(tmp_path, pki, ch, cid)
        c.wait_for(lambda: not os.path.exists(spool), "the spool sent and removed")
        assert c.stop() == 0
        q = f"collector_id = '{cid}'"
        got = jrows(ch, f"SELECT epoch_id, outcome FROM epochs FINAL WHERE {q} ORDER BY epoch_id")
        assert [(e["epoch_id"], e["outcome"]) for e in got] == [(x, "complete") for x in range(1, 81)]
        (s,) = jrows(ch, f"SELECT count() AS n, sum(accepted) AS acc, countIf(isNull(ended_ms)) AS open"
                         f" FROM sessions FINAL WHERE {q}")
        assert (s["n"], s["acc"], s["open"]) == (2, 80, 0)
        (r,) = jrows(ch, f"SELECT count() AS n, countIf(isNull(stopped_ms)) AS open FROM runs FINAL WHERE {q}")
        assert (r["n"], r["open"]) == (3, 0)


def test_sigterm_spool_impossible_counts_drops(tmp_path, pki):
    """A spool directory that cannot be made at close (its parent removed while the collector ran; at
    start the collector makes it): what waits at close is a counted store drop, logged with the
    count (50 epoch outcomes)."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"nospool-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid, spool=str(tmp_path / "missing" / "spool"))
        shutil.rmtree(tmp_path / "missing")
        ch.stop()
        recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(1, 51)]
        tc.send_session(c, tc.templates_msg(), tc.data_msg(*recs))
        c.wait_for(lambda: "ClickHouse store unavailable" in c.log(), "the store unavailable")
        assert c.stop() == 0
        m = re.search(r"not spooled \(collector resource drops of kind store\): (\d+) epoch outcomes", c.log())
        assert m and int(m.group(1)) == 50, c.log()


def test_same_collector_id_refused(tmp_path, pki):
    """A second collector with the collector ID of a running one exits 2 with the reason, and leaves
    the running one's session open (not ended as "collector restarted"); once the first stopped,
    the ID is free again."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"twin-{os.getpid()}"
        (tmp_path / "a").mkdir()
        a = CHCollector(tmp_path / "a", pki, ch, cid)
        try:
            s = a.connect()
            s.sendall(tc.templates_msg() + tc.data_msg(tc.report(epoch=1)))
            q = f"collector_id = '{cid}'"
            wait_for(lambda: jrows(ch, f"SELECT id FROM sessions WHERE {q}"), "the session stored")
            r = collect_once(tmp_path, ch.url, "--store-credentials", ch.credentials, "--collector-id", cid)
            assert r.returncode == 2, r.stderr
            assert f"collector ID {cid} is in use by a running collector (run 1" in r.stderr, r.stderr
            assert "--collector-id" in r.stderr
            time.sleep(1.5)  # order, not speed: a recovery would have written by now
            got = jrows(ch, f"SELECT id, ended_ms FROM sessions FINAL WHERE {q}")
            assert [(x["id"], x["ended_ms"]) for x in got] == [(1, None)]
            assert jrows(ch, f"SELECT count() AS n FROM runs FINAL WHERE {q}")[0]["n"] == 1
            tc.close_tls(s)
        finally:
            assert a.stop() == 0
        (tmp_path / "b").mkdir()
        b = CHCollector(tmp_path / "b", pki, ch, cid)
        assert b.stop() == 0
        runs = jrows(ch, f"SELECT id FROM runs FINAL WHERE {q} ORDER BY id")
        assert [x["id"] for x in runs] == [1, 2]


def test_refusal_at_start_is_configuration_error(tmp_path):
    """What a retry cannot mend exits 2 at start with the fix to make: a wrong password, no
    credentials (ClickHouse's user default has its own password here), an unknown database, a
    database without the tables. An unreachable server is an outage: the collector starts."""
    with server(tmp_path / "ch") as ch:
        wrong = tmp_path / "wrong"
        wrong.write_text("user=rocemeter\npassword=not-the-password\n")
        wrong.chmod(0o600)
        ch.query("CREATE DATABASE IF NOT EXISTS empty")
        base = ch.url.split("?")[0]
        cases = [
            ("wrong password", ch.url, ["--store-credentials", str(wrong)], "store_credentials"),
            ("no credentials", ch.url, [], "store_credentials"),
            ("unknown database", base + "?database=nosuch", ["--store-credentials", ch.credentials],
             "--store-init"),
            ("no tables", base + "?database=empty", ["--store-credentials", ch.credentials], "--store-init"),
        ]
        for what, url, extra, hint in cases:
            r = collect_once(tmp_path, url, "--collector-id", "refused", *extra)
            assert r.returncode == 2, (what, r.returncode, r.stderr)
            assert "listening on" not in r.stderr and hint in r.stderr, (what, r.stderr)
    # unreachable at start: an outage (start, buffer, retry), not a configuration error
    (tmp_path / "down").mkdir()
    port = tc.free_port()
    d = tmp_path / "down"
    err = open(d / "log", "w")
    p = subprocess.Popen([BIN, "collect", "--listen", f"127.0.0.1:{tc.free_port()}", "--plain-tcp", "--store",
                          f"clickhouse:http://127.0.0.1:{port}/?database={DATABASE}",
                          "--store-spool-dir", str(d / "spool"), "--collector-id", "down"], stderr=err)
    try:
        wait_for(lambda: "listening on" in (d / "log").read_text() or p.poll() is not None, "start")
        assert p.poll() is None, (d / "log").read_text()
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=WAIT) == 0
        err.close()
    assert re.search(r"warning.*ClickHouse store", (d / "log").read_text(), re.I | re.S)


def test_refusal_at_run_time_retried_and_named(tmp_path, pki):
    """The collector's password changed on the server while it runs: its INSERTs are refused, it
    keeps running and retrying, logs an error naming the cause and the fix (store_credentials),
    and once the password is back every epoch arrives."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"runrefused-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid)
        users = os.path.join(ch.root, "users.xml")
        with open(users) as f:
            orig = f.read()
        old = ch.password

        def restart_with(text, password):
            """The server restarted with another users file (18.16 reads it at start)."""
            ch.stop()
            with open(users, "w") as f:
                f.write(text)
            ch.password = password
            ch.start()
        restart_with(orig.replace(f"<password>{old}</password>", "<password>changed-password</password>"),
                     "changed-password")
        try:
            recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(1, 21)]
            tc.send_session(c, tc.templates_msg(), tc.data_msg(*recs))
            c.wait_for(lambda: "refused, check store_credentials" in c.log(), "the refusal logged")
            line = next(x for x in c.log().splitlines() if "refused, check store_credentials" in x)
            assert re.search(r"Z err(or)? ", line) and "ClickHouse store" in line, line
        finally:
            restart_with(orig, old)
        c.wait_for(lambda: "ClickHouse store available again" in c.log(), "the store back")
        assert c.stop() == 0
        got = jrows(ch, f"SELECT count() AS n FROM epochs FINAL WHERE collector_id = '{cid}'"
                        " AND outcome = 'complete'")
        assert got[0]["n"] == 20


def test_startup_log_and_buffer_metrics(tmp_path, pki):
    """The start-up log line names the store, the collector ID and the buffer size; the metrics
    give the buffer's capacity (--store-buffer-bytes) and the octets waiting in it (more than 0
    while ClickHouse is down and a session's rows wait)."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"metrics-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid, "--metrics", "127.0.0.1:0", "--store-buffer-bytes", "262144")
        line = next(x for x in c.log().splitlines() if "listening on" in x)
        assert f"collector ID {cid}" in line and "store_buffer_bytes 262144" in line and f"127.0.0.1:{ch.http}" in line, line
        m = metrics(c)
        assert m["rocemeter_collector_store_buffer_capacity_bytes"] == 262144
        wait_for(lambda: metrics(c)["rocemeter_collector_store_buffer_bytes"] == 0, "the run's rows sent")
        ch.stop()
        recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(1, 11)]
        tc.send_session(c, tc.templates_msg(), tc.data_msg(*recs))
        wait_for(lambda: metrics(c)["rocemeter_collector_store_buffer_bytes"] > 0, "rows waiting")
        assert metrics(c)["rocemeter_collector_store_buffer_bytes"] <= 262144
        ch.start()
        wait_for(lambda: metrics(c)["rocemeter_collector_store_buffer_bytes"] == 0, "rows sent")
        assert c.stop() == 0


def test_spool_dir_made_at_start_without_an_error(tmp_path, pki):
    """A collector started by hand whose spool directory and its parent are missing (the default
    /var/lib/rocemeter/spool outside the unit's StateDirectory) makes them, mode 0700, and says so at
    info level: no error-level line (it was "received-Messages journal ...: No such file or
    directory"), and the received-Messages journal is there from the start."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"byhand-{os.getpid()}"
        spool = tmp_path / "state" / "rocemeter" / "spool"
        c = CHCollector(tmp_path, pki, ch, cid, "--log-level", "info", spool=str(spool))
        try:
            log = c.log()
            assert not [x for x in log.splitlines() if " err " in x], log
            assert f"made the spool directory {spool} (mode 0700)" in log, log
            assert spool.is_dir() and spool.stat().st_mode & 0o777 == 0o700
            assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700
            assert os.path.isdir(os.path.join(spool, spool_name(ch.url, cid)[:-len(".spool")] + ".received"))
        finally:
            assert c.stop() == 0


# ------------------------------------------------------------ a second operator trial

def spool_name(url, cid):
    """docs/fleet.md "Spool": COLLECTOR_ID.STORE.spool, STORE the first 12 hexadecimal digits of the
    SHA-256 of the store's base URL and database as "http[s]://HOST:PORT/?database=DB"."""
    import hashlib
    base, db = url[len("clickhouse:"):].split("?database=")
    return f"{cid}.{hashlib.sha256(f'{base}?database={db}'.encode()).hexdigest()[:12]}.spool"


def spool_files(c):
    return sorted(f for f in os.listdir(c.spool) if f.endswith(".spool")) if os.path.isdir(c.spool) else []


def test_spool_counts_same_at_close_and_start(tmp_path, pki):
    """docs/fleet.md "Spool": the spool's close line and the next start's line count the same things
    (first principles: 50 one-report final epochs = 50 epoch outcomes in both lines)."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"counts-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid)
        ch.stop()
        recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(1, 51)]
        tc.send_session(c, tc.templates_msg(), tc.data_msg(*recs))
        c.wait_for(lambda: "ClickHouse store unavailable" in c.log(), "the store unavailable")
        assert c.stop() == 0
        m = re.search(r"spooled to \S+ .*?: (\d+) epoch outcomes, (\d+) raw records", c.log())
        assert m and int(m.group(1)) == 50, c.log()
        ch.start()
        c = CHCollector(tmp_path, pki, ch, cid)
        c.wait_for(lambda: not spool_files(c), "the spool sent and removed")
        assert c.stop() == 0
        s = re.search(r"the spool \S+ \((\d+) epoch outcomes, (\d+) raw records[^)]*\) sent and removed", c.log())
        assert s and s.groups() == m.groups(), c.log()


def test_spool_of_another_store_not_sent(tmp_path, pki):
    """A spool written by runs against another store (here ?database=nosuch while ClickHouse was
    down) is not sent to this one: it is kept, and the log names its store and how to send or
    remove it; nothing of those runs arrives in this database. Runs that never reached ClickHouse
    and received no session leave nothing to spool."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"other-{os.getpid()}"
        ch.stop()
        nosuch = ch.url.split("?")[0] + "?database=nosuch"
        spool = str(tmp_path / "spool")

        def collector(url):
            c = tc.Collector(tmp_path, pki, "--store", url, "--store-credentials", ch.credentials,
                             "--collector-id", cid, "--store-spool-dir", spool)
            c.spool, c.ch, c.cid = spool, ch, cid
            return c
        for _ in range(3):  # runs without a session: nothing to keep
            c = collector(nosuch)
            assert c.stop() == 0
        assert spool_files(c) == [], (spool_files(c), c.log())
        c = collector(nosuch)
        recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(1, 21)]
        tc.send_session(c, tc.templates_msg(), tc.data_msg(*recs))
        c.wait_for(lambda: "ClickHouse store unavailable" in c.log(), "the store unavailable")
        assert c.stop() == 0
        (theirs,) = spool_files(c)
        ch.start()
        c = collector(ch.url)
        c.wait_for(lambda: "database=nosuch" in c.log(), "the other store's spool named")
        assert c.stop() == 0
        line = next(x for x in c.log().splitlines() if "database=nosuch" in x)
        assert theirs in line and "not sent" in line and "--store" in line and "remove" in line, line
        assert theirs in spool_files(c)
        got = jrows(ch, f"SELECT count() AS n FROM epochs WHERE collector_id = '{cid}'")
        assert got[0]["n"] == 0


def test_refusal_291_and_164_at_start(tmp_path):
    """ClickHouse codes 291 (a user restricted with allow_databases given another ?database=) and
    164 (a readonly user, such as the report user, given to collect) are configuration errors at
    start: exit 2 with the fix, as the codes of test_refusal_at_start_is_configuration_error."""
    with server(tmp_path / "ch") as ch:
        users = os.path.join(ch.root, "users.xml")
        with open(users) as f:
            text = f.read()
        net = "<networks><ip>127.0.0.1</ip></networks><profile>{p}</profile><quota>default</quota>"
        extra = (f"<limited><password>pw-limited</password>{net.format(p='default')}"
                 f"<allow_databases><database>{DATABASE}</database></allow_databases></limited>"
                 f"<ro><password>pw-ro</password>{net.format(p='ro')}</ro>")
        text = text.replace("</users>", extra + "</users>")
        text = text.replace("</profiles>", "<ro><readonly>1</readonly></ro></profiles>")
        ch.stop()
        with open(users, "w") as f:
            f.write(text)
        ch.start()
        store_init(ch)
        ch.query("CREATE DATABASE IF NOT EXISTS other")
        base = ch.url.split("?")[0]
        for user, url, code, hint in (("limited", base + "?database=other", "291", "allow_databases"),
                                      ("ro", ch.url, "164", "readonly")):
            cred = tmp_path / f"{user}.cred"
            cred.write_text(f"user={user}\npassword=pw-{user}\n")
            cred.chmod(0o600)
            r = collect_once(tmp_path, url, "--store-credentials", str(cred), "--collector-id", f"c-{user}")
            assert r.returncode == 2, (user, r.returncode, r.stderr)
            assert "listening on" not in r.stderr and f"Code: {code}" in r.stderr and hint in r.stderr, r.stderr


def test_heartbeat_replaces_waiting_runs_row(tmp_path, pki):
    """During an outage the runs row's heartbeat replaces the one waiting: the buffer gauge stays the
    same across heartbeats (RM_CHSTORE_HEARTBEAT_MS 2 s; waits of several heartbeats are an order,
    not a speed) and within store_buffer_bytes."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"beat-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid, "--metrics", "127.0.0.1:0")
        try:
            wait_for(lambda: metrics(c)["rocemeter_collector_store_buffer_bytes"] == 0, "the run's rows sent")
            ch.stop()
            wait_for(lambda: metrics(c)["rocemeter_collector_store_buffer_bytes"] > 0, "a heartbeat waiting")
            time.sleep(5)  # two more heartbeats: one in flight, one waiting
            first = metrics(c)["rocemeter_collector_store_buffer_bytes"]
            time.sleep(7)  # three more heartbeats
            last = metrics(c)["rocemeter_collector_store_buffer_bytes"]
            assert last == first, (first, last)
            assert last <= metrics(c)["rocemeter_collector_store_buffer_capacity_bytes"]
            ch.start()
            wait_for(lambda: metrics(c)["rocemeter_collector_store_buffer_bytes"] == 0, "rows sent")
        finally:
            assert c.stop() == 0


def test_spool_dir_unsafe_refused(tmp_path):
    """A spool directory writable by group or others is refused at start (exit 2, its path, its mode
    and the fix): another user could plant or replace the rows sent at the next start. No server is
    needed: the check comes before ClickHouse is contacted."""
    d = tmp_path / "spool"
    d.mkdir()
    d.chmod(0o777)
    port = tc.free_port()
    r = collect_once(tmp_path, f"clickhouse:http://127.0.0.1:{port}/?database={DATABASE}", "--collector-id", "unsafe")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert str(d) in r.stderr and "0777" in r.stderr and "chmod" in r.stderr, r.stderr


def test_spool_tmp_symlink_not_followed(tmp_path, pki):
    """The spool's temporary file is created anew (O_EXCL after removing a stale one, O_NOFOLLOW): a
    symbolic link planted at its name is not written through."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"link-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid)
        target = tmp_path / "target"
        target.write_text("untouched")
        ch.stop()
        recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(1, 6)]
        tc.send_session(c, tc.templates_msg(), tc.data_msg(*recs))
        c.wait_for(lambda: "ClickHouse store unavailable" in c.log(), "the store unavailable")
        os.makedirs(c.spool, mode=0o700, exist_ok=True)
        for name in os.listdir(c.spool):
            if not os.path.isdir(os.path.join(c.spool, name)):  # the received-Messages journal stays
                os.unlink(os.path.join(c.spool, name))
        for n in (f"{cid}.spool.tmp", spool_name(ch.url, cid) + ".tmp"):
            os.symlink(target, os.path.join(c.spool, n))
        assert c.stop() == 0
        assert target.read_bytes() == b"untouched"
        assert "spooled to" in c.log(), c.log()


# ------------------------------------------------------------ observation point names

def names_scenario(c):
    """Exporter A (exporter.pem) names point 7 "leaf-a" and sends epoch 1; then exporter B
    (wrongname.pem, authorised by its IP SAN 127.0.0.1) names point 7 of the same domain "evil" and
    sends epoch 2 (qp 0x456); c is stopped at the end."""
    try:
        tc.send_session(c, tc.templates_msg(), tc.points_msg([(7, b"leaf-a")], seq=1),
                        tc.data_msg(dict(tc.report(epoch=1, rid=1), flags=tc.GEN_UNVERIFIED | tc.FINAL), seq=2),
                        cert="exporter")
        c.wait_ended(1)
        tc.send_session(c, tc.templates_msg(), tc.points_msg([(7, b"evil")], seq=1),
                        tc.data_msg(dict(tc.report(epoch=2, rid=1, qp=0x456), flags=tc.GEN_UNVERIFIED | tc.FINAL),
                                    seq=2), cert="wrongname")
        c.wait_ended(2)
    finally:
        assert c.stop() == 0


def report_of(*args):
    p = subprocess.run([BIN, "report", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", p.stdout)


def test_names_bound_to_their_exporter_as_sqlite(tmp_path, pki):
    """docs/collector.md "What is stored", docs/fleet.md: ClickHouse keeps the names as SQLite does,
    bound to the exporter that sent them: B's name for point 7 never shows beside A's epoch. The
    ClickHouse report's names equal the SQLite report's on the same sessions (JSON, CSV, --verbose),
    and are the names each exporter sent itself."""
    os.makedirs(tmp_path / "sq")
    sq = tc.Collector(tmp_path / "sq", pki, "--peer-name", "127.0.0.1")
    names_scenario(sq)
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        os.makedirs(tmp_path / "chc")
        names_scenario(CHCollector(tmp_path / "chc", pki, ch, "names-a", "--peer-name", "127.0.0.1"))
        chargs = ("--store", ch.url, "--store-credentials", ch.credentials)
        want = {1: "leaf-a", 2: "evil"}
        for args in ((), ("--db", sq.db)):
            js = [json.loads(x) for x in report_of(*(args or chargs), "--json").splitlines()]
            assert {j["rdmaSequenceEpochId"]: j["observation_point_name"] for j in js} == want, args
        for fmt in (("--json",), ("--format", "csv"), ("--verbose",), ()):
            got, exp = report_of(*chargs, *fmt), report_of("--db", sq.db, *fmt)
            if fmt == ("--json",):  # the collector's clock differs per run
                got, exp = ([{k: v for k, v in json.loads(x).items() if not k.endswith("_seen_ms")
                              and k != "retired_ms"} for x in o.splitlines()] for o in (got, exp))
            elif fmt == ("--format", "csv"):
                rows = [[x.split(",") for x in o.splitlines()] for o in (got, exp)]
                keep = [i for i, n in enumerate(rows[0][0]) if not n.endswith("_seen_ms") and n != "retired_ms"]
                got, exp = ([[r[i] for i in keep] for r in rs] for rs in rows)
            assert got == exp, (fmt, got, exp)
        stored = jrows(ch, "SELECT collector_id, peer_name, domain, observation_point_id, name"
                           " FROM observation_points FINAL ORDER BY name DESC")
        assert [tuple(r.values()) for r in stored] == [("names-a", tc.EXPORTER, 0, 7, "leaf-a"),
                                                       ("names-a", "127.0.0.1", 0, 7, "evil")]


def test_store_without_names_table(tmp_path, pki):
    """A store made before observation_points (the table dropped after --store-init): the collector
    says so at its start and writes no names, and nothing else is held up: the epoch is stored, no
    drop counted; report shows the ID without a name. --store-init again adds the table."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        ch.query("DROP TABLE observation_points", database=DATABASE)
        c = CHCollector(tmp_path, pki, ch, "old-store")
        tc.send_session(c, tc.templates_msg(), tc.points_msg([(7, b"leaf-a")], seq=1),
                        tc.data_msg(dict(tc.report(epoch=1, rid=1), flags=tc.GEN_UNVERIFIED | tc.FINAL), seq=2))
        c.wait_ended(1)
        assert c.stop() == 0
        assert "no table observation_points" in c.log() and "--store-init" in c.log(), c.log()
        assert "unavailable" not in c.log(), c.log()
        (j,) = [json.loads(x) for x in report_of("--store", ch.url, "--store-credentials", ch.credentials,
                                                 "--json").splitlines()]
        assert (j["rdmaSequenceEpochId"], j["outcome"], j["observation_point_name"]) == (1, "complete", None)
        assert jrows(ch, "SELECT count() AS n FROM drops")[0]["n"] == 0
        store_init(ch)
        assert jrows(ch, "SELECT count() AS n FROM system.tables WHERE database = currentDatabase()"
                         " AND name = 'observation_points'")[0]["n"] == 1


def spool_as_version_2(path):
    """A spool file (spool.c: magic, u32 LE store name length and name, then per batch 'B', three u32 LE
    counts and per table a u64 LE length and its rows) rewritten as version 2 wrote it: magic RMSPOOL2
    and seven tables per batch (no observation_points, which must be empty here)."""
    data = open(path, "rb").read()
    assert data[:8] == b"RMSPOOL3", data[:8]
    n = int.from_bytes(data[8:12], "little")
    out, off = bytearray(b"RMSPOOL2" + data[8:12 + n]), 12 + n
    while off < len(data):
        assert data[off:off + 1] == b"B"
        out += data[off:off + 13]
        off += 13
        for t in range(8):
            ln = int.from_bytes(data[off:off + 8], "little")
            if t == 7:
                assert ln == 0
            else:
                out += data[off:off + 8 + ln]
            off += 8 + ln
    open(path, "wb").write(bytes(out))


def test_spool_of_version_2_sent(tmp_path, pki):
    """A spool written by the version before the names (RMSPOOL2: seven tables a batch) is still read
    and sent at the next start: every epoch in it reaches ClickHouse, the file is removed."""
    with server(tmp_path / "ch") as ch:
        store_init(ch)
        cid = f"spool2-{os.getpid()}"
        c = CHCollector(tmp_path, pki, ch, cid)
        ch.stop()
        recs = [tc.later(tc.report(epoch=x, rid=1), 1, final=True) for x in range(1, 21)]
        tc.send_session(c, tc.templates_msg(), tc.data_msg(*recs))
        c.wait_for(lambda: "ClickHouse store unavailable" in c.log(), "the store unavailable")
        assert c.stop() == 0
        spool = os.path.join(c.spool, spool_name(ch.url, cid))
        spool_as_version_2(spool)
        ch.start()
        c = CHCollector(tmp_path, pki, ch, cid)
        c.wait_for(lambda: not os.path.exists(spool), "the spool sent and removed")
        assert c.stop() == 0
        got = jrows(ch, f"SELECT epoch_id, outcome FROM epochs FINAL WHERE collector_id = '{cid}' ORDER BY epoch_id")
        assert [(e["epoch_id"], e["outcome"]) for e in got] == [(x, "complete") for x in range(1, 21)]
