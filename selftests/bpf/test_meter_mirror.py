# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Mirrored copies (bpf/parse.h's decapsulation, bpf/meter.bpf.c's mirror
sessions, docs/deployment.md) through `rocemeter replay --stats-json`
(BPF_PROG_TEST_RUN runs the real program on each frame).

The frames are built with scapy (scapy.contrib.erspan for ERSPAN I, II and
III, scapy's VXLAN, an 802.1Q tag for RSPAN); tshark's ERSPAN and VXLAN
dissectors check that they are what they claim, independently of the
meter's parser. The reference is the meter itself on the same inner frames
sent plain: every report's counters must equal those of the plain run, at
the observation point of the session that carried them ([SEQOBS] "Identity
and Epoch Lifecycle": the same connection seen at two points is two
contexts). Mirror loss (a GRE sequence gap) closes the epochs of its point
only, with captureDiscontinuity. Bad mirror headers are counted, never
metered wrongly.
"""
import json
import os
import subprocess

import pytest
from scapy.contrib.erspan import ERSPAN_II, ERSPAN_III, ERSPAN_PlatformSpecific
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import GRE, Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Raw

import rocetest as t
from rocetest import CAPTURE_DISCONTINUITY as CD, FINAL, PROFILE_VIOLATION, Frame

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="BPF_PROG_TEST_RUN needs root")

MS = 10**6
V4 = ("198.51.100.1", "198.51.100.2")
V6 = ("2001:db8:1::1", "2001:db8:1::2")
SWITCH_A4, SWITCH_B4, MONITOR4 = "192.0.2.1", "192.0.2.2", "192.0.2.100"
SWITCH_A6, SWITCH_B6, MONITOR6 = "2001:db8:ff::1", "2001:db8:ff::2", "2001:db8:ff::100"
ID_A, ID_B, ID_VX, ID_RS = 1001, 1002, 2001, 3001
VNI, RSPAN_VLAN = 5001, 900
CONFIG = """[capture]
encapsulation = {encap}
rspan_vlan = 900
observation_point = 1001 leaf-a erspan 192.0.2.1 7
observation_point = 1002 leaf-b erspan 192.0.2.2 7
observation_point = 1011 leaf-a6 erspan 2001:db8:ff::1 7
observation_point = 1012 leaf-b6 erspan 2001:db8:ff::2 7
observation_point = 1021 leaf-a-type1 erspan 192.0.2.1 0
observation_point = 1031 leaf-a6-type1 erspan 2001:db8:ff::1 0
observation_point = 2001 vtep vxlan 5001
observation_point = 3001 rspan rspan 900
"""


def config(tmp_path, encap="plain, erspan, vxlan, rspan", extra=""):
    path = os.path.join(str(tmp_path), "capture.ini")
    with open(path, "w") as f:
        f.write(CONFIG.format(encap=encap) + extra)
    return path


def outer_ip(src, proto=None):
    if ":" in src:
        return IPv6(src=src, dst=MONITOR6, hlim=64, **({"nh": proto} if proto is not None else {}))
    return IP(src=src, dst=MONITOR4, ttl=64, **({"proto": proto} if proto is not None else {}))


def outer_eth():
    return Ether(src="02:00:00:00:0a:01", dst="02:00:00:00:0a:02")


def erspan(inner, kind, switch, seq, session=7, t_bit=0, platform=False, gre_kw=None):
    """ERSPAN type I (no sequence number, no header), II or III over GRE."""
    gre = dict(proto=0x88BE if kind in (1, 2) else 0x22EB)
    if kind != 1:
        gre.update(seqnum_present=1, sequence_number=seq)
    gre.update(gre_kw or {})
    pkt = outer_eth() / outer_ip(switch) / GRE(**gre)
    if kind == 2:
        pkt = pkt / ERSPAN_II(ver=1, session_id=session, t=t_bit)
    elif kind == 3:
        pkt = pkt / ERSPAN_III(ver=2, session_id=session, t=t_bit, timestamp=seq, o=1 if platform else 0)
        if platform:
            pkt = pkt / ERSPAN_PlatformSpecific(platf_id=3, info1=0x1234, info2=0x5678)
    return bytes(pkt / Raw(inner))


def vxlan(inner, vni=VNI, port=4789, src=SWITCH_A4):
    return bytes(outer_eth() / outer_ip(src) / UDP(sport=40000, dport=port) / VXLAN(vni=vni, flags=0x08)
                 / Raw(inner))


def rspan(inner, vlan=RSPAN_VLAN):
    """The RSPAN VLAN's tag inserted as the outermost tag of the mirrored frame."""
    return inner[:12] + b"\x81\x00" + vlan.to_bytes(2, "big") + inner[12:]


def stream(family, n=12):
    """Two connections' requests with a skipped PSN, a late fill and a repeat,
    and frames that are not RoCEv2 (the mirror carries them too)."""
    s, d = V4 if family == 4 else V6
    psns = [10, 11, 13, 12, 14, 14, 15, 17, 18, 19, 20, 21][:n]
    out = []
    for i, p in enumerate(psns):
        out.append(t.roce_frame(s, d, 0xA1, p))
        out.append(t.roce_frame(d, s, 0xB2, 100 + i))
        if i % 4 == 0:
            out.append(bytes(t.l2() / (IP(src=V4[0], dst=V4[1]) if family == 4 else IPv6(src=V6[0], dst=V6[1]))
                             / UDP(sport=1, dport=53) / Raw(b"x" * 20)))
    return out


def frames_at(datas, start=0):
    return [Frame(d, t.T0 + (start + i) * MS) for i, d in enumerate(datas)]


def replay(tmp_path, datas, *args, name="m.pcap"):
    path = os.path.join(str(tmp_path), name)
    t.write_pcap(path, frames_at(datas) if datas and not isinstance(datas[0], Frame) else datas)
    r = t.run_replay(path, tmp_path, "-a", *args)
    assert r.rc == 0, r.stderr
    return r


COUNTERS = [f for f in t.COUNTER_FIELDS]


def by_point(reports):
    """{observationPointId: sorted [(key, counters...)]} of the reports."""
    out = {}
    for r in reports:
        out.setdefault(r["observationPointId"], []).append(
            (t.report_key(r), r["rdmaSequenceReportId"]) + tuple(r[f] for f in COUNTERS))
    return {k: sorted(v) for k, v in out.items()}


def tshark(path, fields):
    cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    return [dict(zip(fields, line.split("\t"))) for line in out.splitlines()]


ENCAPS = ["erspan1", "erspan2", "erspan3", "erspan3-platform", "vxlan", "rspan"]


def encapsulate(enc, inner, seq, switch=SWITCH_A4, **kw):
    if enc == "erspan1":
        return erspan(inner, 1, switch, seq, **kw)
    if enc == "erspan2":
        return erspan(inner, 2, switch, seq, **kw)
    if enc == "erspan3":
        return erspan(inner, 3, switch, seq, **kw)
    if enc == "erspan3-platform":
        return erspan(inner, 3, switch, seq, platform=True, **kw)
    if enc == "vxlan":
        return vxlan(inner)
    return rspan(inner)


def point_of(enc, switch=SWITCH_A4):
    if enc == "erspan1":  # no session ID: the line of session 0
        return {SWITCH_A4: 1021, SWITCH_A6: 1031}[switch]
    if enc == "vxlan":
        return ID_VX
    if enc == "rspan":
        return ID_RS
    return {SWITCH_A4: ID_A, SWITCH_B4: ID_B, SWITCH_A6: 1011, SWITCH_B6: 1012}[switch]


@pytest.mark.parametrize("family", [4, 6], ids=["inner-ipv4", "inner-ipv6"])
@pytest.mark.parametrize("outer", [4, 6], ids=["outer-ipv4", "outer-ipv6"])
@pytest.mark.parametrize("enc", ENCAPS)
def test_mirror_counts_like_plain(tmp_path, enc, outer, family):
    if outer == 6 and enc in ("vxlan", "rspan"):
        pytest.skip("the outer family matters for ERSPAN's session key only")
    inner = stream(family)
    plain = replay(tmp_path, inner, name="plain.pcap")
    switch = SWITCH_A4 if outer == 4 else SWITCH_A6
    mirrored = [encapsulate(enc, f, seq=1000 + i, switch=switch) for i, f in enumerate(inner)]
    cfg = config(tmp_path)
    r = replay(tmp_path, mirrored, "-c", cfg)
    want = by_point(plain.reports)[0]
    assert by_point(r.reports) == {point_of(enc, switch): want}
    assert r.stats["mirror_frames"] == len(mirrored)
    assert r.stats["eligible_requests"] == plain.stats["eligible_requests"]
    for k in ("rocev2", "not_rocev2", "profile_violations", "epochs_started"):
        assert r.stats[k] == plain.stats[k], k
    for k in ("unknown_mirror_session", "malformed_mirror", "mirror_sequence_gaps", "mirror_sequence_reordered",
              "truncated_mirror", "nested_encapsulation"):
        assert r.stats[k] == 0, k
    # tshark, the independent decoder, reads the same mirror and the same inner BTHs.
    path = os.path.join(str(tmp_path), "m.pcap")
    rows = tshark(path, ["erspan.version", "erspan.spanid", "vxlan.vni", "vlan.id", "infiniband.bth.psn"])
    psns = [row["infiniband.bth.psn"] for row in rows if row["infiniband.bth.psn"]]
    assert len(psns) == plain.stats["rocev2"]
    if enc in ("erspan2", "erspan3", "erspan3-platform"):
        assert {row["erspan.version"] for row in rows} == {"1" if enc == "erspan2" else "2"}
        assert {row["erspan.spanid"] for row in rows} == {"7"}
    elif enc == "vxlan":
        assert {row["vxlan.vni"] for row in rows} == {str(VNI)}
    elif enc == "rspan":
        assert {row["vlan.id"] for row in rows} == {str(RSPAN_VLAN)}


def test_plain_config_leaves_mirrors_alone(tmp_path):
    """Without [capture] nothing changes for TAP and SPAN: a mirror is not RoCEv2."""
    inner = stream(4)
    r = replay(tmp_path, [erspan(f, 2, SWITCH_A4, i) for i, f in enumerate(inner)] + [vxlan(inner[0])])
    assert r.reports == []
    assert r.stats["not_rocev2"] == len(inner) + 1 and r.stats["mirror_frames"] == 0


def test_two_observation_points_are_two_contexts(tmp_path):
    """The same connection through two switches: two contexts, two epochs,
    each exactly the plain one."""
    inner = stream(4)
    plain = replay(tmp_path, inner, name="plain.pcap")
    mixed = []
    for i, f in enumerate(inner):  # both copies arrive when the plain frame did
        mixed.append(Frame(erspan(f, 2, SWITCH_A4, 50 + i), t.T0 + i * MS))
        mixed.append(Frame(erspan(f, 3, SWITCH_B4, 9000 + i), t.T0 + i * MS))
    r = replay(tmp_path, mixed, "-c", config(tmp_path))
    want = by_point(plain.reports)[0]
    assert by_point(r.reports) == {ID_A: want, ID_B: want}
    ids = {rep["rdmaSequenceEpochId"] for rep in r.reports}
    assert len(ids) == 2 * len(plain.reports)


@pytest.mark.parametrize("kind", [2, 3])
def test_gre_sequence_gap_closes_only_its_point(tmp_path, kind):
    """A frame of session A lost in the mirror path (a GRE sequence gap):
    A's open epochs close with captureDiscontinuity at their next request and
    start afresh; B's epochs stay open and exact."""
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(10)]
    frames = []
    for i, f in enumerate(inner):
        if i != 4:  # A's copy of the fifth frame is lost
            frames.append(erspan(f, kind, SWITCH_A4, 100 + i))
        frames.append(erspan(f, kind, SWITCH_B4, 500 + i))
    r = replay(tmp_path, frames, "-c", config(tmp_path))
    assert r.stats["mirror_sequence_gaps"] == 1
    a = [x for x in r.reports if x["observationPointId"] == ID_A]
    b = [x for x in r.reports if x["observationPointId"] == ID_B]
    assert len(b) == 1 and b[0]["rdmaSequenceFlags"] & CD == 0 and b[0]["requestPacketTotalCount"] == 10
    assert b[0]["skippedPsnTotalCount"] == 0
    assert len(a) == 2
    first, second = sorted(a, key=lambda x: x["rdmaSequenceEpochId"])
    assert first["rdmaSequenceFlags"] & (CD | FINAL) == CD | FINAL and first["requestPacketTotalCount"] == 4
    assert second["rdmaSequenceFlags"] & CD == 0 and second["requestPacketTotalCount"] == 5
    assert second["skippedPsnTotalCount"] == 0  # a fresh epoch: the lost PSN is not a skip


