# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Observation point names from outside, end to end (docs/collector.md
"Observation point names"): what the collector refuses to store, how report
prints a name that reached an older store anyway (text table, --verbose,
CSV), CSV formula injection, and the text tables' columns with 19-digit
observationPointIds.

A real collector is fed hand-written IPFIX (test_collector.py's builder,
RFC 7011; the names Options Template 262: scope observationPointId 138/8,
interfaceName 82/64). An "older store" is the same database with rows
written by sqlite3 directly, as a collector before the rule stored them.
Expected texts are spelled out here (escapes as docs/collector.md gives
them); columns are checked against the header's positions.
"""
import csv
import functools
import io
import os
import re
import sqlite3

import pytest

from procs import rocemeter_report  # tests/lib
from test_collector import (BIN, FINAL, GEN_UNVERIFIED, Collector, data_msg, raw, report,  # noqa: F401
                            send_session, templates_msg)
from test_collector import collector, pki  # noqa: F401  (fixtures)
from test_collector import points_msg

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built")

ESC_CSI = b"leaf\x1b[2J\x1b[31mred"  # clear the screen, red
C1_CSI = "leaf\u009b2J".encode()     # the 8-bit CSI
RLO = "leaf\u202egnp.exe".encode()    # right-to-left override
LRI = "a\u2066b".encode()             # left-to-right isolate
BAD_UTF8 = b"leaf\xff\xfe\xc0\xaf"    # never UTF-8; an overlong '/'
LONG64 = b"n" * 64                    # the whole field, no NUL: 64 octets
NAMES_BAD = [ESC_CSI, C1_CSI, RLO, LRI, BAD_UTF8, LONG64]


run = functools.partial(rocemeter_report, binary=BIN)  # run(db, *args, text=True): report's output


def final(obs, epoch=None, **kw):
    return dict(report(epoch=epoch or obs % 1000 + 1, rid=1, obs=obs, **kw), flags=GEN_UNVERIFIED | FINAL)


def test_collector_refuses_bad_names(collector):
    """Each bad name is a rejected record (sessions.rejected, raw_records with the reason), never stored;
    the good ones beside them (63 octets, UTF-8 beyond ASCII) are."""
    good = [(20, b"m" * 63), (21, "φύλλο-1".encode())]
    pts = [(10 + i, n) for i, n in enumerate(NAMES_BAD)] + good
    send_session(collector, templates_msg(), points_msg(pts, seq=1), data_msg(final(20), seq=1 + len(pts)))
    (s,) = collector.wait_ended(1)
    assert s["rejected"] == len(NAMES_BAD) and s["seq_gaps"] == 0
    stored = collector.query("SELECT observation_point_id, name FROM observation_points ORDER BY 1")
    assert [(r[0], r[1]) for r in stored] == [(20, "m" * 63), (21, "φύλλο-1")]
    reasons = sorted(r["reason"] for r in raw(collector))
    assert reasons == sorted(["Options Template 262: an observation point name: a control character"] * 2 +
                             ["Options Template 262: an observation point name: a bidirectional override"] * 2 +
                             ["Options Template 262: an observation point name: not valid UTF-8",
                              "Options Template 262: an observation point name longer than 63 octets"]), reasons


# A name as an older store kept it, bound (as the store binds names) to the exporter of the session stored.
OLD_COLS = "(domain, observation_point_id, name, updated_ms, peer_name, peer_subject)"
OLD_SEL = "SELECT 0, ?, ?, 0, coalesce(peer_name, ''), coalesce(peer_subject, '') FROM sessions LIMIT 1"


@pytest.fixture
def old_store(collector):
    """A store whose observation_points hold names from before the rule (written here with sqlite3)."""
    send_session(collector, templates_msg(), data_msg(*[final(o) for o in (10, 11, 12, 13, 14)], seq=1))
    collector.wait_ended(1)
    assert collector.stop() == 0
    con = sqlite3.connect(collector.db)
    con.text_factory = bytes
    for i, n in enumerate([ESC_CSI, C1_CSI, RLO, BAD_UTF8, b'=HYPERLINK("http://x.test/","y")']):
        con.execute(f"INSERT OR REPLACE INTO observation_points {OLD_COLS} {OLD_SEL}", (10 + i, n))
    con.commit()
    con.close()
    return collector.db


SHOWN = {10: "leaf\\x1B[2J\\x1B[31mred", 11: "leaf\\u009B2J", 12: "leaf\\u202Egnp.exe",
         13: "leaf\\xFF\\xFE\\xC0\\xAF", 14: '=HYPERLINK("http://x.test/","y")'}
NEVER = [b"\x1b", "\u009b".encode(), "\u202e".encode(), b"\xff", b"\xc0"]


def test_text_outputs_escape_old_names(old_store):
    for args in ((), ("--verbose",), ("--anomalies",), ("--format", "csv")):
        out = run(old_store, *args, text=False)
        for b in NEVER:
            assert b not in out, (args, b, out)
    table = run(old_store).splitlines()
    for obs, shown in SHOWN.items():
        assert any((" %d %s " % (obs, shown)) in line for line in table), (obs, table)
    verbose = run(old_store, "--verbose")
    for obs, shown in SHOWN.items():
        assert "observation point %d (%s)," % (obs, shown) in verbose


def test_csv_neutralises_formulas(old_store):
    """OWASP "CSV Injection": a text field starting with = + - @ TAB CR gets a ' and is quoted."""
    text = run(old_store, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    names = {int(r["observationPointId"]): r["observation_point_name"] for r in rows}
    assert names[14] == "'=HYPERLINK(\"http://x.test/\",\"y\")"
    assert '"\'=HYPERLINK(""http://x.test/"",""y"")"' in text
    assert names[10] == SHOWN[10] and names[12] == SHOWN[12]
    assert names[13] == "leaf????"  # CSV is the JSON object flattened: its text is UTF-8, other octets '?'

    # no field the spreadsheet would run
    for r in rows:
        for v in r.values():
            assert not v or v[0] not in "=+-@\t\r", r


@pytest.mark.parametrize("name", [b"+cmd|' /C calc'!A0", b"-2+3", b"@SUM(A1:A9)", b"=1+1"])
def test_csv_formula_prefixes(collector, name):
    """Names the collector accepts (printable) that a spreadsheet would read as a formula."""
    want = name.decode()
    send_session(collector, templates_msg(), points_msg([(7, name)], seq=1), data_msg(final(7), seq=2))
    collector.wait_ended(1)
    rows = list(csv.DictReader(io.StringIO(run(collector.db, "--format", "csv"))))
    assert [r["observation_point_name"] for r in rows] == ["'" + want]


# ------------------------------------------------------------ column alignment

BIG = [1234567890123456789, 9876543210987654321, 2, 18446744073709551615]  # 19, 19, 1 and 20 digits


EPOCH_COLUMNS = ["FLOW END", "SESSION", "EPOCH", "OUTCOME", "OP", "CONNECTION", "REQUESTS", "SEQUENCE"]
SUMMARY_COLUMNS = ["OP", "CONNECTION", "EPOCHS", "REQUESTS", "NEVER SEEN", "PENDING", "SEEN LATE", "REPEATED",
                   "UNCL LATE", "NOT COMPLETE"]


def check_aligned(text, names, right):
    """The header is names, one space or more apart; every row's cell of a right-aligned column ends where
    its header ends, of a left-aligned one starts where its header starts; no line over 132 columns (a 20-digit
    observationPointId and two kinds: 122)."""
    lines = text.splitlines()
    m = re.fullmatch(" *" + " +".join("(%s)" % re.escape(n) for n in names), lines[0])
    assert m, lines[0]
    for line in lines[1:]:
        assert len(line) <= 132, line
        for i, name in enumerate(names):
            start, end = m.span(i + 1)
            if name in right:
                assert line[end - 1] != " " and (end == len(line) or line[end] == " "), (name, line, lines[0])
            else:
                assert line[start] != " " and (start == 0 or line[start - 1] == " "), (name, line, lines[0])


@pytest.fixture
def big_store(collector):
    reps = [final(o, epoch=i + 1, skipped=1, filled=1) for i, o in enumerate(BIG)]
    send_session(collector, templates_msg(), data_msg(*reps, seq=1))
    collector.wait_ended(1)
    return collector.db


def test_table_columns_with_19_digit_ids(big_store):
    text = run(big_store)
    assert {int(line.split()[4]) for line in text.splitlines()[1:]} == set(BIG)
    check_aligned(text, EPOCH_COLUMNS, {"SESSION", "EPOCH", "OP", "REQUESTS"})
    check_aligned(run(big_store, "--anomalies"), EPOCH_COLUMNS, {"SESSION", "EPOCH", "OP", "REQUESTS"})
    summary = run(big_store, "--summary")
    assert {int(line.split()[0]) for line in summary.splitlines()[1:]} == set(BIG)
    check_aligned(summary, SUMMARY_COLUMNS, {"OP", "EPOCHS", "REQUESTS", "NEVER SEEN", "PENDING", "SEEN LATE", "REPEATED",
                            "UNCL LATE"})


def test_table_columns_with_names(collector):
    """Names of different lengths (one beyond ASCII) beside the IDs: the columns still line up, counted in
    characters."""
    pts = [(7, b"leaf-a"), (8, "φύλλο-β-long-name".encode())]
    send_session(collector, templates_msg(), points_msg(pts, seq=1),
                 data_msg(final(7, epoch=1), final(8, epoch=2), final(9, epoch=3), seq=3))
    collector.wait_ended(1)
    text = run(collector.db)
    assert "8 φύλλο-β-long-name " in text
    check_aligned(text, EPOCH_COLUMNS, {"SESSION", "EPOCH", "OP", "REQUESTS"})


# ------------------------------------------------------------ the HTML page

def test_html_page_shows_names(collector, tmp_path):
    """report --format html in chromium (test_report_html.py's harness): the names beside the IDs in the
    overview per observation point and in the connections table, as text: markup in a name stays text."""
    th = pytest.importorskip("test_report_html")
    if th.CHROMIUM is None or not os.path.exists(th.D3):
        pytest.skip("chromium or libjs-d3 not installed (make deps)")
    pts = [(7, b"leaf-a <b>x</b>"), (8, "φύλλο".encode())]
    send_session(collector, templates_msg(), points_msg(pts, seq=1),
                 data_msg(final(7, epoch=1), final(8, epoch=2), final(9, epoch=3), seq=3))
    collector.wait_ended(1)
    assert collector.stop() == 0
    with sqlite3.connect(collector.db) as con:  # as an older store kept it: escaped on the page too
        con.execute(f"INSERT INTO observation_points {OLD_COLS} {OLD_SEL}", (9, "x\u202ey"))
    page = th.write_html(collector.db, str(tmp_path / "names.html"))
    d = th.render(page, str(tmp_path / "r"))
    want = {"7": "7 leaf-a <b>x</b>", "8": "8 φύλλο", "9": "9 x\\u202Ey"}
    assert {r[0]["data-obs"]: r[2][0] for r in d.tables["obs-table"][1:]} == want
    conns = {r[0]["data-conn"].split("|")[0]: r[2][1] for r in d.tables["conn-table"][1:]}
    assert {k: v.rsplit(" @ ", 1)[1] for k, v in conns.items()} == want
    dom = th.chromium(page, str(tmp_path / "dom"), "--dump-dom")[0]
    assert "<b>x</b>" not in dom and "leaf-a &lt;b&gt;x&lt;/b&gt;" in dom
    assert "Observation point 7 leaf-a &lt;b&gt;x&lt;/b&gt;</h3>" in dom


def test_csv_ids_above_2_63(big_store):
    """observationPointIds up to 2^64 - 1 (the config's maximum) are numbers in the CSV, as in the text
    table and the JSON, for the epochs and --summary (trial: those >= 2^63 showed the JSON writer's internal
    "\\x01u64:" mark)."""
    import json
    rows = list(csv.DictReader(io.StringIO(run(big_store, "--format", "csv"))))
    assert sorted(int(r["observationPointId"]) for r in rows) == sorted(BIG)
    assert not any("u64" in v for r in rows for v in r.values()), rows
    epochs = [json.loads(line) for line in run(big_store, "--json").splitlines()]  # one object a line
    assert sorted(e["key"]["observationPointId"] for e in epochs) == sorted(BIG)
    text = {int(line.split()[4]) for line in run(big_store).splitlines()[1:]}
    assert {int(r["observationPointId"]) for r in rows} == text
    summary = list(csv.DictReader(io.StringIO(run(big_store, "--summary", "--format", "csv"))))
    assert sorted(int(r["observationPointId"]) for r in summary) == sorted(BIG), summary


# ------------------------------------------------------------ fix-names: bounds and layouts

from test_collector import ipfix_set, message, spec  # noqa: E402
import struct  # noqa: E402


def names_msg(points, field_len=64, seq=1, tid=262):
    """Template 262 with interfaceName of field_len octets (65535: variable length, RFC 7011 section 7,
    one-octet length prefix) and one record per (ID, name bytes), NUL-padded to a fixed length."""
    otmpl = struct.pack(">HHH", tid, 2, 1) + spec(0, 138, 8) + spec(0, 82, field_len)
    if field_len == 65535:
        recs = b"".join(struct.pack(">QB", i, len(n)) + n for i, n in points)
    else:
        recs = b"".join(struct.pack(">Q", i) + n.ljust(field_len, b"\0") for i, n in points)
    return message(ipfix_set(3, otmpl), ipfix_set(tid, recs), seq=seq)


def test_name_nul_inside_and_empty_rejected(collector):
    """The field is NUL-padded: after the first NUL only NULs. "ab\\0cd" was stored as "ab"; an empty
    name (all NUL) was stored as ''. Both are rejected records with their reason now."""
    pts = [(30, b"ab\0cd"), (31, b""), (32, b"ok\0\0")]
    send_session(collector, templates_msg(), points_msg(pts, seq=1), data_msg(final(32), seq=1 + len(pts)))
    (s,) = collector.wait_ended(1)
    assert s["rejected"] == 2 and s["seq_gaps"] == 0
    stored = collector.query("SELECT observation_point_id, name FROM observation_points ORDER BY 1")
    assert [(r[0], r[1]) for r in stored] == [(32, "ok")]
    assert sorted(r["reason"] for r in raw(collector)) == [
        "Options Template 262: an observation point name: a NUL inside "
        "(octets other than NUL padding after the first NUL)",
        "Options Template 262: an observation point name: empty"]


def test_name_field_of_other_fixed_lengths(collector):
    """interfaceName of 100 octets: names are read up to the NUL (stored), one of 80 octets is longer than
    63 and rejected; before, the whole Template's records were ignored, neither stored nor counted."""
    pts = [(40, b"leaf-100"), (41, b"x" * 80)]
    send_session(collector, templates_msg(), names_msg(pts, field_len=100, seq=1), data_msg(final(40), seq=3))
    (s,) = collector.wait_ended(1)
    assert s["rejected"] == 1 and s["seq_gaps"] == 0
    stored = collector.query("SELECT observation_point_id, name FROM observation_points ORDER BY 1")
    assert [(r[0], r[1]) for r in stored] == [(40, "leaf-100")]
    assert [r["reason"] for r in raw(collector)] == [
        "Options Template 262: an observation point name longer than 63 octets"]


def test_name_field_of_variable_length_rejected(collector):
    """A variable-length interfaceName: the records are rejected with the reason, counted, never stored."""
    send_session(collector, templates_msg(), names_msg([(50, b"x" * 80)], field_len=65535, seq=1))
    (s,) = collector.wait_ended(1)
    assert s["rejected"] == 1, dict(s)
    assert collector.query("SELECT * FROM observation_points") == []
    assert [r["reason"] for r in raw(collector)] == [
        "Data Set for Template 262: Options Template 262: interfaceName (82) without the names layout "
        "(scope observationPointId 138 of 8 octets, interfaceName of a fixed length)"]


def test_max_observation_points_per_session(tmp_path, pki):
    """[collect] max_observation_points 3: the 4th and 5th distinct IDs of one Transport Session are
    rejected records (counted, with the reason); a name again for an admitted ID is stored."""
    cfg = tmp_path / "c.ini"
    cfg.write_text("[collect]\nmax_observation_points = 3\n")
    c = Collector(tmp_path, pki, "--config", str(cfg))
    try:
        pts = [(1, b"a"), (2, b"b"), (3, b"c"), (4, b"d"), (5, b"e"), (2, b"b2")]
        send_session(c, templates_msg(), points_msg(pts, seq=1))
        (s,) = c.wait_ended(1)
        assert s["rejected"] == 2, dict(s)
        stored = c.query("SELECT observation_point_id, name FROM observation_points ORDER BY 1")
        assert [(r[0], r[1]) for r in stored] == [(1, "a"), (2, "b2"), (3, "c")]
        assert sorted(r["reason"] for r in raw(c)) == [
            "Options Template 262: observation point %d beyond max_observation_points 3 distinct names in "
            "this Transport Session" % i for i in (4, 5)]
        lim = c.query("SELECT * FROM run_limits WHERE name = 'max_observation_points'")
        assert [r["value"] for r in lim] == [3], [dict(r) for r in lim]
        assert re.search(r"^  max_observation_points +3\b", run(c.db, "--limits"), re.M)
    finally:
        c.stop()
