# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""IPFIX encoding checked by independent decoders ([SEQOBS] "Export Profile
and Template"; RFC 7011).

tests/lib/ipfix_write (the project's encoder) turns reports given as JSON
Lines into an IPFIX file; libfixbuf's ipfixDump (with docs/rocemeter-ie.xml)
and tshark's cflow dissector (IPFIX over TCP, in a pcap written with scapy)
decode it. Every expected value comes from the JSON input or from the
profile table below (seed order, RFC 7011 lengths), never from the encoder.
"""
import datetime
import ipaddress
import json
import os
import random
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
ELEMENTS = os.path.join(ROOT, "docs", "rocemeter-ie.xml")
PEN = 32473

# The profile in [SEQOBS]'s example order: (IE name, (PEN, number), octets, Flow Key).
# Address rows are per family. Numbers: IANA registry / include/rocemeter/ipfix_ie.h.
def profile(family, vlan):
    a = 4 if family == 4 else 16
    s, d = ((8, 12) if family == 4 else (27, 28))
    fam = "IPv4" if family == 4 else "IPv6"
    rows = [
        ("observationPointId", (0, 138), 8, True),
        ("source%sAddress" % fam, (0, s), a, True),
        ("destination%sAddress" % fam, (0, d), a, True),
    ]
    if vlan:
        rows += [("vlanId", (0, 58), 2, True), ("dot1qCustomerVlanId", (0, 245), 2, True)]
    rows += [
        ("rdmaDestinationQP", (PEN, 1), 4, True),
        ("rdmaPartitionKey", (PEN, 2), 2, True),
        ("flowStartMilliseconds", (0, 152), 8, False),
        ("flowEndMilliseconds", (0, 153), 8, False),
        ("rdmaSequenceEpochId", (PEN, 3), 8, True),
        ("rdmaSequenceReportId", (PEN, 4), 8, False),
        ("rdmaSequenceWindow", (PEN, 5), 4, False),
        ("rdmaSequenceFlags", (PEN, 6), 2, False),
        ("skippedPsnTotalCount", (PEN, 7), 8, False),
        ("filledPsnTotalCount", (PEN, 8), 8, False),
        ("expiredPsnTotalCount", (PEN, 9), 8, False),
        ("abandonedPsnTotalCount", (PEN, 10), 8, False),
        ("pendingPsnCount", (PEN, 11), 4, False),
        ("repeatedPsnTotalCount", (PEN, 12), 8, False),
        ("requestPacketTotalCount", (PEN, 13), 8, False),
        ("unclassifiedLatePacketTotalCount", (PEN, 14), 8, False),
    ]
    return rows


def tid_of(family, vlan):
    return {(4, 0): 256, (6, 0): 257, (4, 1): 258, (6, 1): 259}[(family, int(vlan))]


# Documented lengths (docs/ipfix-mapping.md), written out here.
TEMPLATE_RECORD_LEN = {0: 136, 1: 144}
DATA_RECORD_LEN = {(4, 0): 120, (6, 0): 144, (4, 1): 124, (6, 1): 148}
FLOW_KEYS = {0: 0x9F, 1: 0x27F}


def expected_flow_keys(family, vlan):
    return sum(1 << n for n, row in enumerate(profile(family, vlan)) if row[3])


def make_reports(count, vlan, seed):
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        fam = 4 if rnd.random() < 0.5 else 6
        r = {"observationPointId": rnd.choice([0, 1, 7, 2**63 - 1, rnd.getrandbits(63)])}
        if fam == 4:
            r["sourceIPv4Address"] = str(ipaddress.IPv4Address(rnd.getrandbits(32)))
            r["destinationIPv4Address"] = str(ipaddress.IPv4Address(rnd.getrandbits(32)))
        else:
            r["sourceIPv6Address"] = str(ipaddress.IPv6Address(rnd.getrandbits(128)))
            r["destinationIPv6Address"] = str(ipaddress.IPv6Address((0x20010DB8 << 96) | rnd.getrandbits(16)))
        if vlan:
            r["vlanId"] = rnd.randrange(1, 4095)
            r["dot1qCustomerVlanId"] = rnd.randrange(0, 4096)
        start = 1700000000000 + rnd.randrange(10**9)
        window = rnd.choice([1, 4, 4096, 4194304])
        pending = rnd.randrange(0, window)
        r.update({
            "rdmaDestinationQP": rnd.randrange(0, 1 << 24),
            "rdmaPartitionKey": rnd.randrange(0, 1 << 16),
            "flowStartMilliseconds": start,
            "flowEndMilliseconds": start + rnd.randrange(10**6),
            "rdmaSequenceEpochId": i + 1,
            "rdmaSequenceReportId": rnd.choice([1, 2, rnd.getrandbits(63)]),
            "rdmaSequenceWindow": window,
            "rdmaSequenceFlags": rnd.choice([0x20, 0x21, 0x23, 0x3F, 0x01]),
            "skippedPsnTotalCount": rnd.getrandbits(rnd.choice([8, 40, 63])),
            "filledPsnTotalCount": rnd.getrandbits(rnd.choice([8, 40, 63])),
            "expiredPsnTotalCount": rnd.getrandbits(rnd.choice([8, 40, 63])),
            "abandonedPsnTotalCount": rnd.getrandbits(rnd.choice([8, 40, 63])),
            "pendingPsnCount": pending,
            "repeatedPsnTotalCount": rnd.getrandbits(rnd.choice([8, 40, 63])),
            "requestPacketTotalCount": rnd.getrandbits(rnd.choice([8, 40, 63])),
            "unclassifiedLatePacketTotalCount": rnd.getrandbits(rnd.choice([8, 40, 63])),
        })
        out.append(r)
    return out


def family_of(r):
    return 4 if "sourceIPv4Address" in r else 6


@pytest.fixture(scope="module")
def writer():
    exe = os.environ.get("IPFIX_WRITE")
    if not exe:
        subprocess.run(["make", "-s", "-C", ROOT, "%s/tests/lib/ipfix_write" % BUILD], check=True,
                       stdout=subprocess.DEVNULL)
        exe = os.path.join(ROOT, BUILD, "tests", "lib", "ipfix_write")
    return exe


def write_ipfix(writer, tmp_path, reports, vlan=False, per_msg=None, name="out.ipfix"):
    path = tmp_path / name
    args = [writer, "--domain", "4660", "--time", "1700000000"]
    if vlan:
        args.append("--vlan")
    if per_msg:
        args += ["--per-msg", str(per_msg)]
    text = "".join(json.dumps(r) + "\n" for r in reports)
    subprocess.run(args + [str(path)], input=text.encode(), check=True)
    return path


def split_messages(data):
    """IPFIX Messages of a file, by the Length of each header."""
    msgs, off = [], 0
    while off < len(data):
        n = int.from_bytes(data[off + 2:off + 4], "big")
        assert n >= 16
        msgs.append(data[off:off + n])
        off += n
    assert off == len(data)
    return msgs


def expected_sequences(reports, per_msg):
    """Header Sequence Numbers: templates message 0, then 2 (the two Flow Keys
    Options Data Records count, RFC 7011 3.1) plus the reports sent before."""
    seqs, sent = [0], 2
    for i in range(0, len(reports), per_msg):
        seqs.append(sent)
        sent += len(reports[i:i + per_msg])
    return seqs


# ---------------------------------------------------------------- ipfixDump

def run_ipfixdump(path):
    p = subprocess.run(["ipfixDump", "--in", str(path), "--element-file", ELEMENTS],
                       capture_output=True, text=True, env=dict(os.environ, TZ="UTC"))
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr


def parse_ipfixdump(text):
    """Messages (length, sequence), templates {tid: [(pen, id, len, name)]}, data records [(tid, {name: str})]."""
    msgs, templates, records = [], {}, []
    cur_t = cur_r = None
    for line in text.splitlines():
        m = re.match(r"message length: (\d+)\s+sequence number: (\d+)", line)
        if m:
            msgs.append((int(m.group(1)), int(m.group(2))))
            cur_t = cur_r = None
            continue
        if line.startswith("--- template record") or line.startswith("--- options template record"):
            cur_t, cur_r = [], None
            continue
        if line.startswith("--- data record"):
            cur_r, cur_t = {}, None
            records.append([None, cur_r])
            continue
        m = re.match(r"\s+tid:\s+(\d+)", line)
        if m and cur_t is not None:
            templates[int(m.group(1))] = cur_t
            continue
        m = re.match(r"\s+count:\s+\d+\s+tid:\s+(\d+)", line)
        if m and cur_r is not None:
            records[-1][0] = int(m.group(1))
            continue
        m = re.match(r"\s+ent:\s+(\d+)\s+id:\s+(\d+)\s+type:\s+\S+\s+len:\s+(\d+)\s+(?:\(S\) )?(\S+)", line)
        if m and cur_t is not None:
            cur_t.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)))
            continue
        m = re.match(r"\s+\(([\d/]+)\)\s*(?:\(S\))?\s*(\w+) : (.*)$", line)
        if m and cur_r is not None:
            cur_r[m.group(2)] = m.group(3).strip()
    return msgs, templates, [tuple(r) for r in records]


def dump_value(name, text):
    if "Address" in name:
        return str(ipaddress.ip_address(text))
    if name.endswith("Milliseconds"):
        t = datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
        return int(round(t.timestamp() * 1000))
    return int(text)


def json_value(name, v):
    return str(ipaddress.ip_address(v)) if "Address" in name else v


@pytest.mark.parametrize("vlan", [False, True])
def test_ipfixdump_templates_and_records(writer, tmp_path, vlan):
    reports = make_reports(60, vlan, seed=5 + vlan)
    per_msg = 7
    path = write_ipfix(writer, tmp_path, reports, vlan=vlan, per_msg=per_msg)
    out, err = run_ipfixdump(path)
    # libfixbuf checks the header Sequence Numbers itself and warns on a mismatch.
    assert "out of sequence" not in err, err
    msgs, templates, records = parse_ipfixdump(out)

    file_msgs = split_messages(path.read_bytes())
    assert [m[0] for m in msgs] == [len(m) for m in file_msgs]
    assert [m[1] for m in msgs] == expected_sequences(reports, per_msg)

    # Data Templates: every field with the profile's IE, PEN, length and name.
    for fam in (4, 6):
        rows = profile(fam, vlan)
        t = templates[tid_of(fam, vlan)]
        assert [(f[0], f[1], f[2], f[3]) for f in t] == [(r[1][0], r[1][1], r[2], r[0]) for r in rows]
        rec_len = 4 + sum(8 if f[0] else 4 for f in t)
        assert rec_len == TEMPLATE_RECORD_LEN[vlan]
        assert sum(f[2] for f in t) == DATA_RECORD_LEN[(fam, vlan)]
    # Flow Keys Options Template: scope templateId (145/2), flowKeyIndicator (173/8).
    assert [(f[0], f[1], f[2]) for f in templates[260]] == [(0, 145, 2), (0, 173, 8)]

    keys = [r for r in records if r[0] == 260]
    assert len(keys) == 2
    for tid, vals in keys:
        fam = 4 if int(vals["templateId"]) in (256, 258) else 6
        assert int(vals["templateId"]) == tid_of(fam, vlan)
        assert int(vals["flowKeyIndicator"]) == expected_flow_keys(fam, vlan) == FLOW_KEYS[vlan]

    data = [r for r in records if r[0] != 260]
    assert len(data) == len(reports)
    for (tid, vals), want in zip(data, reports):
        fam = family_of(want)
        assert tid == tid_of(fam, vlan)
        got = {k: dump_value(k, v) for k, v in vals.items()}
        assert got == {k: json_value(k, v) for k, v in want.items()}


def test_ipfixdump_large_batch(writer, tmp_path):
    """2000 reports, packed as many per message as fit: no message above 65535
    octets, every record decoded, Sequence Numbers right."""
    reports = make_reports(2000, False, seed=11)
    path = write_ipfix(writer, tmp_path, reports)
    out, err = run_ipfixdump(path)
    assert "out of sequence" not in err, err
    msgs, _, records = parse_ipfixdump(out)
    assert all(m[0] <= 65535 for m in msgs)
    assert len(msgs) > 3
    data = [r for r in records if r[0] != 260]
    assert len(data) == 2000
    for (tid, vals), want in zip(data, reports):
        assert {k: dump_value(k, v) for k, v in vals.items()} == {k: json_value(k, v) for k, v in want.items()}
    # Each message's Sequence Number = 2 + records before it (records counted per Data Set).
    seq = 2
    for m in split_messages(path.read_bytes())[1:]:
        assert int.from_bytes(m[8:12], "big") == seq
        off, n = 16, 0
        while off < len(m):
            sid, slen = int.from_bytes(m[off:off + 2], "big"), int.from_bytes(m[off + 2:off + 4], "big")
            n += (slen - 4) // DATA_RECORD_LEN[(4 if sid == 256 else 6, 0)]
            off += slen
        seq += n
    assert seq == 2 + 2000


# ---------------------------------------------------------------- tshark

def write_pcap(ipfix_path, pcap_path):
    """The IPFIX bytes as the payload of one TCP connection to port 4739, one
    message per segment (scapy runs under the system python3)."""
    script = r"""
import sys
from scapy.all import Ether, IP, TCP, Raw, wrpcap
data = open(sys.argv[1], 'rb').read()
e1 = Ether(src='02:00:00:00:00:01', dst='02:00:00:00:00:02') / IP(src='127.0.0.1', dst='127.0.0.2')
e2 = Ether(src='02:00:00:00:00:02', dst='02:00:00:00:00:01') / IP(src='127.0.0.2', dst='127.0.0.1')
pk = [e1 / TCP(sport=40000, dport=4739, flags='S', seq=999),
      e2 / TCP(sport=4739, dport=40000, flags='SA', seq=5000, ack=1000),
      e1 / TCP(sport=40000, dport=4739, flags='A', seq=1000, ack=5001)]
seq, off = 1000, 0
while off < len(data):
    n = int.from_bytes(data[off + 2:off + 4], 'big')
    pk.append(e1 / TCP(sport=40000, dport=4739, flags='PA', seq=seq, ack=5001) / Raw(data[off:off + n]))
    seq += n
    off += n
wrpcap(sys.argv[2], pk)
"""
    subprocess.run(["/usr/bin/python3", "-c", script, str(ipfix_path), str(pcap_path)], check=True,
                   capture_output=True)


TSHARK_STD = {
    "cflow.observation_point_id": "observationPointId",
    "cflow.srcaddr": "sourceIPv4Address",
    "cflow.dstaddr": "destinationIPv4Address",
    "cflow.srcaddrv6": "sourceIPv6Address",
    "cflow.dstaddrv6": "destinationIPv6Address",
    "cflow.vlanid": "vlanId",
    "cflow.dot1q_customer_vlan_id": "dot1qCustomerVlanId",
    "cflow.abstimestart": "flowStartMilliseconds",
    "cflow.abstimeend": "flowEndMilliseconds",
}


def tshark_messages(pcap):
    p = subprocess.run(["tshark", "-r", str(pcap), "-d", "tcp.port==4739,cflow", "-T", "pdml", "-Y", "cflow"],
                       capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
    root = ET.fromstring(p.stdout)
    msgs = []
    for proto in root.iter("proto"):
        if proto.get("name") != "cflow":
            continue
        msg = {"templates": {}, "sets": []}
        for f in proto:
            name = f.get("name")
            if name == "cflow.version":
                msg["version"] = int(f.get("show"))
            elif name == "cflow.len":
                msg["length"] = int(f.get("show"))
            elif name == "cflow.sequence":
                msg["sequence"] = int(f.get("show"))
            elif name == "cflow.od_id":
                msg["domain"] = int(f.get("show"))
            elif name == "" and f.find("field[@name='cflow.flowset_id']") is not None:
                msg["sets"].append(parse_set(f, msg["templates"]))
        msgs.append(msg)
    return msgs


def parse_set(s, templates):
    sid = int(s.find("field[@name='cflow.flowset_id']").get("show"))
    out = {"id": sid, "length": int(s.find("field[@name='cflow.flowset_length']").get("show")), "records": []}
    for rec in s:
        show = rec.get("show") or ""
        if rec.get("name") == "" and show.startswith("Template (Id"):
            tid = int(rec.find("field[@name='cflow.template_id']").get("show"))
            fields = []
            for fs in rec:
                if not (fs.get("show") or "").startswith("Field ("):
                    continue
                ie = fs.find("field[@name='cflow.template_ipfix_field_type']")
                if ie is None:
                    ie = fs.find("field[@name='cflow.template_ipfix_field_type_enterprise']")
                pen = fs.find("field[@name='cflow.template_ipfix_field_pen']")
                ln = fs.find("field[@name='cflow.template_field_length']")
                fields.append((int(pen.get("show")) if pen is not None else 0, int(ie.get("show")),
                               int(ln.get("show"))))
            templates[tid] = fields
        elif rec.get("name") == "" and show.startswith("Options Template (Id"):
            tid = int(rec.find("field[@name='cflow.template_id']").get("show"))
            templates[tid] = "options"
        elif rec.get("name") == "" and show.startswith("Flow "):
            out["records"].append(parse_record(rec))
    return out


def parse_record(rec):
    vals = {}
    for f in rec.iter("field"):
        name = f.get("name")
        if name in TSHARK_STD:
            ie = TSHARK_STD[name]
            raw = bytes.fromhex(f.get("value"))
            if "Address" in ie:
                vals[ie] = str(ipaddress.ip_address(raw))
            else:
                vals[ie] = int.from_bytes(raw, "big")
        elif name == "cflow.enterprise_private_entry":
            m = re.search(r"\((.*?)\) Type (\d+):", f.get("showname"))
            vals[("pen", m.group(1), int(m.group(2)))] = int(f.get("value"), 16)
        elif name == "cflow.template_id":
            vals["templateId"] = int(f.get("show"))
        elif name == "cflow.post_key":
            vals["flowKeyIndicator"] = int(f.get("value"), 16)
    return vals


def enterprise_names(family, vlan):
    return {row[1][1]: row[0] for row in profile(family, vlan) if row[1][0] == PEN}


@pytest.mark.parametrize("vlan", [False, True])
def test_tshark_decodes(writer, tmp_path, vlan):
    reports = make_reports(25, vlan, seed=21 + vlan)
    per_msg = 4
    path = write_ipfix(writer, tmp_path, reports, vlan=vlan, per_msg=per_msg)
    pcap = tmp_path / "cap.pcap"
    write_pcap(path, pcap)
    msgs = tshark_messages(pcap)

    file_msgs = split_messages(path.read_bytes())
    assert len(msgs) == len(file_msgs)
    assert [m["version"] for m in msgs] == [10] * len(msgs)
    assert [m["length"] for m in msgs] == [len(m) for m in file_msgs]
    assert [m["domain"] for m in msgs] == [4660] * len(msgs)
    assert [m["sequence"] for m in msgs] == expected_sequences(reports, per_msg)

    # Templates message: Template Set, Options Template Set, Flow Keys Options Data Set; lengths documented.
    first = msgs[0]
    assert [s["id"] for s in first["sets"]] == [2, 3, 260]
    assert first["sets"][0]["length"] == 4 + 2 * TEMPLATE_RECORD_LEN[vlan]
    assert first["sets"][1]["length"] == 4 + 14
    assert first["sets"][2]["length"] == 4 + 2 * 10
    tmpl = first["templates"]
    for fam in (4, 6):
        assert tmpl[tid_of(fam, vlan)] == [(r[1][0], r[1][1], r[2]) for r in profile(fam, vlan)]
    keys = {r["templateId"]: r["flowKeyIndicator"] for r in first["sets"][2]["records"]}
    assert keys == {tid_of(f, vlan): expected_flow_keys(f, vlan) for f in (4, 6)}

    got = []
    for m in msgs[1:]:
        for s in m["sets"]:
            assert s["id"] in (tid_of(4, vlan), tid_of(6, vlan))
            fam = 4 if s["id"] == tid_of(4, vlan) else 6
            assert s["length"] == 4 + len(s["records"]) * DATA_RECORD_LEN[(fam, vlan)]
            for r in s["records"]:
                got.append((fam, r))
    assert len(got) == len(reports)
    for (fam, r), want in zip(got, reports):
        assert fam == family_of(want)
        names = enterprise_names(fam, vlan)
        decoded = {}
        for k, v in r.items():
            if isinstance(k, tuple):
                assert k[1] == "Example Enterprise Number for Documentation Use"  # PEN 32473 (RFC 5612)
                decoded[names[k[2]]] = v
            else:
                decoded[k] = v
        assert decoded == {k: json_value(k, v) for k, v in want.items()}


# ---------------------------------------------------------------- mapping consistency

def test_element_file_matches_header():
    """docs/rocemeter-ie.xml and include/rocemeter/ipfix_ie.h give every enterprise
    IE the profile's number, and the XML gives [SEQOBS]'s type and units."""
    ns = {"i": "http://www.iana.org/assignments", "cert": "http://www.cert.org/ipfix"}
    tree = ET.parse(ELEMENTS)
    xml = {}
    for rec in tree.getroot().iter("{http://www.iana.org/assignments}record"):
        xml[rec.find("i:name", ns).text] = (
            int(rec.find("cert:enterpriseId", ns).text), int(rec.find("i:elementId", ns).text),
            rec.find("i:dataType", ns).text, rec.find("i:dataTypeSemantics", ns).text,
            (rec.find("i:units", ns).text if rec.find("i:units", ns) is not None else "none"))
    # [SEQOBS] "Information Element Definitions" (type, semantics, units); QP/P_Key per the referenced draft.
    seed = {
        "rdmaDestinationQP": ("unsigned32", "identifier", "none"),
        "rdmaPartitionKey": ("unsigned16", "identifier", "none"),
        "rdmaSequenceEpochId": ("unsigned64", "identifier", "none"),
        "rdmaSequenceReportId": ("unsigned64", "identifier", "none"),
        "rdmaSequenceWindow": ("unsigned32", "quantity", "none"),
        "rdmaSequenceFlags": ("unsigned16", "flags", "none"),
        "skippedPsnTotalCount": ("unsigned64", "totalCounter", "none"),
        "filledPsnTotalCount": ("unsigned64", "totalCounter", "none"),
        "expiredPsnTotalCount": ("unsigned64", "totalCounter", "none"),
        "abandonedPsnTotalCount": ("unsigned64", "totalCounter", "none"),
        "pendingPsnCount": ("unsigned32", "quantity", "none"),
        "repeatedPsnTotalCount": ("unsigned64", "totalCounter", "packets"),
        "requestPacketTotalCount": ("unsigned64", "totalCounter", "packets"),
        "unclassifiedLatePacketTotalCount": ("unsigned64", "totalCounter", "packets"),
    }
    names = {row[0]: row[1] for row in profile(4, False) if row[1][0] == PEN}
    assert set(xml) == set(seed) == set(names)
    header = open(os.path.join(ROOT, "include", "rocemeter", "ipfix_ie.h")).read()
    defs = {m.group(1).replace("_", "").lower(): int(m.group(2))
            for m in re.finditer(r"#define RM_IE_(\w+)\s+(\d+)", header)}
    for name, (pen, num) in names.items():
        assert xml[name][:2] == (pen, num)
        assert xml[name][2:] == seed[name]
        assert defs[name.lower()] == num


def test_writer_rejects_bad_input(writer, tmp_path):
    """A malformed report is a clear error naming its line, and no file is written."""
    good = json.dumps(make_reports(1, False, seed=3)[0])
    bad = good.replace('"rdmaPartitionKey"', '"rdmaPartitionKeyX"')
    out = tmp_path / "bad.ipfix"
    p = subprocess.run([writer, str(out)], input=(good + "\n" + bad + "\n").encode(), capture_output=True)
    assert p.returncode == 2
    assert b"line 2" in p.stderr and b"rdmaPartitionKeyX" in p.stderr
    assert not out.exists()
