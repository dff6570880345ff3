# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""docs/meter.md's bpftool section ("Maps and pins") against the BTF of build/meter.bpf.o (bpftool
btf dump), so that it names only maps and fields the meter has: the map table, its struct fields
(nested ones too), the dump it shows, and the index table of the statistics against RM_STATS and
the size of v[].
"""
import json
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OBJ = os.path.join(ROOT, os.environ.get("BUILD", "build"), "meter.bpf.o")


def section():
    text = open(os.path.join(ROOT, "docs", "meter.md")).read()
    a = text.index("The pinned maps carry BTF")
    return text[a:text.index("## Connection census", a)]


@pytest.fixture(scope="module")
def btf():
    assert shutil.which("bpftool"), "bpftool missing: run 'make deps'"
    assert os.path.exists(OBJ), OBJ + " missing: run 'make'"
    types = json.loads(subprocess.run(["bpftool", "-j", "btf", "dump", "file", OBJ], capture_output=True,
                                      text=True, check=True).stdout)["types"]
    return {t["id"]: t for t in types}


def strip(btf, tid):
    """The type behind typedefs and qualifiers."""
    t = btf[tid]
    while t["kind"] in ("TYPEDEF", "CONST", "VOLATILE"):
        t = btf[t["type_id"]]
    return t


def struct(btf, name):
    (t,) = [t for t in btf.values() if t["kind"] == "STRUCT" and t["name"] == name]
    return t


def members(t):
    return [m["name"] for m in t["members"] if not m["name"].startswith("_")]  # padding is not named here


def parse_fields(text):
    """`a`, `b` {`c`, `d`} -> [("a", None), ("b", [("c", None), ("d", None)])]; the text after the braces."""
    out = []
    while True:
        m = re.match(r"\s*`(\w+)`", text)
        if not m:
            raise AssertionError("cannot read the fields at: " + text[:60])
        name, text = m.group(1), text[m.end():]
        sub = None
        if text.lstrip().startswith("{"):
            sub, text = parse_fields(text.lstrip()[1:])
        out.append((name, sub))
        text = text.lstrip()
        if text.startswith(","):
            text = text[1:]
            continue
        assert text.startswith("}"), text[:60]
        return out, text[1:]


def check_struct(btf, t, fields, where):
    assert [f for f, _ in fields] == members(t), \
        "%s: docs/meter.md %s, BTF %s" % (where, [f for f, _ in fields], members(t))
    by_name = {m["name"]: m for m in t["members"]}
    for f, sub in fields:
        if sub is not None:
            check_struct(btf, strip(btf, by_name[f]["type_id"]), sub, where + "." + f)


def map_rows():
    rows = re.findall(r"^\| `(\w+)` \| (.*) \|$", section(), re.M)
    assert rows, "no map table"
    return rows


def test_maps_exist(btf):
    maps = set()
    for t in btf.values():
        if t["kind"] == "DATASEC" and t["name"] == ".maps":
            maps = {btf[v["type_id"]]["name"] for v in t["vars"]}
    names = [name for name, _ in map_rows()]
    assert names and set(names) <= maps, (names, maps)
    # The directory listing shows the pinned maps; each of them is in the table.
    (ls,) = re.findall(r"ls \$P +# (.*)", section())
    assert set(ls.split()) - {"ctl", "xdp_prog"} == set(names), (ls, names)


def test_struct_fields_exist(btf):
    checked = 0
    for name, text in map_rows():
        for m in re.finditer(r"`struct (\w+)` \{", text):
            fields, _ = parse_fields(text[m.end():])
            check_struct(btf, struct(btf, m.group(1)), fields, m.group(1))
            checked += 1
    assert checked >= 6


def test_dump_keys_are_the_btf_fields(btf):
    (dump,) = re.findall(r"```json\n(.*?)```", section(), re.S)
    (entry,) = json.loads(dump)

    def keys(t, value):
        names = [m["name"] for m in t["members"]]  # bpftool prints the padding too
        assert list(value) == names, (t["name"], list(value), names)
        for m in t["members"]:
            inner = strip(btf, m["type_id"])
            if inner["kind"] == "STRUCT":
                keys(inner, value[m["name"]])
    keys(struct(btf, "rm_ctx_key"), entry["key"])
    keys(struct(btf, "rm_ctx"), entry["value"])
    assert len(entry["key"]["src"]) == 16 == len(entry["key"]["dst"])


def test_statistics_index_table(btf):
    src = open(os.path.join(ROOT, "include", "rocemeter", "meter.h")).read()
    block = src[src.index("#define RM_STATS(X)"):]
    order = re.findall(r'X\(\s*\w+\s*,\s*"(\w+)"', block[:block.index("\n\n")])
    listed, expect_index = [], 0
    for lo, hi, names in re.findall(r"^\| (\d+)-(\d+) \| (.*) \|$", section(), re.M):
        names = re.findall(r"`(\w+)`", names)
        assert (int(lo), int(hi)) == (expect_index, expect_index + len(names) - 1), (lo, hi, names)
        expect_index += len(names)
        listed += names
    assert listed == order
    (v,) = struct(btf, "rm_stats")["members"]
    arr = strip(btf, v["type_id"])
    assert arr["kind"] == "ARRAY" and arr["nr_elems"] == len(order), arr