def test_gre_sequence_reordered_is_counted_not_a_gap(tmp_path):
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(6)]
    seqs = [1, 2, 3, 3, 2, 4]  # a duplicate and one step back: reordering in the mirror path
    r = replay(tmp_path, [erspan(f, 2, SWITCH_A4, q) for f, q in zip(inner, seqs)], "-c", config(tmp_path))
    assert r.stats["mirror_sequence_reordered"] == 2 and r.stats["mirror_sequence_gaps"] == 0
    assert len(r.reports) == 1 and r.reports[0]["rdmaSequenceFlags"] & CD == 0


def test_gre_sequence_restart_is_a_gap(tmp_path):
    """Far behind the highest (more than 64): the switch restarted its
    sequence; what it sent before is unknown, a gap."""
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(4)]
    seqs = [1000, 1001, 5, 6]
    r = replay(tmp_path, [erspan(f, 2, SWITCH_A4, q) for f, q in zip(inner, seqs)], "-c", config(tmp_path))
    assert r.stats["mirror_sequence_gaps"] == 1
    assert sorted(x["rdmaSequenceFlags"] & CD for x in r.reports) == [0, CD]


def test_unknown_session_is_counted_not_metered(tmp_path):
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(3)]
    frames = [erspan(f, 2, "192.0.2.77", i) for i, f in enumerate(inner)]  # no line names this switch
    frames += [erspan(f, 2, SWITCH_A4, i, session=8) for i, f in enumerate(inner)]  # nor this session
    frames += [vxlan(inner[0], vni=42)]
    r = replay(tmp_path, frames, "-c", config(tmp_path))
    assert r.reports == []
    assert r.stats["unknown_mirror_session"] == 7 and r.stats["eligible_requests"] == 0


