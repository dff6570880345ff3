# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter collect --store-init` against real clickhouse-server processes
(tests/lib/clickhouse.py: plain processes with temporary folders, never the
system service): the schema of docs/clickhouse/ on one server and on two
servers as two shards of a cluster; what docs/fleet.md "Schema" promises
(tables, engines, sharding, latest version wins), read back through
ClickHouse's own system tables; idempotence; errors with ClickHouse's
message; the SQLite store behind the same options.
"""
import os
import sqlite3
import subprocess
import time

import pytest

from clickhouse import CLUSTER, DATABASE, cluster, server, skip_reason

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("ROCEMETER_BIN", os.path.join(ROOT, "build", "rocemeter"))
WAIT = 30.0  # bound for a Distributed insert to reach its shard; never a timing assertion

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built")
needs_ch = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")

# docs/fleet.md "Schema": the SQLite store's tables (user/store/sqlite/store.h), with
# the engine each gets; rows that change are written again with a version.
ENGINES = {"runs": "ReplacingMergeTree", "sessions": "ReplacingMergeTree", "epochs": "ReplacingMergeTree",
           "raw_records": "MergeTree", "drops": "MergeTree", "connections": "MergeTree",
           "run_limits": "MergeTree", "observation_points": "ReplacingMergeTree"}


def rocemeter(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120)


def store_init(ch, *extra, credentials=None):
    return rocemeter("collect", "--store-init", "--store", ch.url, "--store-credentials",
                     credentials or ch.credentials, *extra)


def tables(ch):
    return dict(ch.rows(f"SELECT name, engine FROM system.tables WHERE database = '{DATABASE}'"))


def assert_collector_id_everywhere(ch, names):
    for t in names:
        cols = ch.rows(f"DESCRIBE TABLE {t}")
        assert cols[0][:2] == ("collector_id", "String"), (t, cols)


@needs_ch
def test_store_init_one_server(tmp_path):
    with server(tmp_path / "ch") as ch:
        r = store_init(ch)
        assert r.returncode == 0, r.stderr
        assert tables(ch) == ENGINES
        assert_collector_id_everywhere(ch, ENGINES)
        # partitioned by the day the collector first saw the epoch (immutable: every version in one partition)
        create = ch.query("SHOW CREATE TABLE epochs FORMAT TSVRaw", database=DATABASE)
        assert "PARTITION BY toYYYYMMDD(toDateTime(intDiv(first_seen_ms, 1000)))" in create, create
        assert "ORDER BY (collector_id, id)" in create, create
        # idempotent: a second run changes nothing and keeps the rows
        ch.query("INSERT INTO epochs (collector_id, id, version, first_seen_ms, last_seen_ms, state, outcome,"
                 " src, dst) VALUES ('c1', 1, 1, 1764495000000, 1764495000000, 'open', 'open', 'a', 'b')",
                 database=DATABASE)
        r = store_init(ch)
        assert r.returncode == 0, r.stderr
        assert tables(ch) == ENGINES
        assert ch.rows("SELECT count() FROM epochs") == [("1",)]
        # the latest version of an epoch wins (ReplacingMergeTree, read with FINAL)
        ch.query("INSERT INTO epochs (collector_id, id, version, first_seen_ms, last_seen_ms, state, outcome,"
                 " src, dst) VALUES ('c1', 1, 2, 1764495000000, 1764495009000, 'final', 'complete', 'a', 'b')",
                 database=DATABASE)
        assert ch.rows("SELECT outcome FROM epochs FINAL") == [("complete",)]


@needs_ch
def test_store_init_errors(tmp_path):
    with server(tmp_path / "ch") as ch:
        bad = tmp_path / "bad-credentials"
        bad.write_text("user=rocemeter\npassword=wrong\n")
        bad.chmod(0o600)
        r = store_init(ch, credentials=str(bad))
        assert r.returncode == 1
        # ClickHouse's own message (Code 192/193: unknown user or wrong password)
        assert "HTTP " in r.stderr and "password" in r.stderr.lower(), r.stderr
        assert "wrong" not in r.stderr  # the password is never shown
        assert tables(ch) == {}
        # a credentials file others may read: refused before any request (docs/fleet.md)
        bad.chmod(0o644)
        r = store_init(ch, credentials=str(bad))
        assert r.returncode == 2, r.stderr
        assert ("credentials file %s: permissions 0644 are too open" % bad) in r.stderr, r.stderr
    # nobody listening any more
    r = rocemeter("collect", "--store-init", "--store", ch.url, "--store-credentials", ch.credentials)
    assert r.returncode == 1 and "127.0.0.1" in r.stderr, r.stderr


@needs_ch
def test_store_init_unknown_cluster_creates_nothing(tmp_path):
    """--cluster NAME is checked in system.clusters before anything is created (no database, no
    table left half made)."""
    with server(tmp_path / "ch") as ch:
        url = ch.url.replace("database=" + DATABASE, "database=fresh")
        r = rocemeter("collect", "--store-init", "--store", url, "--store-credentials", ch.credentials,
                      "--cluster", "nosuchcluster")
        assert r.returncode == 1
        assert ("--cluster nosuchcluster: the server has no such cluster in system.clusters "
                "(remote_servers)") in r.stderr, r.stderr
        assert "Code:" not in r.stderr
        assert ch.rows("SELECT name FROM system.databases WHERE name = 'fresh'") == []
        assert ch.rows("SELECT name FROM system.tables WHERE database IN ('fresh', '%s')" % DATABASE) == []


@needs_ch
def test_store_init_cluster(tmp_path):
    with cluster(tmp_path / "cl") as (a, b):
        for ch in (a, b):  # on every server of the cluster, twice (idempotent)
            for _ in range(2):
                r = store_init(ch, "--cluster", CLUSTER)
                assert r.returncode == 0, r.stderr
        want = dict(ENGINES)
        want.update({t + "_local": e for t, e in ENGINES.items()})
        want.update({t: "Distributed" for t in ENGINES})
        for ch in (a, b):
            assert tables(ch) == want
            assert_collector_id_everywhere(ch, want)
        # rows written through either server's Distributed table are read by both, sharded by collector ID
        rows = "".join(f"c{i}\t{i}\t1\t1764495000000\t1764495000000\topen\topen\ta\tb\n" for i in range(40))
        a.query("INSERT INTO epochs (collector_id, id, version, first_seen_ms, last_seen_ms, state, outcome,"
                " src, dst) FORMAT TabSeparated", data=rows, database=DATABASE)
        deadline = time.monotonic() + WAIT
        while b.rows("SELECT count() FROM epochs") != [("40",)] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert b.rows("SELECT count() FROM epochs") == [("40",)]
        on_a = {c for (c,) in a.rows("SELECT collector_id FROM epochs_local")}
        on_b = {c for (c,) in b.rows("SELECT collector_id FROM epochs_local")}
        assert on_a and on_b and not on_a & on_b and on_a | on_b == {f"c{i}" for i in range(40)}


def test_store_init_sqlite(tmp_path):
    """--store sqlite:FILE and --db FILE: the SQLite store's tables."""
    for args in (["--store", f"sqlite:{tmp_path}/a.db"], ["--db", f"{tmp_path}/b.db"]):
        r = rocemeter("collect", "--store-init", *args)
        assert r.returncode == 0, r.stderr
    for f in ("a.db", "b.db"):
        with sqlite3.connect(tmp_path / f) as db:
            names = {n for (n,) in db.execute("SELECT name FROM sqlite_master")}
        assert set(ENGINES) <= names


