# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter report --store clickhouse:URL` against `report --db FILE` on the
same data (docs/fleet.md "report across the fleet").

A real collector fills a SQLite store: hand-written IPFIX Messages
(test_collector.py's builder, from RFC 7011 and [SEQOBS]'s profile) over
TLS 1.3 drive the collector rules to complete, incomplete and invalid epochs,
IPv4 and IPv6, unsigned64 values above 2^63, raw records, a resource drop and
a refused connection. Its rows are then copied into ClickHouse servers
started by tests/lib/clickhouse.py (never the system service), each row of a
changing table with an OLDER version first (other outcome, other NULLs), so
that only reading the latest version gives SQLite's answer. The report
outputs must be equal byte for byte, in every format and with every filter;
with two collectors (and over a two-shard cluster's Distributed tables) each
line is SQLite's line of that collector, naming it.
"""
import json
import os
import re
import sqlite3
import subprocess
import time

import pytest

from clickhouse import CLUSTER, DATABASE, cluster, server, skip_reason
from test_collector import (BIN, EXPORTER, GEN_CERTS, GEN_UNVERIFIED, V6, Collector, close_tls, data_msg, later,
                            points_msg, report, send_session, templates_msg)

WAIT = 30.0  # bound for rows to reach their shard; never a timing assertion

pytestmark = [pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built"),
              pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")]

# the tables whose rows change and carry a version (docs/clickhouse/single.sql)
VERSIONED = {"runs", "sessions", "epochs", "observation_points"}
TABLES = ["runs", "sessions", "epochs", "raw_records", "drops", "connections", "run_limits", "observation_points"]
V6_SRC, V6_DST = bytes.fromhex("20010db8000000000000000000000001"), bytes.fromhex("20010db8000000000000000000000002")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run([GEN_CERTS, str(d)], check=True, capture_output=True)
    return str(d)


def drive(c):
    """The scenario: sessions to the collector c, which is stopped at the end (SIGTERM)."""
    try:
        # complete (three reports), its observation point named; incomplete with a gap and missing initial reports
        r1 = report(epoch=3, rid=1)
        send_session(c, templates_msg(), points_msg([(7, b"leaf-a"), (8, b"spine-1")]), data_msg(r1, later(r1, 2)),
                     data_msg(later(r1, 3, final=True)))
        r3 = report(epoch=4, rid=3, qp=0x456, pkey=0x8001)
        send_session(c, templates_msg(), data_msg(r3), data_msg(later(r3, 6, final=True)))
        # IPv6 and a second domain; no final: incomplete
        v6 = report(epoch=1, rid=1, src=V6_SRC, dst=V6_DST, start=1700000100000, end=1700000100500)
        send_session(c, templates_msg(V6, 300, domain=1), templates_msg(domain=2),
                     data_msg(v6, tid=300, fields=V6, domain=1), data_msg(report(epoch=1, rid=1), domain=2))
        # unsigned64 above 2^63
        big = report(epoch=2**64 - 2, rid=2**63 + 1, obs=2**63 + 7, requests=2**63 + 5)
        send_session(c, templates_msg(), data_msg(big, later(big, 2**63 + 2, final=True)))
        # invalid epochs (reasons with '!=' and commas), an unknown flag kept raw (no measurement: NULLs)
        a1 = report(epoch=1, rid=1)
        send_session(c, templates_msg(), data_msg(a1, dict(later(a1, 2), skipped=9),
                                                  report(epoch=2, rid=1, flags=GEN_UNVERIFIED | 0x0040),
                                                  report(epoch=5, rid=1), dict(report(epoch=5, rid=1), end=1)))
        # more epochs than --max-epochs: a collector resource drop
        send_session(c, templates_msg(), data_msg(*[report(epoch=e, rid=1) for e in range(1, 9)]))
        c.wait_ended(6)
        # a peer with a certificate the collector does not authorise: a refused connection
        try:
            s = c.connect("wrongname")
            s.sendall(templates_msg())
            s.recv(1)
            close_tls(s)
        except OSError:
            pass
        c.wait_for(c.has_refused, "the refused connection counted")
        # left open, retired at SIGTERM as incomplete ("collector shutdown")
        s = c.connect()
        s.sendall(templates_msg() + data_msg(report(epoch=7, rid=1, qp=0x789)))
        c.wait_for(lambda: c.has_epoch_qp(0x789), "the open epoch stored")
    finally:
        assert c.stop() == 0


class SQLiteCollector(Collector):
    def has_refused(self):
        return self.query("SELECT * FROM connections")

    def has_epoch_qp(self, qp):
        return self.query("SELECT id FROM epochs WHERE dest_qp = ?", qp)


class ClickHouseCollector(Collector):
    """The harness of test_collector.py writing to ClickHouse (its --db is replaced by --store)."""

    def __init__(self, tmp, pki, ch, cid, *extra):
        self.ch, self.cid = ch, cid
        super().__init__(tmp, pki, "--store", ch.url, "--store-credentials", ch.credentials, "--collector-id", cid,
                         *extra)

    def count(self, sql):
        return int(self.ch.rows(sql)[0][0])

    def wait_ended(self, n):
        self.wait_for(lambda: self.count("SELECT count() FROM sessions FINAL WHERE ended_ms IS NOT NULL") >= n,
                      f"{n} ended sessions in ClickHouse")

    def has_refused(self):
        return self.count("SELECT count() FROM connections")

    def has_epoch_qp(self, qp):
        return self.count(f"SELECT count() FROM epochs WHERE dest_qp = {qp}")


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory, pki):
    """A SQLite store filled by a real collector run; its path."""
    c = SQLiteCollector(tmp_path_factory.mktemp("collector"), pki, "--max-epochs", "6")
    drive(c)
    return c.db


def tsv(v):
    if v is None:
        return b"\\N"
    if isinstance(v, int):
        return str(v & 0xFFFFFFFFFFFFFFFF).encode()  # SQLite's signed int64 bits, unsigned
    if isinstance(v, str):
        v = v.encode()
    return v.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\n", b"\\n")


def older(table, row):
    """An earlier state of a row: what a collector wrote before the latest (other values, other NULLs)."""
    row = dict(row)
    if table == "epochs":
        row.update(outcome="open", state="open", retired_ms=None, reason=None, requests=12345,
                   flow_end_ms=1, flow_start_ms=9999999999999, src="198.51.100.9", dest_qp=4242)
    elif table == "sessions":
        row.update(ended_ms=None, end_reason=None, accepted=0)
    elif table == "runs":
        row.update(stopped_ms=None, listen="0.0.0.0:1", pen=1)
    elif table == "observation_points":
        row.update(name="an-older-name")
    return row


def copy_store(db_path, ch, collector_id):
    """Every row of the SQLite store into ClickHouse under collector_id; changing rows twice (older first)."""
    con = sqlite3.connect(db_path)
    con.row_factory = sqlite3.Row
    try:
        for table in TABLES:
            order = "rowid" if table in ("drops", "connections", "run_limits", "observation_points") else "id"
            rows = [dict(r) for r in con.execute(f"SELECT * FROM {table} ORDER BY {order}")]
            if not rows:
                continue
            cols = list(rows[0])
            batches = []
            if table in VERSIONED:
                batches.append([dict(older(table, r), version=1) for r in rows])
                batches.append([dict(r, version=2) for r in rows])
                cols = cols + ["version"]
            elif table == "run_limits":
                batches.append([dict(r, seq=i) for i, r in enumerate(rows)])
                cols = cols + ["seq"]
            else:
                batches.append(rows)
            for batch in batches:
                body = b"".join(b"\t".join([tsv(collector_id)] + [tsv(r[c]) for c in cols]) + b"\n"
                                for r in batch)
                ch.query(f"INSERT INTO {table} (collector_id, {', '.join(cols)}) FORMAT TabSeparated",
                         data=body, database=DATABASE)
    finally:
        con.close()


def run_report(*args):
    p = subprocess.run([BIN, "report", *args], capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def sqlite_report(db, *args):
    return run_report("--db", db, *args)


def ch_report(ch, *args):
    return run_report("--store", ch.url, "--store-credentials", ch.credentials, *args)


# every format and every filter of report; times around the data's (flow times of 2023-11-14)
CASES = [
    (), ("--format", "json"), ("-j",), ("--format", "csv"), ("--format", "text"),
    ("--outcome", "complete"), ("--outcome", "incomplete"), ("--outcome", "invalid"), ("--outcome", "open"),
    ("--since", "1700000000550"), ("--until", "1700000000400"), ("--since", "2023-11-14T22:15:00Z"),
    ("--since", "1700000000000", "--until", "1700000100000", "--format", "json"),
    ("--until", "1d"), ("--since", "1d"),
    ("--connection", "192.0.2.1,192.0.2.2,0x123"), ("--connection", "192.0.2.1,192.0.2.2,0x456,0x8001"),
    ("--connection", "192.0.2.1,192.0.2.2,0x456,0xffff"), ("--connection", "2001:db8::1,2001:db8::2,291"),
    ("--connection", "198.51.100.9,192.0.2.2,4242"),  # only an older version has it
    ("--outcome", "incomplete", "--connection", "192.0.2.1,192.0.2.2,0x123", "--format", "csv"),
    ("--limits",), ("--limits", "--format", "json"),
    # the views: the prose, the epochs not clean, the summary in every format, with filters and --top
    ("--verbose",), ("--verbose", "--outcome", "invalid"), ("--anomalies",), ("--anomalies", "--format", "json"),
    ("--anomalies", "--format", "csv"), ("--anomalies", "--verbose"),
    ("--summary",), ("--summary", "--verbose"), ("--summary", "--format", "json"), ("--summary", "--format", "csv"),
    ("--summary", "--top", "2"), ("--summary", "--anomalies"), ("--summary", "--since", "1700000000550"),
    ("--summary", "--outcome", "incomplete", "--format", "json"),
    ("--summary", "--connection", "192.0.2.1,192.0.2.2,0x123", "--format", "csv"),
    # a point by its name and by its ID, a closure reason
    ("--observation-point", "leaf-a"), ("--observation-point", "7", "--format", "json"),
    ("--observation-point", "leaf-a", "--summary", "--format", "csv"), ("--reason", "serialDiscontinuity"),
    ("--reason", "profileViolation", "--summary"),
]


def assert_same(db, ch, cases=CASES):
    for args in cases:
        want = sqlite_report(db, *args)
        got = ch_report(ch, *args)
        assert want[0] == 0, (args, want[2])
        assert got[:2] == want[:2], (args, got[2], want[1].decode()[:2000], got[1].decode()[:2000])


def test_report_equal_one_collector(sqlite_store, tmp_path):
    # the data exercises what it should: every outcome, NULL measurements, big values, drops, refusals
    text = sqlite_report(sqlite_store, "--verbose")[1].decode()
    for what in (": complete", ": incomplete", ": invalid", "no accepted report", "2001:db8::1",
                 str(2**64 - 2), "collector shutdown", "reports 3..6", "observation point 7 (leaf-a)"):
        assert what in text, what
    # the views have something to show: epochs not clean, several lines of summary
    assert len(sqlite_report(sqlite_store, "--anomalies")[1].splitlines()) >= 2
    assert len(sqlite_report(sqlite_store, "--summary")[1].splitlines()) >= 4
    limits = sqlite_report(sqlite_store, "--limits")[1].decode()
    assert "epoch-admission" in limits and ("not-authorised" in limits or "handshake-failed" in limits)
    with server(tmp_path / "ch") as ch:
        r = subprocess.run([BIN, "collect", "--store-init", "--store", ch.url, "--store-credentials",
                            ch.credentials], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        copy_store(sqlite_store, ch, "collector-a")
        assert_same(sqlite_store, ch)
        # the same after ClickHouse merged the versions away
        ch.query("OPTIMIZE TABLE epochs FINAL", database=DATABASE)
        assert_same(sqlite_store, ch, [(), ("--outcome", "open"), ("--format", "json")])


def with_collector(lines, cid, fmt, width=0):
    """SQLite's lines as a store of several collectors shows them (docs/fleet.md): the table with a
    first column COLLECTOR as wide as the longest collector ID (at least its header), the prose
    after "collector ID"."""
    if fmt == "table":
        return [f"{cid:<{width}} {line}" for line in lines]
    if fmt == "text":
        return [f"collector {cid} {line}" for line in lines]
    if fmt == "json":
        return [json.dumps({"collector_id": cid, **json.loads(line)}) for line in lines]
    return [f"{cid},{line}" for line in lines]


def assert_fleet(db, servers, cids):
    """The report of a store holding the SQLite store's rows once per collector ID."""
    entry = servers[0]
    width = max(len("COLLECTOR"), *(len(c) for c in cids))
    for fmt, args in (("table", ()), ("text", ("--verbose",)), ("json", ("--format", "json")),
                      ("csv", ("--format", "csv"))):
        want = sqlite_report(db, *args)[1].decode().splitlines()
        header = []
        if fmt == "csv":
            header, want = ["collector_id," + want[0]], want[1:]
        if fmt == "table":
            header, want = [f"{'COLLECTOR':<{width}} {want[0]}"], want[1:]
        expect = header + [x for cid in sorted(cids) for x in with_collector(want, cid, fmt, width)]
        rc, out, err = ch_report(entry, *args)
        assert rc == 0, err
        got = out.decode().splitlines()
        if fmt == "json":  # key order: collector_id first, then SQLite's
            got = [json.dumps(json.loads(x)) for x in got]
        assert got == expect, fmt
        # one collector of several: still named (the format does not change with a filter)
        rc, out, err = ch_report(entry, *args, "--collector", cids[1])
        got = out.decode().splitlines()
        if fmt == "json":
            got = [json.dumps(json.loads(x)) for x in got]
        assert got == header + with_collector(want, cids[1], fmt, width), fmt
    # the summary is per connection and observation point across the fleet: each collector holds
    # the same epochs here, so every count is len(cids) times SQLite's, in the same order
    want = [json.loads(x) for x in sqlite_report(db, "--summary", "--format", "json")[1].splitlines()]
    rc, out, err = ch_report(entry, "--summary", "--format", "json")
    assert rc == 0, err
    assert [json.loads(x) for x in out.decode().splitlines()] == [times(r, len(cids)) for r in want]
    want = sqlite_report(db, "--limits")[1].decode()
    rc, out, err = ch_report(entry, "--limits")
    assert rc == 0, err
    assert out.decode() == "".join(f"collector {cid}\n{want}" for cid in sorted(cids))
    want = json.loads(sqlite_report(db, "--limits", "--format", "json")[1])
    rc, out, err = ch_report(entry, "--limits", "--format", "json")
    assert [json.loads(x) for x in out.decode().splitlines()] == [{"collector_id": cid, **want}
                                                                   for cid in sorted(cids)]
    # report --help: nothing to report is exit 0
    rc, out, err = ch_report(entry, "--collector", "nobody", "--limits")
    assert rc == 0 and out == b"no collector run recorded for collector nobody\n", err


def times(row, n):
    """A summary row (docs/json.md "report summary") with its counts n times over, saturated at 2^64 - 1
    as documented; key and flow times kept."""
    def scale(v):
        return {k: scale(x) for k, x in v.items()} if isinstance(v, dict) else min(v * n, 2**64 - 1)
    keep = ("observationDomainId", "key", "observation_point_name", "exporter", "first_flow_start_ms",
            "last_flow_end_ms")
    return {k: (v if k in keep else scale(v)) for k, v in row.items()}


def test_report_uninitialised_and_empty(tmp_path):
    """report --help: a database without the schema says how to create it (exit 1); an initialised
    store no collector has run on is nothing to report (exit 0), as a SQLite store
    (tests/unit/test_store_cli.py)."""
    with server(tmp_path / "ch") as ch:
        for url in (ch.url, ch.url.replace("database=" + DATABASE, "database=nosuchdb")):
            for args in ((), ("--limits",)):
                rc, out, err = run_report("--store", url, "--store-credentials", ch.credentials, *args)
                assert rc == 1 and out == b"", err
                assert ("not a rocemeter store (no table runs): run 'rocemeter collect --store-init --store %s'"
                        % url) in err, err
        assert subprocess.run([BIN, "collect", "--store-init", "--store", ch.url, "--store-credentials",
                               ch.credentials]).returncode == 0
        rc, out, err = ch_report(ch, "--limits")
        assert (rc, out, err) == (0, b"no collector run recorded\n", "")
        rc, out, err = ch_report(ch, "--limits", "--format", "json")
        assert (rc, out, err) == (0, b"", "")
        rc, out, err = ch_report(ch)
        assert (rc, out, err) == (0, b"", "")


def test_report_two_collectors(sqlite_store, tmp_path):
    with server(tmp_path / "ch") as ch:
        assert subprocess.run([BIN, "collect", "--store-init", "--store", ch.url, "--store-credentials",
                               ch.credentials]).returncode == 0
        for cid in ("b-collector", "a-collector"):
            copy_store(sqlite_store, ch, cid)
        assert_fleet(sqlite_store, [ch], ["a-collector", "b-collector"])


def test_report_cluster(sqlite_store, tmp_path):
    """Two shards behind Distributed tables: report through either server sees every collector's rows once."""
    with cluster(tmp_path / "cl") as (a, b):
        for s in (a, b):
            r = subprocess.run([BIN, "collect", "--store-init", "--store", s.url, "--store-credentials",
                                s.credentials, "--cluster", CLUSTER], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
        # collector IDs that the sharding key (sipHash64(collector_id), two shards of weight 1) spreads
        by_shard = {}
        for i in range(64):
            (h,), = a.rows(f"SELECT sipHash64('collector-{i}') % 2")
            by_shard.setdefault(h, []).append(f"collector-{i}")
        cids = by_shard["0"][:2] + by_shard["1"][:2]
        for cid in cids:
            copy_store(sqlite_store, a, cid)
        # Distributed inserts reach the shards asynchronously: wait until every row is there (the
        # latest versions: merges may already have removed the older ones)
        con = sqlite3.connect(sqlite_store)
        want = {t: str(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] * len(cids)) for t in TABLES}
        con.close()
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            got = {t: a.rows(f"SELECT count() FROM {t}" + (" WHERE version = 2" if t in VERSIONED else ""))[0][0]
                   for t in TABLES}
            if got == want:
                break
            time.sleep(0.2)
        assert got == want
        # both shards hold some collectors, none on both
        on = [{c for (c,) in s.rows("SELECT DISTINCT collector_id FROM epochs_local")} for s in (a, b)]
        assert on[0] and on[1] and not on[0] & on[1]
        assert_fleet(sqlite_store, [a, b], cids)
        assert_fleet(sqlite_store, [b, a], cids)


def fleet_sql():
    """The ```sql blocks of docs/fleet.md "Questions"."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(root, "docs", "fleet.md")).read()
    return [b.split("```", 1)[0].strip() for b in text.split("```sql\n")[1:]]


def test_fleet_md_queries(sqlite_store, tmp_path):
    """The operator's SQL of docs/fleet.md runs on ClickHouse and agrees with SQLite on the same rows."""
    blocks = fleet_sql()
    assert len(blocks) >= 5 and blocks[0].startswith("CREATE VIEW")
    con = sqlite3.connect(sqlite_store)
    not_complete = con.execute("SELECT count(*) FROM epochs WHERE outcome IN ('incomplete', 'invalid')").fetchone()[0]
    drops = con.execute("SELECT sum(count) FROM drops").fetchone()[0]
    con.close()
    with server(tmp_path / "ch") as ch:
        assert subprocess.run([BIN, "collect", "--store-init", "--store", ch.url, "--store-credentials",
                               ch.credentials]).returncode == 0
        copy_store(sqlite_store, ch, "collector-a")
        results = [ch.rows(sql) for sql in blocks]
        assert results[0] == []  # the view
        by_reason = ch.rows("SELECT outcome, why, epochs_n FROM (" + blocks[2] + ")")
        assert sum(int(n) for _, _, n in by_reason) == not_complete
        assert {o for o, _, _ in by_reason} == {"incomplete", "invalid"}
        assert sum(int(r[2]) for r in results[3]) == drops
        assert results[1] and results[4] and results[5]


COLLECTOR_CLOCK = ("first_seen_ms", "last_seen_ms", "retired_ms")  # when this collector saw it: differs per run


def comparable(args, out):
    """report's output without what depends on the run rather than on the data: the collector's
    clock (JSON keys and CSV columns above; --limits: the start time), its listen address and the
    exporter's source port (exporter.peer)."""
    out = re.sub(rb"127\.0\.0\.1:\d+", b"127.0.0.1:PORT", out)
    text = out.decode()
    fmt = "json" if "-j" in args or "json" in args else "csv" if "csv" in args else "text"
    if "--limits" in args:
        if fmt == "json":
            return [{k: v for k, v in json.loads(x).items() if k not in ("started_ms", "listen")}
                    for x in text.splitlines()]
        return [re.sub(r" on \S+, (PEN \d+), started \S+\)", r", \1)", x) for x in text.splitlines()]
    if fmt == "json":
        return [{k: v for k, v in json.loads(x).items() if k not in COLLECTOR_CLOCK} for x in text.splitlines()]
    if fmt == "csv":
        rows = [x.split(",") for x in text.splitlines()]
        keep = [i for i, name in enumerate(rows[0]) if name not in COLLECTOR_CLOCK] if rows else []
        return [[r[i] for i in keep] for r in rows]
    return text.splitlines()


def test_report_through_the_collector(pki, tmp_path):
    """The same sessions to a collector writing SQLite and to one writing ClickHouse: the same report."""
    os.makedirs(tmp_path / "sqlite")
    sq = SQLiteCollector(tmp_path / "sqlite", pki, "--max-epochs", "6")
    drive(sq)
    with server(tmp_path / "ch") as ch:
        r = subprocess.run([BIN, "collect", "--store-init", "--store", ch.url, "--store-credentials",
                            ch.credentials], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        os.makedirs(tmp_path / "chc")
        c = ClickHouseCollector(tmp_path / "chc", pki, ch, "fleet-a", "--max-epochs", "6")
        drive(c)
        for args in CASES:
            if "1d" in args:
                continue  # relative to now: the two runs' collector clocks differ
            want = sqlite_report(sq.db, *args)
            got = ch_report(ch, *args)
            assert want[0] == got[0] == 0, (args, want[2], got[2])
            assert comparable(args, got[1]) == comparable(args, want[1]), args
        # ClickHouse names each epoch's exporter: test_collector.py's certificate, its authorised name
        exporters = [json.loads(x)["exporter"] for x in ch_report(ch, "--json")[1].decode().splitlines()]
        subj = subprocess.run(["openssl", "x509", "-in", f"{pki}/exporter.pem", "-noout", "-subject", "-nameopt",
                               "compat"], capture_output=True, text=True, check=True).stdout.strip()[len("subject="):]
        assert exporters and all(x["peer_name"] == EXPORTER and x["peer_subject"].startswith(subj + " SAN ")
                                 and re.fullmatch(r"127\.0\.0\.1:\d+", x["peer"]) for x in exporters), exporters