def test_auto_sessions_derive_the_point(tmp_path):
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(3)]
    frames = [erspan(f, 2, "192.0.2.77", i, session=9) for i, f in enumerate(inner)]
    r = replay(tmp_path, frames, "-c", config(tmp_path, extra="mirror_sessions = auto\n"))
    assert r.stats["unknown_mirror_session"] == 0
    assert [x["observationPointId"] for x in r.reports] == [(1 << 56) | (0xC000024D << 16) | 9]


def test_plain_frames_not_accepted(tmp_path):
    s, d = V4
    path = os.path.join(str(tmp_path), "erspan-only.ini")
    with open(path, "w") as f:
        f.write("[capture]\nencapsulation = erspan\nobservation_point = 1001 leaf-a erspan 192.0.2.1 7\n")
    r = replay(tmp_path, [t.roce_frame(s, d, 0xA1, 10), erspan(t.roce_frame(s, d, 0xA1, 11), 2, SWITCH_A4, 1)],
               "-c", path)
    assert [x["observationPointId"] for x in r.reports] == [ID_A]
    assert r.stats["unknown_mirror_session"] == 1


def test_truncated_copies_are_metered_from_their_headers(tmp_path):
    """A switch that cuts mirrored frames at 128 bytes (with the T bit, or
    without it: the inner frame is then shorter than its IP length): the
    headers to the BTH are enough; never a profile violation."""
    s, d = V4
    big = [t.roce_frame(s, d, 0xA1, 10 + i, data=b"\x5a" * 400) for i in range(5)]
    plain = replay(tmp_path, big, name="plain.pcap")
    cut = [erspan(f[:128], 2, SWITCH_A4, i, t_bit=1 if i % 2 else 0) for i, f in enumerate(big)]
    r = replay(tmp_path, cut, "-c", config(tmp_path))
    assert r.stats["truncated_mirror"] == 5 and r.stats["profile_violations"] == 0
    assert by_point(r.reports) == {ID_A: by_point(plain.reports)[0]}


