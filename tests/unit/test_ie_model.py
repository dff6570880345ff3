# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""docs/rocemeter-ie.xml, the libfixbuf element file that ipfixDump reads,
checked against the profile's information model in C: RM_IPFIX_IES
(include/rocemeter/ipfix_ie.h), which the encoder, the decoder and the JSON
writer expand, and RM_FLAGS (include/rocemeter/seqobs.h).

tests/lib/ie_table prints both tables as JSON straight from the headers; the
XML is read with xml.etree. Every enterprise element of the table must be in
the XML with the same name, number, PEN (32473 by default), data type,
semantics and units, and the XML must have no element the table lacks. The
cases on edited copies of the XML show that each kind of disagreement fails.
"""
import copy
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
ELEMENTS = os.path.join(ROOT, "docs", "rocemeter-ie.xml")
IANA_NS = "http://www.iana.org/assignments"
CERT_NS = "http://www.cert.org/ipfix"
NS = {"i": IANA_NS, "cert": CERT_NS}

# Full-length encodings of the abstract data types (RFC 7011 section 6.1, RFC 7012).
TYPE_OCTETS = {"unsigned16": 2, "unsigned32": 4, "unsigned64": 8, "dateTimeMilliseconds": 8,
               "ipv4Address": 4, "ipv6Address": 16}


@pytest.fixture(scope="module")
def table():
    helper = os.path.join(ROOT, BUILD, "tests", "lib", "ie_table")
    subprocess.run(["make", "-s", "-C", ROOT, "%s/tests/lib/ie_table" % BUILD], check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads(subprocess.run([helper], check=True, capture_output=True, text=True).stdout)


def read_records(path):
    """[(name, {number, pen, type, semantics, units}, description)] of the file's records."""
    out = []
    for rec in ET.parse(path).getroot().iter("{%s}record" % IANA_NS):
        def text(tag, default=None):
            e = rec.find(tag, NS)
            return e.text.strip() if e is not None and e.text else default
        desc = " ".join(p.text or "" for p in rec.iter("{%s}paragraph" % IANA_NS))
        out.append((text("i:name"), {
            "number": int(text("i:elementId", "-1")),
            "pen": int(text("cert:enterpriseId", "0")),
            "type": text("i:dataType"),
            "semantics": text("i:dataTypeSemantics"),
            "units": text("i:units", "none"),  # no <units> is units none
        }, desc))
    return out


def disagreements(table, path):
    """Every way the element file and the table disagree, one line each; [] when they agree."""
    problems = []
    pen = table["default_pen"]
    want = {e["name"]: {"number": e["number"], "pen": pen, "type": e["type"], "semantics": e["semantics"],
                        "units": e["units"]} for e in table["elements"] if e["enterprise"]}
    got, numbers = {}, {}
    for name, fields, _ in read_records(path):
        if name in got:
            problems.append("%s: more than one record" % name)
        got[name] = fields
        key = (fields["pen"], fields["number"])
        if key in numbers:
            problems.append("%s and %s: both PEN %d element %d" % (numbers[key], name, *key))
        numbers[key] = name
    for name in sorted(want.keys() - got.keys()):
        problems.append("%s: in the table, not in the element file" % name)
    for name in sorted(got.keys() - want.keys()):
        problems.append("%s: in the element file, not in the table" % name)
    for name in sorted(want.keys() & got.keys()):
        for field in ("number", "pen", "type", "semantics", "units"):
            if got[name][field] != want[name][field]:
                problems.append("%s: %s is %r in the element file, %r in the table"
                                % (name, field, got[name][field], want[name][field]))
    # rdmaSequenceFlags's description lists the masks: "0x0001 finalEpoch, ..., 0xFFC0 unassigned".
    desc = {name: d for name, _, d in read_records(path)}.get("rdmaSequenceFlags", "")
    listed = {int(m, 16): n for m, n in re.findall(r"0x([0-9A-Fa-f]{4}) (\w+)", desc)}
    defined = {f["mask"]: f["name"] for f in table["flags"]}
    unassigned = 0xFFFF
    for mask in defined:
        unassigned &= ~mask
    if listed != {**defined, unassigned: "unassigned"}:
        problems.append("rdmaSequenceFlags: the description lists %s, RM_FLAGS has %s and 0x%04X unassigned"
                        % (sorted(listed.items()), sorted(defined.items()), unassigned))
    return problems


def test_element_file_matches_table(table):
    """docs/rocemeter-ie.xml is RM_IPFIX_IES's enterprise elements and RM_FLAGS's masks, nothing else."""
    assert disagreements(table, ELEMENTS) == []


def test_table_is_one_model(table):
    """The table itself: names and (PEN, number) unique, octets the full length of the type,
    [SEQOBS]'s twelve new IEs and the draft's two enterprise-specific, RM_FLAGS one bit each."""
    els = table["elements"]
    assert len({e["name"] for e in els}) == len(els)
    assert len({(e["enterprise"], e["number"]) for e in els}) == len(els)
    for e in els:
        assert e["octets"] == TYPE_OCTETS[e["type"]], e["name"]
    assert sorted(e["number"] for e in els if e["enterprise"]) == list(range(1, 15))
    masks = [f["mask"] for f in table["flags"]]
    assert masks == [1 << i for i in range(6)]


def set_field(name, tag, value):
    """An edit: set <tag> of record `name` (None removes it)."""
    def edit(root):
        rec = record(root, name)
        e = rec.find(tag, NS)
        if value is None:
            rec.remove(e)
        else:
            e.text = value
    return edit


def record(root, name):
    for rec in root.iter("{%s}record" % IANA_NS):
        if rec.find("i:name", NS).text == name:
            return rec
    raise KeyError(name)


