# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter flowlabel spread`: the ECMP spread model (user/flowlabel/spread.c)
against an independent computation written here from the definitions of
docs/flowlabel.md "Spread over ECMP paths": the key bytes of each class, the
switch hashes (zlib.crc32 for crc32-lo/hi, CRC-16/CCITT-FALSE and the XOR
fold written out from their definitions), the Flow Label of each of the
program's variants ([FLOWLABEL]: the literal text, zlib's CRC-32, CRC-32C,
CRC-32/MPEG-2, bitwise), path = hash mod K, and the metrics (paths used, most
loaded share, colliding pairs, Jain's index).

Connections: generated QPs (IPv6 and IPv4, several K); the real captures
(their connection keys, UDP source ports, Src_QPs and Flow Labels from
tshark); a synthetic IPv6 capture with an arriving label (kept, [FLOWLABEL]
rule 2) and a UDP source port that changes (counted as varied). Needs root
for the census (BPF_PROG_TEST_RUN) over captures.
"""
import glob
import ipaddress
import json
import os
import subprocess
import zlib
from collections import Counter

import pytest

from flowlabel_ref import VARIANTS, ref_hash, ref_input  # tests/lib: [FLOWLABEL] written out
import rocetest as t
from rocetest import Frame

LABELS = ("arriving",) + VARIANTS
HASHES = ("crc16-ccitt", "crc32-lo", "crc32-hi", "xor16")
KEYS = ("5tuple", "5tuple+label", "addr+label")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the census over captures needs root (BPF)")


# ---- independent references -------------------------------------------------

def label_of(c, source, mix=False, seed=0):
    if source == "arriving" or c["label_in"]:
        return c["label_in"]
    data = ref_input(c["src"], c["dst"], c["dqp"], c["sqp"])
    return (ref_hash(source, data, mix, seed) & 0xFFFFF) or 1  # a computed 0 is written as 0x00001


def crc16_ccitt(data):
    """CRC-16/CCITT-FALSE: polynomial 0x1021, register 0xFFFF, MSB first, no final XOR."""
    reg = 0xFFFF
    for b in data:
        reg ^= b << 8
        for _ in range(8):
            reg = ((reg << 1) ^ 0x1021) if reg & 0x8000 else reg << 1
            reg &= 0xFFFF
    return reg


def xor16(data):
    if len(data) % 2:
        data += b"\0"
    h = 0
    for i in range(0, len(data), 2):
        h ^= data[i] << 8 | data[i + 1]
    return h


def switch_hash(name, data):
    if name == "crc16-ccitt":
        return crc16_ccitt(data)
    if name == "crc32-lo":
        return zlib.crc32(data) & 0xFFFF
    if name == "crc32-hi":
        return zlib.crc32(data) >> 16
    return xor16(data)


def key_bytes(c, key, source, mix=False, seed=0):
    b = ipaddress.ip_address(c["src"]).packed + ipaddress.ip_address(c["dst"]).packed
    if key != "addr+label":
        b += bytes([17]) + c["sport"].to_bytes(2, "big") + (4791).to_bytes(2, "big")
    if key != "5tuple":
        b += label_of(c, source, mix, seed).to_bytes(3, "big")
    return b


def expected_class(conns, k, key, source, hname, mix=False, seed=0):
    path = [switch_hash(hname, key_bytes(c, key, source, mix, seed)) % k for c in conns]
    load = [0] * k
    for p in path:
        load[p] += 1
    n = len(conns)
    return {"path": path, "load": load, "paths_used": sum(1 for x in load if x), "max_load": max(load),
            "collisions": sum(x * (x - 1) // 2 for x in load),
            "max_share": max(load) / n, "jain": n * n / (k * sum(x * x for x in load))}


# ---- running the command ----------------------------------------------------

def spread(*args, check=True):
    p = subprocess.run([t.ROCEMETER, "flowlabel", "spread", *args], capture_output=True, text=True, timeout=120)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def conn_of_json(j):
    return {"src": j["source"], "dst": j["destination"], "sport": j["udp_source_port"], "dqp": j["dest_qp"],
            "sqp": j["src_qp"], "label_in": j["flow_labels"]["arriving"]}


def check_output(out, conns, k, mix=False, seed=0):
    """Every class of the output against the reference, for connections conns (in the output's order)."""
    assert out["paths"] == k
    assert len(out["connections"]) == len(conns)
    assert out["expected_paths_used_uniform"] == pytest.approx(k * (1 - (1 - 1 / k) ** len(conns)))
    for j, c in zip(out["connections"], conns):
        for src in LABELS:
            assert j["flow_labels"][src] == label_of(c, src, mix, seed), (c, src)
    seen = set()
    for cls in out["classes"]:
        want = expected_class(conns, k, cls["key"], cls["label"] or "arriving", cls["switch_hash"], mix, seed)
        for f in ("path", "load", "paths_used", "max_load", "collisions"):
            assert cls[f] == want[f], (cls["key"], cls["label"], cls["switch_hash"], f)
        assert cls["max_share"] == pytest.approx(want["max_share"])
        assert cls["jain"] == pytest.approx(want["jain"])
        seen.add((cls["key"], cls["label"], cls["switch_hash"]))
    want_rows = {("5tuple", None, h) for h in HASHES} | {(k_, l, h) for k_ in KEYS[1:] for l in LABELS for h in HASHES}
    assert seen == want_rows


@pytest.mark.parametrize("src,dst,n,k", [("fd00::1:10", "fd00::2:20", 64, 8), ("fd00:aa::5", "fd00:bb::6", 256, 64),
                                         ("10.0.1.1", "10.0.2.2", 8, 2), ("2001:db8::1", "2001:db8::2", 33, 7)])
def test_generated_qps(src, dst, n, k):
    out = json.loads(spread("--qps", str(n), "--src", src, "--dst", dst, "--paths", str(k), "--json").stdout)
    conns = [{"src": src, "dst": dst, "sport": 49152, "dqp": 0x100 + i, "sqp": None, "label_in": 0}
             for i in range(n)]
    check_output(out, conns, k)
    # The premise: one 5-tuple, so without a label every QP is on one path.
    for cls in out["classes"]:
        if cls["key"] == "5tuple" or cls["label"] == "arriving":
            assert cls["paths_used"] == 1 and cls["max_load"] == n


@pytest.mark.parametrize("mix,seed", [(True, 0), (False, 0xDEADBEEF), (True, 12345)])
def test_generated_qps_mix_and_seed(mix, seed):
    """The program's --mix and --seed change the labels (and so the paths) as they change the program's."""
    args = ["--qps", "40", "--src", "fd00::1:10", "--dst", "fd00::2:20", "--paths", "16", "--json",
            "--seed", str(seed)] + (["--mix"] if mix else [])
    out = json.loads(spread(*args).stdout)
    conns = [{"src": "fd00::1:10", "dst": "fd00::2:20", "sport": 49152, "dqp": 0x100 + i, "sqp": None, "label_in": 0}
             for i in range(40)]
    check_output(out, conns, 16, mix, seed)


def test_generated_options_and_selection():
    out = json.loads(spread("-n", "20", "-s", "fd00::1", "-d", "fd00::2", "-k", "5", "--qp-base", "0xffffe0",
                            "--sport", "1234", "--key", "5tuple+label", "--label", "crc32,arriving",
                            "--switch-hash", "crc32-hi", "-j").stdout)
    conns = [{"src": "fd00::1", "dst": "fd00::2", "sport": 1234, "dqp": 0xffffe0 + i, "sqp": None,
              "label_in": 0} for i in range(20)]
    assert [(c["key"], c["label"], c["switch_hash"]) for c in out["classes"]] == \
        [("5tuple+label", "arriving", "crc32-hi"), ("5tuple+label", "crc32", "crc32-hi")]
    for cls in out["classes"]:
        want = expected_class(conns, 5, cls["key"], cls["label"], cls["switch_hash"])
        assert cls["path"] == want["path"] and cls["load"] == want["load"]


def test_text_output():
    p = spread("-n", "64", "-s", "fd00::1", "-d", "fd00::2", "-k", "4", "--key", "5tuple",
               "--switch-hash", "xor16", "-v")
    lines = p.stdout.splitlines()
    assert lines[0].startswith("spread of 64 connections over 4 paths")
    row = [l for l in lines if l.startswith("5tuple ")]
    assert len(row) == 1 and row[0].split()[3:7] == ["1/4", "1.000", "2016", "0.250"], row
    assert sum(1 for l in lines if l.lstrip().startswith("#")) == 64


@pytest.mark.parametrize("args,msg", [
    ((), "either -r FILE or --qps N"),
    (("-n", "4"), "--qps needs --src and --dst"),
    (("-n", "4", "-s", "fd00::1", "-d", "10.0.0.1"), "different families"),
    (("-n", "4", "-s", "nonsense", "-d", "fd00::1"), "not an IPv6 or IPv4 address"),
    (("-n", "4", "-s", "fd00::1", "-d", "fd00::2", "-k", "0"), "--paths"),
    (("-n", "4", "-s", "fd00::1", "-d", "fd00::2", "--switch-hash", "md5"), "unknown name 'md5'"),
    (("-n", "4", "-s", "fd00::1", "-d", "fd00::2", "--label", "zlib"), "unknown name 'zlib'"),
    (("-r", "x.pcap", "-n", "4"), "either -r FILE or --qps N"),
    # QPNs are 24 bits: 0xFFFFFE + 3 would wrap to 0x000000 and 0x000001 (before: silently)
    (("-n", "4", "-s", "fd00::1", "-d", "fd00::2", "-q", "0xFFFFFE"),
     "--qp-base 0xfffffe and --qps 4 reach QPN 0x1000001: a QPN is 24 bits (at most 0xffffff)"),
    (("-n", "4", "-s", "fd00::1", "-d", "fd00::2", "-c", "x.ini"), "--config and --encapsulation are for -r FILE"),
    (("-n", "4", "-s", "fd00::1", "-d", "fd00::2", "-e", "vxlan"), "--config and --encapsulation are for -r FILE"),
])
def test_usage_errors(args, msg):
    p = spread(*args, check=False)
    assert p.returncode == 2 and msg in p.stderr, p.stderr


@needs_root
def test_missing_or_bad_capture_fails(tmp_path):
    p = spread("-r", "/nonexistent.pcap", check=False)
    assert p.returncode == 1 and "/nonexistent.pcap" in p.stderr
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture")
    p = spread("-r", str(bad), check=False)
    assert p.returncode == 1 and "bad.pcap" in p.stderr and "not a readable" in p.stderr, p.stderr


@needs_root
def test_capture_without_rocev2(tmp_path):
    """No connection: every class uses no path, and says so (no division by zero)."""
    from scapy.all import Ether, IP, UDP, Raw
    path = str(tmp_path / "dns.pcap")
    t.write_pcap(path, [Frame(bytes(Ether() / IP() / UDP(dport=53) / Raw(b"x")), t.T0)])
    out = json.loads(spread("-r", path, "-k", "4", "-j").stdout)
    assert out["connections"] == [] and out["frames_read"] == 1
    assert all(c["paths_used"] == 0 and c["load"] == [0] * 4 and c["jain"] == 0 for c in out["classes"])


# ---- captures ---------------------------------------------------------------

FIELDS = ("ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "ipv6.flow", "udp.srcport", "udp.dstport",
          "infiniband.bth.destqp", "infiniband.bth.p_key", "infiniband.deth.srcqp", "vlan.id")


def tshark_connections(path):
    """Per connection key (src, dst, DestQP, P_Key, VLANs) the first frame's UDP source port and Flow
    Label and the first DETH's Src_QP, from tshark."""
    cmd = ["tshark", "-n", "-r", path, "-d", "udp.port==69,infiniband", "-T", "fields", "-E", "separator=\t",
           "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300).stdout
    conns = {}
    for line in out.splitlines():
        v = dict(zip(FIELDS, line.split("\t")))
        if v["udp.dstport"].split(",")[0] != "4791" or not v["infiniband.bth.destqp"]:
            continue
        src = (v["ip.src"] or v["ipv6.src"]).split(",")[0]
        dst = (v["ip.dst"] or v["ipv6.dst"]).split(",")[0]
        key = (src, dst, int(v["infiniband.bth.destqp"], 0), int(v["infiniband.bth.p_key"], 0), v["vlan.id"])
        sqp = int(v["infiniband.deth.srcqp"], 0) if v["infiniband.deth.srcqp"] else None
        if key not in conns:
            label = int(v["ipv6.flow"].split(",")[0], 0) if v["ipv6.flow"] else 0
            conns[key] = {"src": src, "dst": dst, "sport": int(v["udp.srcport"].split(",")[0]), "dqp": key[2],
                          "sqp": sqp, "label_in": label}
        elif conns[key]["sqp"] is None:
            conns[key]["sqp"] = sqp
    return list(conns.values())


def as_tuple(c):
    return (c["src"], c["dst"], c["sport"], c["dqp"], c["sqp"], c["label_in"])


CAPTURES = sorted(glob.glob(os.path.join(t.PCAPS, "linlinw5_nccl_*.pcap"))) + \
    [p for p in (os.path.join(t.PCAPS, n) for n in ("linlinw5_pingpong_ud.pcap", "linlinw5_rdma_write_bw.pcap"))
     if os.path.exists(p)]


@needs_root
@pytest.mark.skipif(not CAPTURES, reason="no shared captures")
@pytest.mark.parametrize("path", CAPTURES, ids=os.path.basename)
@pytest.mark.parametrize("k", [2, 4])
def test_real_capture(path, k):
    out = json.loads(spread("-r", path, "-k", str(k), "-j").stdout)
    want = tshark_connections(path)
    got = [conn_of_json(j) for j in out["connections"]]
    assert Counter(map(as_tuple, got)) == Counter(map(as_tuple, want))
    assert out["connections_varied"] == 0
    check_output(out, got, k)


@needs_root
def test_synthetic_capture_arriving_label_and_varied_port(tmp_path):
    """An arriving non-zero label is what every label source uses (rule 2); a UDP source port that
    changes within a key is counted, and the first frame's is taken."""
    from scapy.all import Ether, IPv6, UDP, Raw
    frames = []
    for i, (sport, fl, qp) in enumerate([(5000, 0xABCDE, 0x12345), (5001, 0xABCDE, 0x12345), (6000, 0, 0x777)]):
        pkt = Ether() / IPv6(src="fd00::a:1", dst="fd00::b:2", fl=fl) / UDP(sport=sport, dport=4791) / \
            Raw(t.roce_payload(0x04, qp, 1 + i))
        frames.append(Frame(bytes(pkt), t.T0 + i * 1000))
    path = str(tmp_path / "fl.pcap")
    t.write_pcap(path, frames)
    out = json.loads(spread("-r", path, "-k", "3", "-j").stdout)
    assert out["connections_varied"] == 1 and out["frames_read"] == 3
    got = sorted((conn_of_json(j) for j in out["connections"]), key=lambda c: c["dqp"])
    assert [as_tuple(c) for c in got] == [("fd00::a:1", "fd00::b:2", 6000, 0x777, None, 0),
                                          ("fd00::a:1", "fd00::b:2", 5000, 0x12345, None, 0xABCDE)]
    j = next(j for j in out["connections"] if j["dest_qp"] == 0x12345)
    assert set(j["flow_labels"].values()) == {0xABCDE}
    check_output(out, [conn_of_json(j) for j in out["connections"]], 3)


def test_generated_qps_up_to_the_last_qpn():
    """-q 0xFFFFFC -n 4 ends at QPN 0xFFFFFF, the largest: accepted, QPs in order, no wrap."""
    out = json.loads(spread("-n", "4", "-s", "fd00::1", "-d", "fd00::2", "-q", "0xFFFFFC", "--json").stdout)
    assert [c["dest_qp"] for c in out["connections"]] == [0xFFFFFC, 0xFFFFFD, 0xFFFFFE, 0xFFFFFF]


@needs_root
def test_mirrored_capture_with_config_and_encapsulation(tmp_path):
    """A capture of VXLAN mirror copies (scapy; the inner frames' keys known by
    construction): without [capture] no connection is seen; with
    --encapsulation vxlan (or --config FILE with a line for the VNI, as
    `connections` takes them) the inner connections are modelled, and a VNI no
    line names is not (mirror_sessions = table, as the meter)."""
    from scapy.all import Ether, IP, IPv6, UDP, Raw
    from scapy.layers.vxlan import VXLAN
    frames = []
    for i, qp in enumerate((0x111, 0x222, 0x333)):
        inner = Ether(src="02:00:00:00:0b:01", dst="02:00:00:00:0b:02") / \
            IPv6(src="fd00::a:1", dst="fd00::b:2") / UDP(sport=5000 + i, dport=4791) / \
            Raw(t.roce_payload(0x04, qp, 1 + i))
        vni = 77 if qp == 0x333 else 5001
        outer = Ether(src="02:00:00:00:0a:01", dst="02:00:00:00:0a:02") / \
            IP(src="192.0.2.1", dst="192.0.2.100") / UDP(sport=40000, dport=4789) / \
            VXLAN(vni=vni, flags=0x08) / Raw(bytes(inner))
        frames.append(Frame(bytes(outer), t.T0 + i * 1000))
    path = str(tmp_path / "vx.pcap")
    t.write_pcap(path, frames)
    assert json.loads(spread("-r", path, "-j").stdout)["connections"] == []
    out = json.loads(spread("-r", path, "-e", "vxlan", "-j").stdout)
    assert sorted((c["dest_qp"], c["udp_source_port"]) for c in out["connections"]) == \
        [(0x111, 5000), (0x222, 5001), (0x333, 5002)]
    check_output(out, [conn_of_json(j) for j in out["connections"]], 8)
    ini = tmp_path / "vx.ini"
    ini.write_text("[capture]\nencapsulation = vxlan\nobservation_point = 2001 vtep vxlan 5001\n")
    out = json.loads(spread("-r", path, "--config", str(ini), "-j").stdout)
    assert sorted(c["dest_qp"] for c in out["connections"]) == [0x111, 0x222]
    p = spread("-r", path, "-e", "gre", check=False)
    assert p.returncode == 2 and "--encapsulation gre" in p.stderr, p.stderr


def test_connection_at_two_observation_points_counted_once(tmp_path):
    """Trial finding: one connection mirrored at two observation points (VXLAN VNI 100 and 200)
    was modelled as two connections (a collision with itself, Jain's index off). It is one
    connection, its observation points counted (-j observation_points, -v "points N"); the
    classes are the reference model's over the two distinct connections. Without -e, a capture
    of only encapsulated frames says why it found no connection (as `connections` does), exit 0."""
    from scapy.all import Ether, IP, IPv6, UDP, Raw
    from scapy.layers.vxlan import VXLAN
    frames = []
    for i, (qp, vni) in enumerate(((0x111, 100), (0x111, 200), (0x222, 100))):
        inner = Ether(src="02:00:00:00:0b:01", dst="02:00:00:00:0b:02") / \
            IPv6(src="fd00::a:1", dst="fd00::b:2") / UDP(sport=5000, dport=4791) / \
            Raw(t.roce_payload(0x04, qp, 1 + i))
        outer = Ether(src="02:00:00:00:0a:01", dst="02:00:00:00:0a:02") / \
            IP(src="192.0.2.1", dst="192.0.2.100") / UDP(sport=40000, dport=4789) / \
            VXLAN(vni=vni, flags=0x08) / Raw(bytes(inner))
        frames.append(Frame(bytes(outer), t.T0 + i * 1000))
    path = str(tmp_path / "vx2.pcap")
    t.write_pcap(path, frames)
    out = json.loads(spread("-r", path, "-e", "vxlan", "-j").stdout)
    assert [(c["dest_qp"], c["observation_points"], c["frames"]) for c in out["connections"]] == \
        [(0x111, 2, 2), (0x222, 1, 1)]
    want = [{"src": "fd00::a:1", "dst": "fd00::b:2", "sport": 5000, "dqp": qp, "sqp": None, "label_in": 0}
            for qp in (0x111, 0x222)]
    check_output(out, want, 8)
    text = spread("-r", path, "-e", "vxlan", "-v").stdout
    assert ": 3 frames, 2 connections" in text and "dqp 0x000111 label 0x00000; points 2;" in text, text
    for cmd in (["flowlabel", "spread", "-r", path], ["connections", path]):
        p = subprocess.run([t.ROCEMETER, *cmd], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert "no frame with a BTH read as plain RoCEv2" in p.stderr and "--encapsulation" in p.stderr, p.stderr
    p = spread("-r", path, "-e", "vxlan")
    assert "no frame with a BTH" not in p.stderr, p.stderr


@pytest.mark.parametrize("extra", [[], ["--mix"]], ids=["literal", "mix"])
def test_docs_figures_are_the_commands(extra):
    """docs/flowlabel.md "Spread figures" holds what scripts/spread-table prints now (the tables are
    regenerated, not edited by hand)."""
    p = subprocess.run([os.path.join(t.ROOT, "scripts", "spread-table"), "--rocemeter", t.ROCEMETER, *extra,
                        "generated"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = open(os.path.join(t.ROOT, "docs", "flowlabel.md")).read()
    assert p.stdout in doc, "docs/flowlabel.md: regenerate with scripts/spread-table %s generated" % " ".join(extra)