BAD = [
    ("gre-routing", lambda f: erspan(f, 2, SWITCH_A4, 1, gre_kw={"routing_present": 1}), "malformed_mirror"),
    ("gre-unknown-flag", lambda f: erspan(f, 2, SWITCH_A4, 1, gre_kw={"flags": 1}), "malformed_mirror"),
    ("gre-version-1", lambda f: erspan(f, 2, SWITCH_A4, 1, gre_kw={"version": 1}), "malformed_mirror"),
    ("gre-recursion", lambda f: erspan(f, 2, SWITCH_A4, 1, gre_kw={"recursion_control": 2}), "malformed_mirror"),
    ("erspan2-version-2", lambda f: bytes(outer_eth() / outer_ip(SWITCH_A4) / GRE(proto=0x88BE, seqnum_present=1)
                                          / ERSPAN_II(ver=2, session_id=7) / Raw(f)), "malformed_mirror"),
    ("erspan2-version-0", lambda f: bytes(outer_eth() / outer_ip(SWITCH_A4) / GRE(proto=0x88BE, seqnum_present=1)
                                          / ERSPAN_II(ver=0, session_id=7) / Raw(f)), "malformed_mirror"),
    ("erspan3-version-1", lambda f: bytes(outer_eth() / outer_ip(SWITCH_A4) / GRE(proto=0x22EB, seqnum_present=1)
                                          / ERSPAN_III(ver=1, session_id=7) / Raw(f)), "malformed_mirror"),
    ("erspan3-version-3", lambda f: bytes(outer_eth() / outer_ip(SWITCH_A4) / GRE(proto=0x22EB, seqnum_present=1)
                                          / ERSPAN_III(ver=3, session_id=7) / Raw(f)), "malformed_mirror"),
    ("erspan3-frame-type-ip", lambda f: bytes(outer_eth() / outer_ip(SWITCH_A4) / GRE(proto=0x22EB, seqnum_present=1)
                                              / ERSPAN_III(ver=2, session_id=7, ft=2) / Raw(f[14:])),
     "malformed_mirror"),
    ("erspan-header-cut", lambda f: bytes(outer_eth() / outer_ip(SWITCH_A4) / GRE(proto=0x88BE, seqnum_present=1)
                                          / Raw(b"\x10\x00")), "malformed_mirror"),
    ("vxlan-no-i-flag", lambda f: bytes(outer_eth() / outer_ip(SWITCH_A4) / UDP(sport=1, dport=4789)
                                        / VXLAN(vni=VNI, flags=0) / Raw(f)), "malformed_mirror"),
    ("inner-shorter-than-ethernet", lambda f: erspan(f[:10], 2, SWITCH_A4, 1), "malformed_mirror"),
    ("erspan-in-vxlan", lambda f: vxlan(erspan(f, 2, SWITCH_A4, 1)), "nested_encapsulation"),
    ("vxlan-in-erspan", lambda f: erspan(vxlan(f), 2, SWITCH_A4, 1), "nested_encapsulation"),
    ("rspan-and-erspan", lambda f: rspan(erspan(f, 2, SWITCH_A4, 1)), "nested_encapsulation"),
    ("inner-ip-header-cut", lambda f: erspan(f[:14 + 12], 2, SWITCH_A4, 1), "malformed_ip"),
    ("inner-udp-cut", lambda f: erspan(f[:14 + 20 + 4], 2, SWITCH_A4, 1), "malformed_udp"),
    ("inner-bth-cut", lambda f: erspan(f[:14 + 20 + 8 + 6], 2, SWITCH_A4, 1), "malformed_bth"),
]


