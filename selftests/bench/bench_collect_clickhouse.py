#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""bench_collect_clickhouse - records/s that `rocemeter collect` stores into
ClickHouse (--store clickhouse:URL, one clickhouse-server started as a plain
process by tests/lib/clickhouse.py) by one and by two collector processes,
next to SQLite (--db) in the same run, on the workloads of many epochs with
few reports each: 90,000 epochs x 10 reports and 95,000 x 1 (round by round,
the last report final; [SEQOBS] "Verification Examples", example 1's counters).

The exporters are this program: the IPFIX Messages are packed before the
clock starts, then sent over TLS 1.3 (one session per collector, in
parallel). The clock runs from the first octet sent until the store holds
every epoch retired with its outcome: for SQLite, every session ended in its
file; for ClickHouse, every epoch of the run's collector IDs retired in
`epochs` (FINAL; polled every 50 ms, SQLite every 10 ms). Two collectors split the epochs; the figure is all records
over the wall time. After each run every epoch is checked (complete, reports
1..R, its last report's requests); a run that fails stops the program
(exit 1) instead of printing a figure.

Also measured, for the choice of the writer's input format: one INSERT of
100,000 epoch rows into a copy of `epochs` in RowBinary (the writer's),
TabSeparated and JSONEachRow, client wall time, best of 5 rounds in which
the formats take turns.

The figure of docs/benchmarks.md "Targets": with one collector, the server's own rate for
the same rows in the same run. After each ClickHouse run with one collector,
every epochs row it wrote (merges of epochs stopped during the run, so that
every version stays) is read back in RowBinary and inserted again in one
INSERT into epochs_ref (AS epochs), client wall time; the collector's
records/s as a percentage of the server's for the same records is printed,
and the median over the runs.

Usage: bench_collect_clickhouse.py   (as root, from the repository root)
  BENCH_RUNS=N              rounds (default 1)
  RM_BENCH_CH_RATIO=1       only the ClickHouse one-collector runs and their reference
  RM_BENCH_COLLECTOR=PATH   another build's rocemeter, run in turn with this one
Prints lines "LABEL: ... N records/s" (scripts/bench gathers them).
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "selftests", "system"))
import test_collector as tc  # noqa: E402  the collector harness (TLS 1.3 peers, certificates)
from clickhouse import DATABASE, server, skip_reason  # noqa: E402
from seqobs_examples import EXAMPLES, WINDOW  # noqa: E402  [SEQOBS] "Verification Examples"

WORKLOADS = [(90000, 10), (95000, 1)]
RUNS = int(os.environ.get("BENCH_RUNS", "1"))
ONLY_RATIO = os.environ.get("RM_BENCH_CH_RATIO") == "1"  # only the ClickHouse one-collector runs and their reference
OTHER = os.environ.get("RM_BENCH_COLLECTOR")  # another build's rocemeter, run in turn with this one
PER_MSG = 500  # records per IPFIX Message (120 octets each)
WAIT = 600.0
FINAL, GEN_UNVERIFIED = 0x0001, 0x0020
# V4 record of [SEQOBS] "Profile Fields in Example Order" (test_collector.V4)
REC = struct.Struct(">Q4s4sIHQQQQIHQQQQIQQQ")
SRC, DST = bytes([192, 0, 2, 1]), bytes([192, 0, 2, 2])
EX1 = EXAMPLES[1][1]  # the counters of example 1, test_collector.report()'s


def requests_at(rid):
    """An epoch's requests at report rid: example 1's, then two more per report (test_collector.later)."""
    return EX1["requests"] + 2 * (rid - 1)


def rec(epoch, rid, final):
    """Report rid of an epoch: example 1's counters at report 1, then per report two more requests and one
    more position skipped and filled (test_collector.later)."""
    n = rid - 1
    return REC.pack(7, SRC, DST, 0x123, 0xFFFF, 1700000000000, 1700000000500 + 100 * n, epoch, rid, WINDOW,
                    GEN_UNVERIFIED | (FINAL if final else 0), EX1["skipped"] + n, EX1["filled"] + n,
                    EX1["expired"], EX1["abandoned"], EX1["pending"], EX1["repeated"], requests_at(rid), EX1["late"])


def stream(first, n_epochs, reports):
    """Templates, then report r of every epoch, round by round, PER_MSG records per Message."""
    out = [tc.templates_msg()]
    recs = [rec(e, r, r == reports) for r in range(1, reports + 1) for e in range(first, first + n_epochs)]
    seq = 0
    for i in range(0, len(recs), PER_MSG):
        body = b"".join(recs[i:i + PER_MSG])
        out.append(tc.message(tc.ipfix_set(256, body), seq=seq))
        seq += len(recs[i:i + PER_MSG])
    return b"".join(out)


def send(c, data):
    s = c.connect()
    s.sendall(data)
    tc.close_tls(s)


def jrows(ch, sql):
    j = json.loads(ch.query(sql + " FORMAT JSON", database=DATABASE))
    return [{k: int(v) if isinstance(v, str) and v.isdigit() else v for k, v in r.items()} for r in j["data"]]


def sqlite_done(db):
    r = tc.sqlite3.connect(db)
    try:
        return r.execute("SELECT count(*) FROM sessions WHERE ended_ms IS NULL").fetchone()[0] == 0 and \
            r.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1
    except tc.sqlite3.Error:
        return False
    finally:
        r.close()


def sqlite_check(db, reports):
    r = tc.sqlite3.connect(db)
    try:
        return r.execute("SELECT count(*) FROM epochs WHERE outcome = 'complete' AND first_report_id = 1 AND"
                         " last_report_id = ? AND requests = ? AND retired_ms IS NOT NULL",
                         (reports, requests_at(reports))).fetchone()[0]
    finally:
        r.close()


def run(kind, n_col, n_epochs, reports, tmp, pki, ch):
    """One timed run; prints its figure and returns (records, seconds, the collector IDs' SQL list)."""
    tag = f"{kind}-{n_col}-{n_epochs}x{reports}-{random.getrandbits(32):08x}"
    per = n_epochs // n_col
    data = [stream(1 + i * per, per, reports) for i in range(n_col)]
    cols = []
    for i in range(n_col):
        d = os.path.join(tmp, f"{tag}-{i}")
        os.makedirs(d)
        extra = ("--store", ch.url, "--store-credentials", ch.credentials, "--collector-id", f"{tag}-{i}") \
            if kind == "clickhouse" else ()
        cols.append(tc.Collector(d, pki, *extra))
    ids = ",".join(f"'{tag}-{i}'" for i in range(n_col))
    try:
        threads = [threading.Thread(target=send, args=(c, b)) for c, b in zip(cols, data)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sent = time.monotonic() - t0
        end = t0 + WAIT
        while time.monotonic() < end:
            if kind == "sqlite":
                if all(sqlite_done(c.db) for c in cols):
                    break
            # rows, not FINAL (a FINAL count merges on read: it cost the server a share of the run);
            # a retired epoch is written once here, and the outcomes are checked with FINAL below
            elif jrows(ch, f"SELECT count() AS n FROM epochs WHERE collector_id IN ({ids})"
                           " AND isNotNull(retired_ms)")[0]["n"] >= per * n_col:
                break
            time.sleep(0.01)
        elapsed = time.monotonic() - t0
        if kind == "sqlite":
            ok = sum(sqlite_check(c.db, reports) for c in cols)
        else:
            ok = jrows(ch, f"SELECT count() AS n FROM epochs FINAL WHERE collector_id IN ({ids}) AND"
                           f" outcome = 'complete' AND first_report_id = 1 AND last_report_id = {reports} AND"
                           f" requests = {requests_at(reports)} AND isNotNull(retired_ms)")[0]["n"]
    finally:
        for c in cols:
            c.stop()
    if ok != per * n_col:
        print(f"{kind} {n_col} collectors {n_epochs}x{reports}: only {ok} of {per * n_col} epochs complete "
              f"in the store", file=sys.stderr)
        sys.exit(1)
    n = per * n_col * reports
    store = "ClickHouse (one server)" if kind == "clickhouse" else "SQLite (a file per collector)"
    print(f"collect into {store}, {n_col} collector{'s' if n_col > 1 else ''}, {n_epochs} epochs x {reports} "
          f"reports, TLS 1.3: {n} records in {elapsed:.3f} s (sent in {sent:.3f} s) = {n / elapsed:.0f} records/s "
          f"stored; outcomes "
          f"checked: {ok} epochs complete", flush=True)
    return n, elapsed, ids


def server_rate(ch, n_epochs, reports, n, elapsed, ids):
    """The server's own RowBinary INSERT of the rows the collector just wrote: every epochs row of
    its collector IDs (every version: merges of epochs are stopped during the collector's run and
    this INSERT, so that none is merged away; SELECT ... FORMAT RowBinary) in one INSERT into
    epochs_ref, a table AS epochs (same engine, merges stopped too), client wall time. Prints both rates and the
    collector's as a percentage of the server's; returns that percentage."""
    body = ch.query(f"SELECT * FROM epochs WHERE collector_id IN ({ids}) FORMAT RowBinary", database=DATABASE,
                    raw=True)
    rows = jrows(ch, f"SELECT count() AS n FROM epochs WHERE collector_id IN ({ids})")[0]["n"]
    ch.query("CREATE TABLE IF NOT EXISTS epochs_ref AS epochs", database=DATABASE)
    ch.query("TRUNCATE TABLE epochs_ref", database=DATABASE)
    ch.query(f"SYSTEM STOP MERGES {DATABASE}.epochs_ref")
    t0 = time.monotonic()
    ch.query("INSERT INTO epochs_ref FORMAT RowBinary", data=body, database=DATABASE)
    dt = time.monotonic() - t0
    got = jrows(ch, "SELECT count() AS n FROM epochs_ref")[0]["n"]
    assert got == rows, (got, rows)
    pct = 100.0 * dt / elapsed
    print(f"ClickHouse server's own RowBinary INSERT of the same {rows} epoch rows ({len(body)} octets, one "
          f"INSERT), {n_epochs} epochs x {reports} reports: {n / dt:.0f} records/s ({rows / dt:.0f} rows/s); "
          f"collector / server {pct:.1f} %", flush=True)
    return pct


def formats(ch, n=100000):
    """One INSERT of n epoch rows in each format; client wall time, best of 5 interleaved rounds."""
    ch.query("CREATE TABLE IF NOT EXISTS fmt_bench AS epochs", database=DATABASE)
    cols = [r[0] for r in ch.rows("DESCRIBE TABLE fmt_bench")]
    rows = []
    for i in range(n):
        r = {c: i for c in cols}
        r.update(collector_id="bench", src="192.0.2.1", dst="192.0.2.2", state="final", outcome="complete",
                 reason="", family=4, has_vlan_ns=0)
        rows.append(r)
    strs = {"collector_id", "src", "dst", "state", "outcome", "reason"}
    u8 = {"family", "has_vlan_ns"}

    def rowbinary(r):
        out = bytearray()
        for c in cols:
            v = r[c]
            nullable = c in ("window", "flags", "flow_start_ms", "flow_end_ms", "first_report_id", "last_report_id",
                             "requests", "skipped", "filled", "expired", "abandoned", "pending", "repeated",
                             "unclassified_late", "reason", "retired_ms")
            if nullable:
                out.append(0)
            if c in strs:
                b = v.encode()
                out.append(len(b))
                out += b
            elif c in u8:
                out.append(v)
            else:
                out += struct.pack("<Q", v)
        return bytes(out)

    bodies = {
        "RowBinary": b"".join(rowbinary(r) for r in rows),
        "TabSeparated": "".join("\t".join(str(r[c]) for c in cols) + "\n" for r in rows).encode(),
        "JSONEachRow": "".join(json.dumps({c: r[c] for c in cols}) + "\n" for r in rows).encode(),
    }
    best = {}
    for _ in range(5):  # the formats interleaved, so that a busy moment of the machine hits them alike
        for fmt, body in bodies.items():
            ch.query("TRUNCATE TABLE fmt_bench", database=DATABASE)
            t0 = time.monotonic()
            ch.query(f"INSERT INTO fmt_bench FORMAT {fmt}", data=body, database=DATABASE)
            dt = time.monotonic() - t0
            best[fmt] = min(best.get(fmt, dt), dt)
            got = jrows(ch, "SELECT count() AS n FROM fmt_bench")[0]["n"]
            assert got == n, (fmt, got)
    for fmt, body in bodies.items():
        print(f"ClickHouse INSERT of {n} epoch rows in {fmt} ({len(body) / n:.0f} octets a row): "
              f"{n / best[fmt]:.0f} records/s", flush=True)
    ch.query("DROP TABLE fmt_bench", database=DATABASE)


def main():
    why = skip_reason()
    if why:
        print(f"bench_collect_clickhouse: skipped: {why}", file=sys.stderr)
        return 0
    tmp = tempfile.mkdtemp(prefix="bench_ch.")
    try:
        pki = os.path.join(tmp, "pki")
        os.makedirs(pki)
        subprocess.run([tc.GEN_CERTS, pki], check=True, capture_output=True)
        with server(os.path.join(tmp, "ch")) as ch:
            r = subprocess.run([tc.BIN, "collect", "--store-init", "--store", ch.url, "--store-credentials",
                                ch.credentials], capture_output=True, text=True)
            if r.returncode:
                print(r.stderr, file=sys.stderr)
                return 1
            if not ONLY_RATIO:
                formats(ch)
            builds = [("this build", tc.BIN)] + ([("other build", OTHER)] if OTHER else [])
            pcts = {}
            for r in range(RUNS):  # the workloads, the builds and the two measurements alternate
                for n_epochs, reports in WORKLOADS:
                    for build, path in builds if r % 2 == 0 else builds[::-1]:
                        tc.BIN = path
                        if OTHER:
                            print(f"{build}:", flush=True)
                        for n_col in (1,) if ONLY_RATIO else (1, 2):
                            for kind in ("clickhouse",) if ONLY_RATIO else ("sqlite", "clickhouse"):
                                ref = kind == "clickhouse" and n_col == 1
                                if ref:  # the versions it writes must stay to be read back (see server_rate)
                                    ch.query(f"SYSTEM STOP MERGES {DATABASE}.epochs")
                                n, elapsed, ids = run(kind, n_col, n_epochs, reports, tmp, pki, ch)
                                if ref:
                                    pcts.setdefault((n_epochs, reports, build), []).append(
                                        server_rate(ch, n_epochs, reports, n, elapsed, ids))
                                    ch.query(f"SYSTEM START MERGES {DATABASE}.epochs")
            for (n_epochs, reports, build), p in pcts.items():
                p.sort()
                print(f"ClickHouse, 1 collector ({build}), {n_epochs} epochs x {reports} reports: collector / "
                      f"server median {p[len(p) // 2]:.1f} % (min {p[0]:.1f}, max {p[-1]:.1f}, {len(p)} runs)",
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