def remove_record(name):
    def edit(root):
        for parent in root.iter():
            for rec in list(parent):
                if rec.tag == "{%s}record" % IANA_NS and rec.find("i:name", NS).text == name:
                    parent.remove(rec)
    return edit


def add_record(like, name, number):
    def edit(root):
        for parent in root.iter():
            if record(root, like) in list(parent):
                new = copy.deepcopy(record(root, like))
                new.find("i:name", NS).text = name
                new.find("i:elementId", NS).text = str(number)
                parent.append(new)
                return
    return edit


def edit_flags(old, new):
    def edit(root):
        p = record(root, "rdmaSequenceFlags").find(".//i:paragraph", NS)
        assert old in p.text
        p.text = p.text.replace(old, new)
    return edit


# (case, edit of the XML, a text every reported problem list must contain)
BROKEN = [
    ("renamed", set_field("rdmaSequenceWindow", "i:name", "rdmaSequenceWidth"), "rdmaSequenceWidth"),
    ("number", set_field("pendingPsnCount", "i:elementId", "15"), "pendingPsnCount: number"),
    ("pen", set_field("rdmaPartitionKey", "cert:enterpriseId", "6871"), "rdmaPartitionKey: pen"),
    ("type", set_field("pendingPsnCount", "i:dataType", "unsigned64"), "pendingPsnCount: type"),
    ("semantics", set_field("skippedPsnTotalCount", "i:dataTypeSemantics", "deltaCounter"),
     "skippedPsnTotalCount: semantics"),
    ("units", set_field("requestPacketTotalCount", "i:units", "octets"), "requestPacketTotalCount: units"),
    ("units removed", set_field("repeatedPsnTotalCount", "i:units", None), "repeatedPsnTotalCount: units"),
    ("missing", remove_record("abandonedPsnTotalCount"), "abandonedPsnTotalCount: in the table, not"),
    ("extra", add_record("filledPsnTotalCount", "refilledPsnTotalCount", 15),
     "refilledPsnTotalCount: in the element file, not"),
    ("duplicate number", add_record("filledPsnTotalCount", "refilledPsnTotalCount", 8), "both PEN 32473 element 8"),
    ("flag name", edit_flags("0x0008 stateExhaustion", "0x0008 stateEviction"), "rdmaSequenceFlags"),
    ("flag missing", edit_flags("0x0004 captureDiscontinuity, ", ""), "rdmaSequenceFlags"),
]


@pytest.mark.parametrize("case,edit,expect", BROKEN, ids=[b[0] for b in BROKEN])
def test_disagreement_is_found(table, tmp_path, case, edit, expect):
    """An edited copy of the element file that disagrees with the table fails the check,
    naming the element and what differs."""
    ET.register_namespace("", IANA_NS)
    ET.register_namespace("cert", CERT_NS)
    tree = ET.parse(ELEMENTS)
    edit(tree.getroot())
    path = tmp_path / "rocemeter-ie.xml"
    tree.write(path, encoding="UTF-8", xml_declaration=True)
    problems = disagreements(table, path)
    assert problems, "the edit '%s' went unnoticed" % case
    assert any(expect in p for p in problems), problems


def test_unchanged_copy_agrees(table, tmp_path):
    """The copy step itself changes nothing: an unedited copy agrees (so the cases above fail for their edit)."""
    ET.register_namespace("", IANA_NS)
    ET.register_namespace("cert", CERT_NS)
    path = tmp_path / "rocemeter-ie.xml"
    ET.parse(ELEMENTS).write(path, encoding="UTF-8", xml_declaration=True)
    assert disagreements(table, path) == []


def test_table_side_disagreement_is_found(table):
    """An element the table lacks, or one only the table has, is found from the table's side too."""
    fewer = dict(table, elements=[e for e in table["elements"] if e["name"] != "rdmaSequenceFlags"])
    assert "rdmaSequenceFlags: in the element file, not in the table" in disagreements(fewer, ELEMENTS)
    extra = dict(name="lostPsnTotalCount", number=15, enterprise=True, type="unsigned64", octets=8,
                 semantics="totalCounter", units="none", key=False)
    more = dict(table, elements=table["elements"] + [extra])
    assert "lostPsnTotalCount: in the table, not in the element file" in disagreements(more, ELEMENTS)
    other_pen = dict(table, default_pen=6871)
    assert any("pen is 32473" in p for p in disagreements(other_pen, ELEMENTS))


def mapping_rows(path):
    """The rows of docs/ipfix-mapping.md's "Data Template fields" table, split per element:
    [(name, number, 'IANA'|'PEN', octets, semantics, key)]."""
    rows, inside = [], False
    for line in open(path):
        if line.startswith("## "):
            inside = line.startswith("## Data Template fields")
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not inside or len(cells) != 9 or not re.match(r"^\(?\d+\)?$", cells[0]):
            continue
        names = [n.split(" (")[0].strip() for n in cells[1].split(" / ")]
        numbers = [int(n) for n in cells[2].split(" / ")]
        octets = [int(n) for n in cells[5].split(" / ")]
        for i, name in enumerate(names):
            rows.append((name, numbers[i], cells[3], octets[i if len(octets) > 1 else 0], cells[6],
                         cells[8].strip("*") == "yes"))
    return rows


def test_mapping_doc_table_matches(table):
    """docs/ipfix-mapping.md's field table is the same model: names, numbers, IANA or PEN,
    octets, semantics and Flow Keys, element by element."""
    doc = {r[0]: r[1:] for r in mapping_rows(os.path.join(ROOT, "docs", "ipfix-mapping.md"))}
    model = {e["name"]: (e["number"], "PEN" if e["enterprise"] else "IANA", e["octets"], e["semantics"], e["key"])
             for e in table["elements"]}
    assert doc == model