@pytest.mark.parametrize("build,stat", [(b, s) for _, b, s in BAD], ids=[n for n, _, _ in BAD])
def test_bad_mirror_is_counted_never_metered(tmp_path, build, stat):
    """Between two requests of connection K mirrored through session A: the
    bad frame is counted under its statistic; K's epoch stays one clean epoch
    and no other context appears."""
    s, d = V4
    k = [t.roce_frame(s, d, 0xA1, 10), t.roce_frame(s, d, 0xA1, 11)]
    x = t.roce_frame(s, d, 0xB2, 500)
    frames = [erspan(k[0], 2, SWITCH_A4, 1), build(x), erspan(k[1], 2, SWITCH_A4, 2)]
    r = replay(tmp_path, frames, "-c", config(tmp_path))
    assert r.stats[stat] == 1
    assert len(r.reports) == 1
    rep = r.reports[0]
    assert rep["rdmaDestinationQP"] == 0xA1 and rep["requestPacketTotalCount"] == 2
    assert rep["rdmaSequenceFlags"] & (CD | PROFILE_VIOLATION) == 0
    assert r.stats["mirror_sequence_gaps"] == 0


def test_fuzzed_mirrors_never_crash(tmp_path):
    """Random bytes after valid outer headers, and random cuts of valid
    mirrors: the program runs every frame and meters none of them wrongly."""
    import random
    rnd = random.Random(25)
    s, d = V4
    good = [erspan(t.roce_frame(s, d, 0xA1, 10 + i), 2 + i % 2, SWITCH_A4, i) for i in range(4)]
    frames = []
    for i in range(600):
        base = bytearray(rnd.choice(good))
        if i % 3 == 0:
            cut = rnd.randrange(14, len(base))
            base = base[:cut]
        else:
            for _ in range(rnd.randrange(1, 6)):
                pos = rnd.randrange(14 + 20, len(base))
                base[pos] = rnd.randrange(256)
        frames.append(bytes(base))
    r = replay(tmp_path, frames, "-c", config(tmp_path, extra="mirror_sessions = auto\n"))
    assert r.stats["frames"] == len(frames)
    for rep in r.reports:  # whatever was metered is one of K's or a fuzzed connection's, never a crash
        assert rep["requestPacketTotalCount"] >= 1


