# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""docs/json.md, the schema of every JSON output, against the tables the
commands print from: every Information Element of RM_IPFIX_IES is a key of
a report, every statistic of RM_STATS a key of `status` and of replay's
statistics, every counter of RM_DAEMON_STATS, RM_EXPORT_STATS and
RM_FL_STATS a key of `status`, every opcode class and statistic of the
connection census a key of `connections` and every reason of exclusion
named there, every kind of sequence health (RM_HEALTH_KINDS) and every CSV
column of `report --summary` a key of "report summary". A counter added to a table without its line
in docs/json.md fails here (selftests/system/test_json_keys.py checks what
the commands really print)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


def documented():
    """{section title: set of keys}: the backticked names of each table's first column."""
    sections, title = {}, None
    for line in read("docs", "json.md").splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            sections[title] = set()
        elif title and line.startswith("| `"):
            first = line.split("|")[1]
            sections[title] |= set(re.findall(r"`([^`]+)`", first))
    return sections


def macro(text, name):
    m = re.search(r"#define %s\(X\)(.*?)\n\n" % name, text, re.S)
    assert m, name
    return m.group(1)


def test_sections_exist():
    assert {"reports", "replay statistics", "status", "connections", "report", "report summary",
            "report limits"} <= set(documented())


def test_health_kinds_are_documented():
    """The kinds of RM_HEALTH_KINDS (user/common/health.h) are the keys of `health` in "report summary",
    in their order, and its CSV columns are all documented keys."""
    kinds = re.findall(r'X\(\w+, "(\w+)",', macro(read("user", "common", "health.h"), "RM_HEALTH_KINDS"))
    assert kinds == ["never_seen", "pending", "seen_late", "repeated", "unclassified_late"]
    text = read("docs", "json.md")
    section = text.split("## report summary", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    in_health = [re.findall(r"`(\w+)`", r)[0] for r in rows if re.search(r"`(\w+)`", r) and
                 re.findall(r"`(\w+)`", r)[0] in kinds]
    assert in_health == kinds
    src = read("user", "report", "cmd_report.c")
    csv = re.findall(r'"(\w+)",', src.split("csv_summary_columns[] = {", 1)[1].split("};", 1)[0])
    # the counts' 32, the epochs of the four closure reasons, then the point's name and the exporter identity
    # (peer_name, peer_subject)
    assert len(csv) == 39 and set(csv) - documented()["report summary"] == set()
    # the closure reasons' columns: the flag names (include/rocemeter/seqobs.h RM_FLAGS) of
    # RM_CLOSURE_REASONS (user/common/report_text.h), in its order
    names = dict(re.findall(r'X\((\w+), 0x[0-9a-f]+, "(\w+)"', macro(read("include", "rocemeter", "seqobs.h"),
                                                                  "RM_FLAGS")))
    order = re.findall(r"X\((\w+), \"", macro(read("user", "common", "report_text.h"), "RM_CLOSURE_REASONS"))
    assert [names[o] for o in order] == ["profileViolation", "captureDiscontinuity", "stateExhaustion",
                                         "serialDiscontinuity"]
    assert [c for c in csv if c in names.values()] == [names[o] for o in order]


def test_report_keys_are_the_information_elements():
    ies = re.findall(r'X\(\w+,\s*"(\w+)"', macro(read("include", "rocemeter", "ipfix_ie.h"), "RM_IPFIX_IES"))
    assert len(ies) == 23
    assert set(ies) | {"flag_names"} == documented()["reports"]


def test_statistics_are_documented():
    stats = re.findall(r'X\(\w+, "(\w+)",', macro(read("include", "rocemeter", "meter.h"), "RM_STATS"))
    assert stats[0] == "frames" and len(stats) >= 22
    doc = documented()
    assert set(stats) - doc["replay statistics"] == set()
    assert set(stats) - doc["status"] == set()


def test_daemon_export_and_flowlabel_counters_are_documented():
    status = documented()["status"]
    daemon = re.findall(r"X\((\w+), (?:COUNTER|GAUGE),", macro(read("user", "meter", "daemon.h"), "RM_DAEMON_STATS"))
    export = re.findall(r"X\((\w+), (?:COUNTER|GAUGE),", macro(read("user", "export", "export.h"), "RM_EXPORT_STATS"))
    fl = re.findall(r'X\(\w+, "(\w+)",', macro(read("include", "rocemeter", "flowlabel.h"), "RM_FL_STATS"))
    assert daemon and export and fl
    assert set(daemon) - status == set()
    assert set(export) - status == set()
    assert set(fl) - status == set()


def test_census_keys_are_documented():
    census = read("include", "rocemeter", "census.h")
    classes = re.findall(r'X\(\w+, "(\w+)",', macro(census, "RM_CENSUS_CLASSES"))
    stats = re.findall(r'X\(\w+, "(\w+)",', macro(census, "RM_CENSUS_STATS"))
    reasons = re.findall(r'X\(\w+, "(\w+)",', macro(read("user", "census", "connections.h"), "RM_CONN_EXCLUSIONS"))
    assert len(classes) == 9 and len(stats) == 5 and len(reasons) == 8
    doc = documented()["connections"]
    assert set(classes) - doc == set()
    assert set(stats) - doc == set()
    text = read("docs", "json.md")
    row = next(line for line in text.splitlines() if line.startswith("| `excluded` |"))
    assert re.findall(r"`(\w+)`", row.split("|")[3]) == reasons