def test_store_options_usage(tmp_path):
    cases = [
        (["--store", "mysql:x"], "mysql:x"),
        (["--store", "clickhouse:http://u:p@h:1/"], "credentials file"),
        (["--store", f"sqlite:{tmp_path}/a.db", "--db", f"{tmp_path}/b.db"], None),  # --db replaces it
        (["--store", f"sqlite:{tmp_path}/a.db", "--cluster", "x"], "--cluster"),
        (["--store", f"sqlite:{tmp_path}/a.db", "--store-credentials", "/etc/hostname"], "clickhouse"),
        ([], "--store"),
    ]
    for args, msg in cases:
        r = rocemeter("collect", "--store-init", *args)
        if msg is None:
            assert r.returncode == 0, (args, r.stderr)
            assert os.path.exists(tmp_path / "b.db") and not os.path.exists(tmp_path / "a.db")
        else:
            assert r.returncode == 2, (args, r.stderr)
            assert msg in r.stderr, (args, r.stderr)


@needs_ch
def test_store_over_https(tmp_path):
    """TLS to ClickHouse: the server's certificate checked against --store-ca (made with openssl)."""
    with server(tmp_path / "ch", https=True) as ch:
        r = rocemeter("collect", "--store-init", "--store", ch.https_url, "--store-credentials", ch.credentials)
        assert r.returncode == 1 and "certificate" in r.stderr.lower(), r.stderr  # not signed by a system CA
        assert tables(ch) == {}
        r = rocemeter("collect", "--store-init", "--store", ch.https_url, "--store-credentials", ch.credentials,
                      "--store-ca", ch.ca)
        assert r.returncode == 0, r.stderr
        assert tables(ch) == ENGINES
        r = rocemeter("report", "--store", ch.https_url, "--store-credentials", ch.credentials, "--store-ca", ch.ca)
        assert r.returncode == 0 and r.stdout == "", r.stderr