def test_ipfix_names_the_observation_points(tmp_path):
    """replay --ipfix-out with [capture]: after the Templates, an Options
    Template 262 (scope observationPointId 138, interfaceName 82 of 64
    octets) and one Options Data Record per observation_point line, its ID
    and NAME; the Sequence Numbers count those records. Decoded by
    libfixbuf's ipfixDump, the names from the configuration above."""
    import re
    import shutil
    if not shutil.which("ipfixDump"):
        pytest.skip("needs libfixbuf's ipfixDump")
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(3)]
    out = os.path.join(str(tmp_path), "m.ipfix")
    r = replay(tmp_path, [erspan(f, 2, SWITCH_B4, i + 1) for i, f in enumerate(inner)], "-c", config(tmp_path),
               "--ipfix-out", out)
    assert [x["observationPointId"] for x in r.reports] == [ID_B]
    elements = os.path.join(os.path.dirname(t.ROCEMETER), "..", "docs", "rocemeter-ie.xml")
    p = subprocess.run(["ipfixDump", "--in", out, "--element-file", elements], capture_output=True, text=True)
    assert p.returncode == 0 and "out of sequence" not in p.stderr, p.stderr
    text = p.stdout
    tmpl = text.split("tid:   262", 1)
    assert len(tmpl) == 2, text
    fields = re.findall(r"ent:\s+(\d+)\s+id:\s+(\d+)\s+type:\s+\S+\s+len:\s+(\d+)", tmpl[1])[:2]
    assert fields == [("0", "138", "8"), ("0", "82", "64")]
    ids = [int(x) for x in re.findall(r"observationPointId : (\d+)", text)]
    names = [n.strip() for n in re.findall(r"interfaceName : \(len: 64\) (.*)$", text, re.M)]
    lines = re.findall(r"^observation_point = (\d+) (\S+) ", CONFIG, re.M)
    assert list(zip(ids[:len(lines)], names)) == [(int(i), n) for i, n in lines]
    # Message sequence numbers: templates (2 Flow Keys records), names (8 records), then the data.
    seqs = [int(x) for x in re.findall(r"sequence number: (\d+)", text)]
    assert seqs[:3] == [0, 2, 2 + len(lines)]


def read_first_fragment(s, d):
    return bytes(t.l2() / IP(src=s, dst=d, flags="MF") / UDP(sport=49152, dport=4791)
                 / Raw(t.roce_payload(t.READ_REQUEST, 0xA1, 12)))


def read_five_ext6(s, d):
    from scapy.layers.inet6 import IPv6ExtHdrDestOpt
    return t.roce_frame(s, d, 0xA1, 12, opcode=t.READ_REQUEST, ext6=[IPv6ExtHdrDestOpt() for _ in range(5)])


