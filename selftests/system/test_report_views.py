# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter report`'s views of a store: the sequence health beside the
outcome, --anomalies, --summary (text, JSON, CSV; --top), the default table
and --verbose, the table at 132 columns in a real terminal (tmux).

A real collector fills the store: hand-written IPFIX Messages
(test_collector.py's builder, from RFC 7011 and [SEQOBS]'s profile) over
TLS 1.3. The counters sent are [SEQOBS]'s "Verification Examples", so each
expected value below follows from the stream, never from report's output:
  A, observation point 7: example 1 (W=4, PSNs 100,102,101,103,102:
     requests 5, skipped 1, filled 1, repeated 1), then a clean epoch of 10;
  B, observation point 7: example 3 closed (requests 3, skipped 4, expired 1,
     abandoned 3), then example 3 left open (pending 3, never final:
     incomplete when its session ends);
  A, observation point 8: example 2 (requests 3, unclassifiedLate 1,
     repeated 1): the same connection at another observation point is
     another line of the summary ([SEQOBS]: counters of different
     observation points are never combined);
  C (P_Key 0x8001): two clean epochs of 4, and a record with an unassigned
     flag bit (kept raw: an epoch without a measurement).
"""
import csv
import functools
import io
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from procs import rocemeter_report  # tests/lib
from test_collector import (BIN, FINAL, GEN_UNVERIFIED, Collector, data_msg, report, send_session,  # noqa: F401
                            templates_msg)

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built")

T = 1700000000000  # flow times, UNIX ms
A = dict(src=bytes([192, 0, 2, 1]), dst=bytes([192, 0, 2, 2]), qp=0x123)
B = dict(src=bytes([192, 0, 2, 1]), dst=bytes([192, 0, 2, 3]), qp=0x200)
C = dict(src=bytes([198, 51, 100, 1]), dst=bytes([198, 51, 100, 2]), qp=0x300, pkey=0x8001)
ZERO = dict(skipped=0, filled=0, expired=0, abandoned=0, pending=0, repeated=0, late=0)


def final(r):
    return dict(r, flags=r["flags"] | FINAL)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run([os.path.join(os.path.dirname(BIN), "..", "scripts", "gen-certs"), str(d)], check=True,
                   capture_output=True)
    return str(d)


@pytest.fixture(scope="module")
def store(tmp_path_factory, pki):
    c = Collector(tmp_path_factory.mktemp("collector"), pki)
    try:
        ex1 = report(epoch=1, rid=1, obs=7, start=T, end=T + 500, **A)  # the builder's default: example 1
        clean_a = report(epoch=2, rid=1, obs=7, start=T + 1000, end=T + 1500, requests=10, **ZERO, **A)
        ex3 = report(epoch=3, rid=1, obs=7, start=T + 2000, end=T + 2500, requests=3, **dict(ZERO, skipped=4,
                     expired=1, abandoned=3), **B)
        ex3_open = report(epoch=4, rid=1, obs=7, start=T + 3000, end=T + 3500, requests=3, **dict(ZERO, skipped=4,
                          expired=1, pending=3), **B)
        ex2 = report(epoch=5, rid=1, obs=8, start=T + 4000, end=T + 4500, requests=3, **dict(ZERO, repeated=1,
                     late=1), **A)
        c1 = report(epoch=6, rid=1, obs=7, start=T + 5000, end=T + 5500, requests=4, **ZERO, **C)
        c2 = report(epoch=7, rid=1, obs=7, start=T + 6000, end=T + 6500, requests=4, **ZERO, **C)
        raw = report(epoch=8, rid=1, obs=7, flags=GEN_UNVERIFIED | 0x0040, **C)
        send_session(c, templates_msg(), data_msg(final(ex1), final(clean_a), final(ex3), ex3_open, final(ex2),
                                                  final(c1), final(c2), raw))
        c.wait_ended(1)
    finally:
        assert c.stop() == 0
    return c.db


run = functools.partial(rocemeter_report, binary=BIN)  # run(db, *args): report's output


def epochs_of(db, *args):
    return [json.loads(x) for x in run(db, "--json", *args).splitlines()]


# ------------------------------------------------------------ --anomalies

def test_anomalies_are_the_epochs_not_clean(store):
    every = [e["rdmaSequenceEpochId"] for e in epochs_of(store)]
    assert every == [1, 2, 3, 4, 5, 6, 7, 8]
    # 1 filled and repeated, 3 expired and abandoned, 4 expired and pending, 5 late and repeated;
    # 2, 6, 7 clean; 8 has no measurement (nothing observed to call clean or not)
    assert [e["rdmaSequenceEpochId"] for e in epochs_of(store, "--anomalies")] == [1, 3, 4, 5]
    # the JSON objects themselves are unchanged by the filter
    assert epochs_of(store, "--anomalies") == [e for e in epochs_of(store) if e["rdmaSequenceEpochId"] in (1, 3, 4, 5)]
    assert [e["rdmaSequenceEpochId"] for e in epochs_of(store, "--anomalies", "--outcome", "incomplete")] == [4]


def test_outcome_stands_beside_health(store):
    """Epoch 3 has positions never seen and is complete: the outcome is report coverage."""
    rows = table(run(store), EPOCH_COLUMNS)
    assert [(r["EPOCH"], r["OUTCOME"], r["SEQUENCE"]) for r in rows] == [
        ("1", "complete", "seen late 1, repeated 1"),
        ("2", "complete", "clean"),
        ("3", "complete", "never seen 4"),
        ("4", "incomplete", "never seen 1, pending 3"),
        ("5", "complete", "repeated 1, unclassified late 1"),
        ("6", "complete", "clean"),
        ("7", "complete", "clean"),
        ("8", rows[7]["OUTCOME"], "no measurement")]
    # the connection as --connection takes it (the P_Key when it is not the default 0xffff)
    assert [r["CONNECTION"] for r in rows[:3]] == ["192.0.2.1,192.0.2.2,0x123"] * 2 + ["192.0.2.1,192.0.2.3,0x200"]
    assert rows[5]["CONNECTION"] == "198.51.100.1,198.51.100.2,0x300,0x8001"
    assert run(store, "--connection", rows[5]["CONNECTION"]) == "\n".join(
        run(store).splitlines()[i] for i in (0, 6, 7, 8)) + "\n"
    assert [r["OP"] for r in rows] == ["7", "7", "7", "7", "8", "7", "7", "7"]
    assert [r["REQUESTS"] for r in rows] == ["5", "10", "3", "3", "3", "4", "4", "-"]
    assert rows[0]["FLOW END"] == "2023-11-14T22:13:20"  # T + 500 ms, to the second (Python: datetime)
    assert rows[7]["FLOW END"] == "-"


# ------------------------------------------------------------ the table and --verbose

EPOCH_COLUMNS = ["FLOW END", "SESSION", "EPOCH", "OUTCOME", "OP", "CONNECTION", "REQUESTS", "SEQUENCE"]
SUMMARY_COLUMNS = ["OP", "CONNECTION", "EPOCHS", "REQUESTS", "NEVER SEEN", "PENDING", "SEEN LATE", "REPEATED",
                   "UNCL LATE", "NOT COMPLETE"]
VERBOSE_COLUMNS = SUMMARY_COLUMNS[:5] + ["SKIPPED", "EXPIRED", "ABANDONED"] + SUMMARY_COLUMNS[5:]


def table(text, names):
    """Rows of a report table as dicts: the header must be names, one space or more apart; a cell is
    one word, but the connection (SRC,DST,QP[,PKEY] [vlan A/B]) and the last column (free text) may
    hold several."""
    lines = text.splitlines()
    assert re.fullmatch(" *" + " +".join(re.escape(n) for n in names), lines[0]), lines[0]
    rows = []
    for line in lines[1:]:
        words, cells = line.split(), []
        for n in names:
            if n == "CONNECTION":
                j = 3 if words[1] == "vlan" else 1
                cells.append(" ".join(words[:j]))
                words = words[j:]
            elif n == names[-1]:
                cells.append(" ".join(words))
            else:
                cells.append(words.pop(0))
        rows.append(dict(zip(names, cells)))
    return rows


def test_default_text_is_a_table_and_verbose_the_prose(store):
    text = run(store)
    assert len(table(text, EPOCH_COLUMNS)) == 8
    assert all(len(x) <= 132 for x in text.splitlines())
    assert "0 skipped positions" not in text and "skipped positions" not in text  # zero counters are not spelled out
    verbose = run(store, "--verbose").splitlines()
    assert len(verbose) == 8  # no header: one line of prose per epoch
    assert verbose[2].startswith("session 1 domain 0 epoch 3: complete | key: observation point 7, 192.0.2.1 -> "
                                 "192.0.2.3, dest QP 0x000200, P_Key 0xffff")
    assert ("observed: 3 requests; 4 skipped positions (0 filled later, 1 expired, 3 abandoned at closure, 0 pending); "
            "0 repeated PSNs; 0 unclassified late requests; W 4") in verbose[2]
    for banned in ("lost", "retransmi", "reorder"):
        assert banned not in text.lower() and banned not in "\n".join(verbose).lower()
    # nothing matches: nothing printed, not even the header
    assert run(store, "--outcome", "open") == ""


def test_table_at_132_columns_in_a_terminal(store, tmp_path):
    """The table and the summary in a 132-column terminal (tmux; a VT100's wide mode): each line is one row
    of the pane, none wrapped. (120 columns before the SESSION column: the widest line here is 127.)"""
    if not shutil.which("tmux"):
        pytest.skip("tmux not installed")
    for i, args in enumerate(((), ("--summary",), ("--anomalies",))):
        sock = str(tmp_path / ("tmux%d.sock" % i))  # one server each: a killed one may still hold its socket
        want = run(store, *args).splitlines()
        out = tmp_path / "done"
        cmd = "%s report --db %s %s; touch %s; sleep 60" % (BIN, store, " ".join(args), out)
        subprocess.run(["tmux", "-S", sock, "new-session", "-d", "-x", "132", "-y", "40", cmd], check=True)
        try:
            end = time.monotonic() + 20
            while not out.exists() and time.monotonic() < end:
                time.sleep(0.05)
            assert out.exists()
            width = subprocess.run(["tmux", "-S", sock, "display", "-p", "#{pane_width}"], capture_output=True,
                                   text=True, check=True).stdout.strip()
            assert width == "132"
            pane = subprocess.run(["tmux", "-S", sock, "capture-pane", "-p"], capture_output=True, text=True,
                                  check=True).stdout.splitlines()
        finally:
            subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
            out.unlink(missing_ok=True)
        assert [x.rstrip() for x in pane[:len(want)]] == want, (args, pane)
        assert not any(x.strip() for x in pane[len(want):]), pane


# ------------------------------------------------------------ --summary

# The summary the stream gives: (observation point, connection) -> sums
EXPECTED = {
    (7, "192.0.2.1", "192.0.2.3", 0x200, 0xFFFF): dict(
        epochs=2, not_clean=2, unmeasured=0, outcomes=dict(complete=1, incomplete=1, invalid=0, open=0),
        requests=6, skipped=8, filled=0, expired=2, abandoned=3, pending=3, repeated=0, late=0,
        start=T + 2000, end=T + 3500),
    (7, "192.0.2.1", "192.0.2.2", 0x123, 0xFFFF): dict(
        epochs=2, not_clean=1, unmeasured=0, outcomes=dict(complete=2, incomplete=0, invalid=0, open=0),
        requests=15, skipped=1, filled=1, expired=0, abandoned=0, pending=0, repeated=1, late=0,
        start=T, end=T + 1500),
    (8, "192.0.2.1", "192.0.2.2", 0x123, 0xFFFF): dict(
        epochs=1, not_clean=1, unmeasured=0, outcomes=dict(complete=1, incomplete=0, invalid=0, open=0),
        requests=3, skipped=0, filled=0, expired=0, abandoned=0, pending=0, repeated=1, late=1,
        start=T + 4000, end=T + 4500),
    (7, "198.51.100.1", "198.51.100.2", 0x300, 0x8001): dict(
        epochs=3, not_clean=0, unmeasured=1, outcomes=None,
        requests=8, skipped=0, filled=0, expired=0, abandoned=0, pending=0, repeated=0, late=0,
        start=T + 5000, end=T + 6500),
}
# sorted by positions never seen (B 5), then pending, seen late (A at 7: 1), repeated (A at 8: 1)
ORDER = list(EXPECTED)


def key_of(s):
    k = s["key"]
    return (k["observationPointId"], k["sourceIPv4Address"], k["destinationIPv4Address"], k["rdmaDestinationQP"],
            k["rdmaPartitionKey"])


def test_summary_json(store):
    rows = [json.loads(x) for x in run(store, "--summary", "--json").splitlines()]
    assert [key_of(r) for r in rows] == ORDER
    for r in rows:
        want = EXPECTED[key_of(r)]
        assert r["observationDomainId"] == 0
        assert (r["epochs"], r["epochs_not_clean"], r["epochs_without_measurement"]) == (
            want["epochs"], want["not_clean"], want["unmeasured"])
        if want["outcomes"]:
            assert r["outcomes"] == want["outcomes"]
        assert sum(r["outcomes"].values()) == want["epochs"]
        assert list(r["outcomes"]) == ["complete", "incomplete", "invalid", "open"]
        t = r["totals"]
        assert (t["requestPacketTotalCount"], t["skippedPsnTotalCount"], t["filledPsnTotalCount"],
                t["expiredPsnTotalCount"], t["abandonedPsnTotalCount"], t["pendingPsnCount"],
                t["repeatedPsnTotalCount"], t["unclassifiedLatePacketTotalCount"]) == tuple(
            want[k] for k in ("requests", "skipped", "filled", "expired", "abandoned", "pending", "repeated", "late"))
        assert r["health"] == dict(never_seen=want["expired"] + want["abandoned"], pending=want["pending"],
                                   seen_late=want["filled"], repeated=want["repeated"],
                                   unclassified_late=want["late"])
        assert (r["first_flow_start_ms"], r["last_flow_end_ms"]) == (want["start"], want["end"])


def test_summary_text_top_and_csv(store):
    rows = table(run(store, "--summary"), SUMMARY_COLUMNS)
    first = EXPECTED[ORDER[0]]
    assert rows[0] == {"OP": "7", "CONNECTION": "192.0.2.1,192.0.2.3,0x200", "EPOCHS": "2", "REQUESTS": "6",
                       "NEVER SEEN": str(first["expired"] + first["abandoned"]), "PENDING": "3", "SEEN LATE": "-",
                       "REPEATED": "-", "UNCL LATE": "-", "NOT COMPLETE": "1 incomplete"}
    assert rows[1]["CONNECTION"] == rows[2]["CONNECTION"] == "192.0.2.1,192.0.2.2,0x123"
    assert (rows[1]["OP"], rows[1]["SEEN LATE"], rows[1]["REPEATED"], rows[1]["NOT COMPLETE"]) == ("7", "1", "1",
                                                                                                    "-")
    assert (rows[2]["OP"], rows[2]["REPEATED"], rows[2]["UNCL LATE"]) == ("8", "1", "1")
    assert rows[3]["CONNECTION"] == "198.51.100.1,198.51.100.2,0x300,0x8001"
    assert rows[3]["REQUESTS"] == "8" and rows[3]["EPOCHS"] == "3"
    verbose = table(run(store, "--summary", "--verbose"), VERBOSE_COLUMNS)
    assert (verbose[0]["SKIPPED"], verbose[0]["EXPIRED"], verbose[0]["ABANDONED"]) == ("8", "2", "3")
    # --top N: the first N lines of the same order
    assert table(run(store, "--summary", "--top", "2"), SUMMARY_COLUMNS) == rows[:2]
    assert [key_of(json.loads(x)) for x in run(store, "--summary", "-j", "--top", "1").splitlines()] == ORDER[:1]
    # CSV: the JSON keys flattened
    records = list(csv.DictReader(io.StringIO(run(store, "--summary", "--format", "csv"))))
    assert [(int(r["observationPointId"]), r["sourceIPv4Address"], r["destinationIPv4Address"],
             int(r["rdmaDestinationQP"]), int(r["rdmaPartitionKey"])) for r in records] == ORDER
    assert records[0]["never_seen"] == "5" and records[0]["incomplete"] == "1" and records[0]["sourceIPv6Address"] == ""
    assert records[3]["epochs_without_measurement"] == "1"


def test_summary_follows_the_filters(store):
    # --anomalies: only the epochs that are not clean are summed (A at 7: epoch 1 only; C: none)
    rows = [json.loads(x) for x in run(store, "--summary", "-j", "--anomalies").splitlines()]
    assert [key_of(r) for r in rows] == ORDER[:3]
    assert (rows[1]["epochs"], rows[1]["totals"]["requestPacketTotalCount"]) == (1, 5)
    # the time range: flows that end at or after T + 3000 (B's open epoch, A at 8, C)
    rows = [json.loads(x) for x in run(store, "--summary", "-j", "--since", str(T + 3000)).splitlines()]
    assert [key_of(r) for r in rows] == [ORDER[0], ORDER[2], ORDER[3]]
    assert rows[0]["epochs"] == 1 and rows[0]["health"]["never_seen"] == 1 and rows[0]["health"]["pending"] == 3
    # one connection (both observation points)
    rows = [json.loads(x) for x in run(store, "--summary", "-j", "--connection", "192.0.2.1,192.0.2.2,0x123")
            .splitlines()]
    assert [key_of(r) for r in rows] == [ORDER[1], ORDER[2]]
    assert run(store, "--summary", "--outcome", "open") == ""


@pytest.mark.parametrize("args,message", [
    (("--top", "3"), "--top counts the lines of --summary: use them together"),
    (("--summary", "--top", "0"), "--top"),
    (("--summary", "--limits"), "--limits shows the collector's limits: not with --summary"),
    (("--anomalies", "--limits"), "--limits shows the collector's limits: not with --anomalies"),
])
def test_usage_errors(store, args, message):
    p = subprocess.run([BIN, "report", "--db", store, *args], capture_output=True, text=True)
    assert p.returncode == 2 and message in p.stderr, p.stderr