@pytest.mark.parametrize("form,addrs,build", [
    ("ipv4-first-fragment", V4, read_first_fragment),
    ("three-vlan-tags", V4, lambda s, d: t.roce_frame(s, d, 0xA1, 12, opcode=t.READ_REQUEST, vlans=(10, 20, 30))),
    ("five-ipv6-extension-headers", V6, read_five_ext6),
])
def test_unsupported_request_in_unmetered_form_is_a_violation(tmp_path, form, addrs, build):
    """An RDMA READ whose BTH is readable in a form the meter does not meter
    (an IPv4 first fragment, three VLAN tags, more than four IPv6 extension
    headers) is an observed unsupported request: the epoch closes with
    profileViolation (not captureDiscontinuity) and the connection stays
    disabled, also for the SENDs after it ([SEQOBS] "Applicability and
    Provisioning"): the opcode is checked before the frame form."""
    s, d = addrs
    frames = [t.roce_frame(s, d, 0xA1, 10), t.roce_frame(s, d, 0xA1, 11), build(s, d), t.roce_frame(s, d, 0xA1, 13)]
    r = replay(tmp_path, frames)
    assert len(r.reports) == 1
    assert r.reports[0]["rdmaSequenceFlags"] & (PROFILE_VIOLATION | CD) == PROFILE_VIOLATION
    assert r.reports[0]["requestPacketTotalCount"] == 2
    assert r.stats["profile_violations"] == 1 and r.stats["disabled_requests"] == 1
    assert r.stats["unobserved_requests"] == 0


def connections(tmp_path, datas, *args):
    path = os.path.join(str(tmp_path), "c.pcap")
    t.write_pcap(path, frames_at(datas) if datas and not isinstance(datas[0], Frame) else datas)
    proc = subprocess.run([t.ROCEMETER, "connections", *args, path], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_replay_encapsulation_option(tmp_path):
    """--encapsulation auto without a configuration: sessions get derived IDs."""
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(3)]
    frames = [erspan(f, 3, SWITCH_A4, i, session=5) for i, f in enumerate(inner)] + [vxlan(inner[0], vni=77)]
    r = replay(tmp_path, frames, "--encapsulation", "auto")
    assert sorted(x["observationPointId"] for x in r.reports) == sorted(
        [(1 << 56) | (0xC0000201 << 16) | 5, (2 << 56) | 77])
    bad = t.run_replay(os.path.join(str(tmp_path), "m.pcap"), tmp_path, "-a", "--encapsulation", "gre")
    assert bad.rc == 2 and "--encapsulation gre" in bad.stderr


def test_connections_understand_mirrors(tmp_path):
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(3)]
    frames = [erspan(f, 2, SWITCH_A4, i) for i, f in enumerate(inner)]
    frames += [erspan(f, 2, SWITCH_B4, i) for i, f in enumerate(inner)]
    plain = connections(tmp_path, frames)
    assert "connection = " not in plain  # a mirror is not RoCEv2 without [capture]
    auto = connections(tmp_path, frames, "--encapsulation", "erspan")
    assert "connection = %s %s 0x0000a1 0xffff" % (s, d) in auto
    # sessions no line names get observation points of their own: never merged
    assert "(derived) erspan 192.0.2.1 session 7" in auto and "(derived) erspan 192.0.2.2 session 7" in auto
    assert " obs 1 " in auto and " obs 2 " in auto
    cfg = connections(tmp_path, frames, "-c", config(tmp_path))
    assert "# observation point 1: id 1001 leaf-a erspan 192.0.2.1 session 7" in cfg
    assert " obs 1 " in cfg and " obs 2 " in cfg


def test_connections_auto_sessions_from_the_file(tmp_path):
    """mirror_sessions = auto in the file's [capture] (no --encapsulation):
    a session no line names gets an observation point of its own, with the
    ID derived from it (kind << 56 | address << 16 | session); without it
    that session's connection is not listed at a point of its own."""
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(3)]
    frames = [erspan(f, 2, SWITCH_A4, i) for i, f in enumerate(inner)]
    frames += [erspan(f, 2, SWITCH_A4, i, session=9) for i, f in enumerate(inner)]
    derived = (1 << 56) | (0xC0000201 << 16) | 9
    table = connections(tmp_path, frames, "-c", config(tmp_path))
    assert "id %d" % derived not in table and " obs 9 " not in table
    auto = connections(tmp_path, frames, "-c", config(tmp_path, extra="mirror_sessions = auto\n"))
    assert "# observation point 1: id 1001 leaf-a erspan 192.0.2.1 session 7" in auto
    assert "# observation point 9: id %d (derived) erspan 192.0.2.1 session 9" % derived in auto
    assert " obs 1 " in auto and " obs 9 " in auto


def test_connections_unknown_sessions_as_replay(tmp_path):
    """[capture] encapsulation = vxlan with a line for VNI 5001 only: the
    frames of VNI 77 and the plain frames are not connections (before: listed
    at obs 0 as if plain) but counted unknown_mirror_session, as `replay`
    counts them (the meter's rule, docs/configuration.md mirror_sessions),
    and VNI 77 is shown as an unknown session with its frames; with
    mirror_sessions = auto in the file VNI 77 gets a derived point instead."""
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(3)]
    other = [t.roce_frame(s, d, 0xB2, 20 + i) for i in range(2)]
    frames = [vxlan(f) for f in inner] + [vxlan(f, vni=77) for f in other] + [inner[0]]
    cfg, cfg_auto = (os.path.join(str(tmp_path), n) for n in ("vx.ini", "vx-auto.ini"))
    for path, extra in ((cfg, ""), (cfg_auto, "mirror_sessions = auto\n")):
        with open(path, "w") as f:
            f.write("[capture]\nencapsulation = vxlan\nobservation_point = 2001 vtep vxlan 5001\n" + extra)
    r = replay(tmp_path, frames, "-c", cfg)
    assert r.stats["unknown_mirror_session"] == 3  # 2 of VNI 77, 1 plain: the meter's count
    doc = json.loads(connections(tmp_path, frames, "-c", cfg, "--json"))
    assert doc["unknown_mirror_session"] == r.stats["unknown_mirror_session"]
    assert [(c["observation_point"], c["rdmaDestinationQP"]) for c in doc["connections"]] == [(1, 0xA1)]
    assert doc["unknown_mirror_sessions"] == [{"kind": "vxlan", "session": 77, "frames": 2}]
    text = connections(tmp_path, frames, "-c", cfg)
    assert "0x0000b2" not in text and " obs 0 " not in text
    assert "# unknown mirror session: vxlan session 77: 2 frames, not counted (no observation_point line names it)" \
        in text
    assert "3 frames with a BTH not counted: of a mirror session no observation_point names, or plain" in text
    auto = json.loads(connections(tmp_path, frames, "-c", cfg_auto, "--json"))
    assert auto["unknown_mirror_session"] == 1 and auto["unknown_mirror_sessions"] == []
    assert sorted((c["observation_point"], c["rdmaDestinationQP"]) for c in auto["connections"]) == \
        [(1, 0xA1), (2, 0xB2)]


def test_connections_lists_capture_truncated_uc(tmp_path):
    """UC frames the capture's snap length cut after the BTH: the census
    still reads their BTH and lists the UC connection (excluded: UC)."""
    s, d = V4
    frames = []
    for i in range(3):
        f = t.roce_frame(s, d, 0x77, 10 + i, opcode=t.UC_SEND_ONLY, data=b"z" * 300)
        frames.append(Frame(f[:64], t.T0 + i * MS, wirelen=len(f)))
    out = connections(tmp_path, frames)
    assert "qp 0x000077" in out and "excluded: UC" in out


def test_mirror_headers_beyond_the_batch_copy(tmp_path):
    """An outer IPv6 header with a 200-byte destination-options header puts
    GRE and ERSPAN beyond the first 192 bytes replay's batch copies of a
    frame: the frame is run whole and metered like the others."""
    from scapy.layers.inet6 import IPv6ExtHdrDestOpt, PadN
    s, d = V4
    inner = [t.roce_frame(s, d, 0xA1, 10 + i) for i in range(3)]
    frames = []
    for i, f in enumerate(inner):
        ip6 = IPv6(src=SWITCH_A6, dst=MONITOR6, hlim=64) / IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\0" * 190)])
        frames.append(bytes(outer_eth() / ip6 / GRE(proto=0x88BE, seqnum_present=1, sequence_number=i + 1)
                            / ERSPAN_II(ver=1, session_id=7) / Raw(f)))
    r = replay(tmp_path, frames, "-c", config(tmp_path))
    assert r.stats["malformed_mirror"] == 0 and r.stats["eligible_requests"] == 3
    assert [x["observationPointId"] for x in r.reports] == [1011]
