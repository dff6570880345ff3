# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The XDP meter's parser and classification (bpf/parse.h, bpf/meter.bpf.c),
exercised through `rocemeter replay --stats-json` (BPF_PROG_TEST_RUN runs the
real program on each frame).

Each case puts one crafted frame between two requests of a provisioned
connection K (PSNs 10 and 11, which must still form one clean epoch unless
the frame under test is a capture fault) and states what the parser must
conclude: a statistic (RM_STATS in include/rocemeter/meter.h) for frames it
stops at, "metered" with the key it must find, or a request whose BTH was
read in a form the meter does not meter (Rec with `irregular`): that closes
its connection's epoch (docs/meter.md "Requests the meter cannot meter").
The expected verdicts are written from the header layouts (Ethernet,
802.1Q, RFC 791, RFC 8200, RFC 768, [IBPKT]'s BTH and extended headers) and
[SEQOBS] ("Applicability and Provisioning"); every statistic and every
report (keys included: never a wrong context) is compared with the model in
tests/lib/rocetest.py. Frames whose capture length is below their wire length
imitate a capture snap length.
"""
import ipaddress
import os

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import (IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
                                IPv6ExtHdrRouting)
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.packet import Raw

import rocetest as t
from rocetest import (CAPTURE_DISCONTINUITY as CD, FINAL, GENERATION_UNVERIFIED as GEN, PROFILE_VIOLATION, Frame,
                      Rec)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="BPF_PROG_TEST_RUN needs root")

MS = 10**6
V4 = ("198.51.100.1", "198.51.100.2")
V6 = ("2001:db8:1::1", "2001:db8:1::2")
QP_K, QP_X = 0x0000A1, 0x00B2C3   # K: the anchor connection; X: the frame under test
PSN_X = 0x123456


def payload_x(opcode=t.SEND_ONLY, **kw):
    return t.roce_payload(opcode, QP_X, PSN_X, **kw)


def eth(vlans=()):
    return t.l2(vlans)


def ip_for(family, **kw):
    s, d = V4 if family == 4 else V6
    return IP(src=s, dst=d, **kw) if family == 4 else IPv6(src=s, dst=d, **kw)


def key_x(family, qp=QP_X, pkey=0xFFFF):
    s, d = V4 if family == 4 else V6
    return t.make_key(s, d, qp, pkey)


def metered(family, opcode=t.SEND_ONLY, psn=PSN_X):
    return Rec(key_x(family), opcode, psn)


class Unattributed(str):
    """The statistic of a frame the parser stopped at that may have carried a
    request but names no connection (an unsupported header before the BTH):
    also counted as unattributed_frames, and a capture fault for every open
    epoch while [meter] unattributed_is_loss is on (the default)."""


def run(tmp_path, family, vlans, cases, args=("-a",), provisioned=lambda k: True, anchor=True, **model_kw):
    """cases: list of (bytes, wirelen or None, expectation); expectation is a
    statistic name, an Unattributed statistic or a Rec. With anchor, the
    frames go between K's PSN 10 and 11. model_kw: tests/lib/rocetest.py
    ReplayModel's options."""
    s, d = V4 if family == 4 else V6
    k = t.make_key(s, d, QP_K)
    items = [(t.roce_frame(s, d, QP_K, 10, vlans=vlans), None, Rec(k, t.SEND_ONLY, 10))] if anchor else []
    items += cases
    if anchor:
        items.append((t.roce_frame(s, d, QP_K, 11, vlans=vlans), None, Rec(k, t.SEND_ONLY, 11)))
    frames = [Frame(data, t.T0 + (i + 1) * MS, wirelen) for i, (data, wirelen, _) in enumerate(items)]
    path = str(tmp_path / "p.pcap")
    t.write_pcap(path, frames)
    r = t.run_replay(path, tmp_path, *args)
    assert r.rc == 0, r.stderr
    m = t.ReplayModel(provisioned=provisioned, **model_kw)
    for f, (_, _, exp) in zip(frames, items):
        if isinstance(exp, Rec):
            m.frame(f.ts_ns, rec=exp)
        else:
            m.frame(f.ts_ns, verdict=str(exp), cut=f.wirelen is not None and f.wirelen > len(f.data),
                    unattributed=isinstance(exp, Unattributed))
    m.end()
    truncated = sum(1 for f in frames if f.wirelen > len(f.data))
    t.compare_reports(m.reports, r.reports)
    assert r.stats == t.expected_stats(m, truncated=truncated)
    return r


ENCAPS = [pytest.param((4, ()), id="ipv4"), pytest.param((4, (5,)), id="ipv4-vlan"),
          pytest.param((6, ()), id="ipv6"), pytest.param((6, (5, 6)), id="ipv6-2vlan")]
FAMILIES = [pytest.param(4, id="ipv4"), pytest.param(6, id="ipv6")]


def full(family, vlans=(), opcode=t.SEND_ONLY, **kw):
    return bytes(eth(vlans) / ip_for(family) / UDP(sport=50000, dport=4791) / Raw(payload_x(opcode, **kw)))


# --------------------------------------------------------------------------
# Ethernet and VLAN.

@pytest.mark.parametrize("n", [1, 6, 12, 13])
def test_frames_below_14_bytes(n, tmp_path):
    data = full(4)[:n]
    run(tmp_path, 4, (), [(data, None, "malformed_eth"), (data, 100, "malformed_eth")])


@pytest.mark.parametrize("family,vlans", [(4, ()), (6, ()), (4, (5,)), (6, (5, 6))])
def test_truncated_at_each_boundary(family, vlans, tmp_path):
    """A full request cut inside each header, as a capture's snap length
    would (wire length = the full frame): the verdict names the header."""
    f = full(family, vlans)
    l2len = 14 + 4 * len(vlans)
    iplen = 20 if family == 4 else 40
    cuts = []
    for i in range(len(vlans)):                     # inside each VLAN tag
        cuts.append((14 + 4 * i + 2, "malformed_eth"))
    cuts += [
        (l2len, "malformed_ip"),                    # Ethernet (+ tags) only
        (l2len + iplen // 2, "malformed_ip"),       # inside the IP header
        (l2len + iplen, "malformed_udp"),           # IP header only
        (l2len + iplen + 5, "malformed_udp"),       # inside UDP
        (l2len + iplen + 8, "malformed_bth"),       # UDP header only
        (l2len + iplen + 8 + 11, "malformed_bth"),  # one byte short of the BTH
    ]
    cases = [(f[:n], len(f), v) for n, v in cuts if n >= 14]
    # Cut right after the BTH: the BTH is complete, the request is metered.
    cases.append((f[:l2len + iplen + 8 + 12], len(f), metered(family)))
    run(tmp_path, family, vlans, cases)


def test_truncated_vlan_tags(tmp_path):
    base = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=0x8100))
    qinq = bytes(eth() / Dot1AD(vlan=5, type=0x8100))
    cases = [(base, None, "malformed_eth"),                 # TPID, no tag
             (base + b"\x00\x05", None, "malformed_eth"),   # half a tag
             (qinq, None, "malformed_eth"),                 # outer tag, inner TPID, no inner tag
             (qinq + b"\x00", None, "malformed_eth")]
    run(tmp_path, 4, (), cases)


@pytest.mark.parametrize("family", [4, 6])
def test_three_vlan_tags(family, tmp_path):
    """More than two tags are not metered, but the parser reads on (up to
    four tags) to the BTH: with namespace = none the request names X, which
    has no open epoch here (unobserved_requests)."""
    data = bytes(eth() / Dot1AD(vlan=1) / Dot1Q(vlan=2) / Dot1Q(vlan=3) / ip_for(family)
                 / UDP(sport=50000, dport=4791) / Raw(payload_x()))
    data8100 = bytes(eth((1, 2, 3)) / ip_for(family) / UDP(sport=50000, dport=4791) / Raw(payload_x()))
    x = Rec(key_x(family), t.SEND_ONLY, PSN_X, irregular="unsupported_encapsulation")
    run(tmp_path, family, (), [(data, None, x), (data8100, None, x)])


@pytest.mark.parametrize("family", [4, 6])
def test_five_vlan_tags_unattributed(family, tmp_path):
    """Beyond four tags the parser stops: the frame may hide a request of
    any connection (unattributed_frames); K's open epoch is stale and its
    next request starts a fresh epoch, the old one final with
    captureDiscontinuity."""
    data = bytes(eth((1, 2, 3, 4, 5)) / ip_for(family) / UDP(sport=50000, dport=4791) / Raw(payload_x()))
    r = run(tmp_path, family, (), [(data, None, Unattributed("unsupported_encapsulation"))])
    assert [x["requestPacketTotalCount"] for x in r.reports] == [1, 1]
    assert r.reports[0]["rdmaSequenceFlags"] == FINAL | CD | GEN


@pytest.mark.parametrize("tags", [(0x8100,), (0x88A8,), (0x88A8, 0x8100), (0x8100, 0x8100), (0x88A8, 0x88A8)])
def test_one_and_two_tags_metered(tags, tmp_path):
    pkt = eth()
    for i, tpid in enumerate(tags):
        pkt = pkt / (Dot1AD(vlan=10 + i) if tpid == 0x88A8 else Dot1Q(vlan=10 + i))
    data = bytes(pkt / ip_for(6) / UDP(sport=50000, dport=4791) / Raw(payload_x()))
    run(tmp_path, 6, (), [(data, None, metered(6))])


def test_rocev1_and_other_ethertypes(tmp_path):
    grh_bth = b"\x60" + b"\0" * 39 + t.bth(t.SEND_ONLY, QP_X, PSN_X) + b"\0" * 4
    cases = [(bytes(eth() / Raw(b"")) [:12] + b"\x89\x15" + grh_bth, None, "rocev1"),
             (bytes(eth((7,)) / Raw(b""))[:16] + b"\x89\x15" + grh_bth, None, "rocev1"),
             (bytes(Ether(src="02:00:00:00:00:01", dst="ff:ff:ff:ff:ff:ff") / ARP()), None, "not_rocev2"),
             (bytes(Ether(type=0x88CC) / Raw(b"\0" * 46)), None, "not_rocev2")]
    r = run(tmp_path, 4, (), cases)
    assert r.stats["rocev1"] == 2


# --------------------------------------------------------------------------
# IPv4.

@pytest.mark.parametrize("vlans", [(), (9,)])
def test_ipv4_header_checks(vlans, tmp_path):
    u = UDP(sport=50000, dport=4791) / Raw(payload_x())
    cases = [
        (bytes(eth(vlans) / IP(src=V4[0], dst=V4[1], ihl=4) / u), None, "malformed_ip"),
        (bytes(eth(vlans) / IP(src=V4[0], dst=V4[1], ihl=0) / u), None, "malformed_ip"),
        (bytes(eth(vlans) / IP(src=V4[0], dst=V4[1], version=5) / u), None, "malformed_ip"),
        (bytes(eth(vlans) / IP(src=V4[0], dst=V4[1], len=19) / u), None, "malformed_ip"),      # < IHL
        (bytes(eth(vlans) / IP(src=V4[0], dst=V4[1], len=1400) / u), None, "malformed_ip"),    # > frame
        # Consistent but short: the IP packet ends inside UDP / right after it.
        (bytes(eth(vlans) / IP(src=V4[0], dst=V4[1], len=24) / u)[:14 + 4 * len(vlans) + 24], None,
         "malformed_udp"),
        (bytes(eth(vlans) / IP(src=V4[0], dst=V4[1], len=28) / UDP(sport=1, dport=4791, len=8)), None,
         "malformed_udp"),
    ]
    run(tmp_path, 4, vlans, cases)


@pytest.mark.parametrize("opts", [
    pytest.param(b"\x94\x04\x00\x00", id="router-alert"),
    pytest.param(b"\x01" * 40, id="40-nops"),
    pytest.param(b"\x01\x01\x01\x00", id="nop-eol"),
    pytest.param(b"\x83\x07\x04" + bytes([192, 0, 2, 9]) + b"\x00", id="lsrr"),
])
def test_ipv4_options_metered(opts, tmp_path):
    """IPv4 with options: the UDP header is found after IHL*4 bytes and the
    request is metered under its own key."""
    data = bytes(eth() / IP(src=V4[0], dst=V4[1], options=[]) / UDP(sport=50000, dport=4791) / Raw(payload_x()))
    # Insert the options by hand so that IHL and total length are exact.
    ip = bytearray(data[14:34])
    ip[0] = 0x40 | (5 + len(opts) // 4)
    tot = 20 + len(opts) + len(data) - 34
    ip[2:4] = tot.to_bytes(2, "big")
    ip[10:12] = b"\0\0"
    data = data[:14] + bytes(ip) + opts + data[34:]
    assert IP(data[14:]).ihl == 5 + len(opts) // 4 and UDP in Ether(data)  # scapy agrees
    run(tmp_path, 4, (), [(data, None, metered(4))])


def test_ipv4_fragments(tmp_path):
    """A first fragment (MF, offset 0) holds the UDP header and the BTH: a
    request the meter does not meter (it does not reassemble); later
    fragments hold no BTH and are only counted."""
    u = UDP(sport=50000, dport=4791) / Raw(payload_x())
    cases = [
        (bytes(eth() / IP(src=V4[0], dst=V4[1], flags="MF") / u), None,
         Rec(key_x(4), t.SEND_ONLY, PSN_X, irregular="ip_fragments")),
        (bytes(eth() / IP(src=V4[0], dst=V4[1], frag=1) / u), None, "ip_fragments"),
        (bytes(eth() / IP(src=V4[0], dst=V4[1], frag=8191) / u), None, "ip_fragments"),
        (bytes(eth() / IP(src=V4[0], dst=V4[1], flags="DF") / u), None, metered(4)),
    ]
    run(tmp_path, 4, (), cases)


def test_ethernet_padding_ignored(tmp_path):
    """A frame longer than its IP packet (Ethernet padding) is metered."""
    cases = [(full(4, opcode=t.SEND_ONLY, data=b"") + b"\0" * 30, None, metered(4)),
             (full(6, opcode=t.SEND_ONLY, data=b"") + b"\xff" * 7, None, Rec(key_x(6), t.SEND_ONLY, PSN_X))]
    run(tmp_path, 4, (), cases[:1])
    run(tmp_path, 6, (), cases[1:])


# --------------------------------------------------------------------------
# IPv6.

HBH = lambda: IPv6ExtHdrHopByHop()                                   # noqa: E731
DST = lambda: IPv6ExtHdrDestOpt()                                    # noqa: E731
RT = lambda: IPv6ExtHdrRouting(addresses=["2001:db8::99"])           # noqa: E731
FRAG = lambda: IPv6ExtHdrFragment(offset=0, m=0, id=0x1234)          # noqa: E731


def v6(exts, vlans=(), udp=None, **kw):
    pkt = eth(vlans) / IPv6(src=V6[0], dst=V6[1], **kw)
    for h in exts:
        pkt = pkt / h
    return bytes(pkt / (udp or (UDP(sport=50000, dport=4791) / Raw(payload_x()))))


@pytest.mark.parametrize("chain", [
    pytest.param("HBH", id="hbh"), pytest.param("DST", id="dst"), pytest.param("RT", id="routing"),
    pytest.param("FRAG", id="atomic-fragment"),
    pytest.param("HBH DST", id="2"), pytest.param("HBH RT DST", id="3"),
    pytest.param("HBH DST RT FRAG", id="4"), pytest.param("DST DST DST DST", id="4-dst"),
])
@pytest.mark.parametrize("vlans", [(), (3,)])
def test_ipv6_extension_chains_metered(chain, vlans, tmp_path):
    """1..4 extension headers (hop-by-hop, routing, destination options, an
    atomic fragment header: offset 0, M 0) are walked; the request is
    metered under its own key."""
    exts = [globals()[n]() for n in chain.split()]
    data = v6(exts, vlans)
    pkt = Ether(data)
    assert UDP in pkt and pkt[UDP].dport == 4791  # scapy agrees on the chain
    run(tmp_path, 6, vlans, [(data, None, metered(6))])


def test_ipv6_long_extension_header_metered(tmp_path):
    """Extension header lengths are honoured (Hdr Ext Len = 3: 32 bytes)."""
    # Build with a 32-byte destination-options header: PadN filling 30 bytes.
    opt = bytes([17, 3]) + bytes([1, 28]) + b"\0" * 28
    base = v6([])
    ip = bytearray(base[14:54])
    ip[6] = 60
    ip[4:6] = (len(base) - 54 + len(opt)).to_bytes(2, "big")
    data = base[:14] + bytes(ip) + opt + base[54:]
    assert UDP in Ether(data)
    run(tmp_path, 6, (), [(data, None, metered(6))])


@pytest.mark.parametrize("vlans", [(), (3,)])
def test_ipv6_five_extension_headers(vlans, tmp_path):
    """Five to eight extension headers are walked but not metered: the
    request is read and names X (no open epoch here)."""
    data = v6([HBH(), DST(), RT(), FRAG(), DST()], vlans)
    assert UDP in Ether(data)
    run(tmp_path, 6, vlans, [(data, None, Rec(key_x(6), t.SEND_ONLY, PSN_X, irregular="unsupported_encapsulation"))])


def test_ipv6_nine_extension_headers_unattributed(tmp_path):
    """Beyond eight extension headers the parser stops: unattributed, and K's
    epoch closes with captureDiscontinuity at its next request."""
    data = v6([DST() for _ in range(9)])
    assert UDP in Ether(data)
    r = run(tmp_path, 6, (), [(data, None, Unattributed("unsupported_encapsulation"))])
    assert r.reports[0]["rdmaSequenceFlags"] == FINAL | CD | GEN


def test_ipv6_hop_by_hop_2048_bytes(tmp_path):
    """Hdr Ext Len 255: a hop-by-hop header of (255 + 1) * 8 = 2048 bytes
    (RFC 8200 4.3). Its options hide bytes that, read at the header's start,
    would look like UDP to 4791 and a BTH naming QP 0xDEAD00; the real UDP
    header and BTH (X) follow the 2048 bytes. Only X is metered."""
    hidden = (bytes([0x12, 0xB7]) + (8 + 12 + 4).to_bytes(2, "big") + b"\0\0"
              + t.bth(t.SEND_ONLY, 0xDEAD00, 7))             # option 0x12, length 0xB7 = 183
    opt1 = hidden + b"\0" * (2 + 183 - len(hidden))            # type, length and 183 bytes of data
    assert len(opt1) == 185
    rest = 2048 - 2 - len(opt1)                                # after Next Header and Hdr Ext Len
    pads = b""
    while rest > 257:                                          # unknown options to skip (type 0x1E)
        pads += bytes([0x1E, 255]) + b"\0" * 255
        rest -= 257
    assert rest >= 2
    pads += bytes([0x1E, rest - 2]) + b"\0" * (rest - 2)
    hbh = bytes([17, 255]) + opt1 + pads
    assert len(hbh) == 2048
    inner = bytes(UDP(sport=50000, dport=4791, len=8 + len(payload_x()), chksum=0) / Raw(payload_x()))
    data = bytes(eth() / IPv6(src=V6[0], dst=V6[1], nh=0, plen=len(hbh) + len(inner)) / Raw(hbh + inner))
    pkt = Ether(data)
    assert IPv6ExtHdrHopByHop in pkt and pkt[UDP].dport == 4791   # scapy agrees on where UDP is
    run(tmp_path, 6, (), [(data, None, metered(6))])


def test_ipv6_fragments(tmp_path):
    cases = [
        (v6([IPv6ExtHdrFragment(offset=0, m=1, id=7)]), None,
         Rec(key_x(6), t.SEND_ONLY, PSN_X, irregular="ip_fragments")),
        (v6([IPv6ExtHdrFragment(offset=1, m=0, id=7)]), None, "ip_fragments"),
        (v6([HBH(), IPv6ExtHdrFragment(offset=100, m=1, id=7)]), None, "ip_fragments"),
    ]
    run(tmp_path, 6, (), cases)


def test_ipv6_header_checks(tmp_path):
    good = v6([])
    bad_version = bytearray(good)
    bad_version[14] = 0x40 | (bad_version[14] & 0x0F)
    cases = [
        (bytes(bad_version), None, "malformed_ip"),
        (v6([], plen=1400), None, "malformed_ip"),                     # payload length > frame
        (good[:14 + 39], None, "malformed_ip"),                         # 39 of 40 bytes
        # Extension header cut by the capture, and one longer than the payload length.
        (v6([HBH()])[:14 + 40 + 4], len(v6([HBH()])), "malformed_ip"),
        (v6([RT()], plen=8 + 8), None, "malformed_ip"),
        # Consistent payload length that ends inside UDP.
        (v6([], plen=4)[:14 + 44], None, "malformed_udp"),
    ]
    run(tmp_path, 6, (), cases)


def test_ipv6_non_udp_next_headers(tmp_path):
    """Upper-layer protocols other than UDP (directly or after extension
    headers) are not RoCEv2."""
    cases = [
        (v6([], udp=TCP(sport=4791, dport=4791)), None, "not_rocev2"),
        (v6([HBH()], udp=TCP(sport=1, dport=4791)), None, "not_rocev2"),
        (v6([], nh=59, udp=Raw(b"\0" * 40)), None, "not_rocev2"),       # No Next Header
        (v6([IPv6ExtHdrDestOpt(nh=59)], udp=Raw(b"\0" * 40)), None, "not_rocev2"),
    ]
    run(tmp_path, 6, (), cases)


@pytest.mark.parametrize("nh", [51, 135, 139, 140, 253, 254])
def test_ipv6_unwalked_extension_header(nh, tmp_path):
    """IPv6 extension headers the parser does not walk (IANA "IPv6 Extension
    Header Types": AH 51, Mobility 135, HIP 139, Shim6 140, experimental 253
    and 254) hide what follows: the frame is an unsupported encapsulation
    (as rocemeter/meter.h documents for RM_STAT_UNSUP_ENCAP: "unknown ext header"),
    not silently "not RoCEv2" -- a RoCEv2 request might be inside."""
    inner = bytes(UDP(sport=50000, dport=4791, chksum=0) / Raw(payload_x()))
    if nh == 51:
        ext = bytes([17, 4, 0, 0]) + b"\0\0\0\1" + b"\0\0\0\1" + b"\0" * 12   # (4 + 2) * 4 = 24 bytes
    else:
        ext = bytes([17, 0]) + b"\0" * 6
    data = bytes(eth() / IPv6(src=V6[0], dst=V6[1], nh=nh, plen=len(ext) + len(inner)) / Raw(ext + inner))
    run(tmp_path, 6, (), [(data, None, Unattributed("unsupported_encapsulation"))])


# --------------------------------------------------------------------------
# UDP.

@pytest.mark.parametrize("family,vlans", [(4, ()), (6, ()), (6, (2,))])
def test_udp_checks(family, vlans, tmp_path):
    p = payload_x()
    ip = lambda: ip_for(family)  # noqa: E731
    cases = [
        (bytes(eth(vlans) / ip() / UDP(sport=50000, dport=4791, len=19) / Raw(p)), None, "malformed_udp"),
        (bytes(eth(vlans) / ip() / UDP(sport=50000, dport=4791, len=8) / Raw(p)), None, "malformed_udp"),
        (bytes(eth(vlans) / ip() / UDP(sport=50000, dport=4791, len=0) / Raw(p)), None, "malformed_udp"),
        # Longer than the IP payload, the BTH inside it: a malformed request of X.
        (bytes(eth(vlans) / ip() / UDP(sport=50000, dport=4791, len=8 + len(p) + 1) / Raw(p)), None,
         Rec(key_x(family), t.SEND_ONLY, PSN_X, irregular="malformed_udp")),
        # Exactly 8 + 12 with a complete BTH in the frame: the BTH parses, but a
        # SEND Only needs its ICRC: a malformed request of a provisioned connection.
        (bytes(eth(vlans) / ip() / UDP(sport=50000, dport=4791) / Raw(p[:12])), None,
         Rec(key_x(family), t.SEND_ONLY, PSN_X, malformed=True)),
    ]
    run(tmp_path, family, vlans, cases)


@pytest.mark.parametrize("family", [4, 6])
def test_udp_ports(family, tmp_path):
    """Only the destination port selects RoCEv2; a source port of 4791 with
    another destination port is not RoCEv2."""
    p = payload_x()
    cases = [
        (bytes(eth() / ip_for(family) / UDP(sport=4791, dport=4792) / Raw(p)), None, "not_rocev2"),
        (bytes(eth() / ip_for(family) / UDP(sport=4791, dport=53) / Raw(p)), None, "not_rocev2"),
        (bytes(eth() / ip_for(family) / TCP(sport=50000, dport=4791) / Raw(p)), None, "not_rocev2"),
        (bytes(eth() / ip_for(family) / UDP(sport=4791, dport=4791) / Raw(p)), None, metered(family)),
    ]
    run(tmp_path, family, (), cases)


# --------------------------------------------------------------------------
# BTH and extended headers of requests.

@pytest.mark.parametrize("family,vlans", [(4, ()), (6, (8,))])
@pytest.mark.parametrize("what", ["tver1", "tver15", "write-first-short", "write-only-short",
                                  "write-only-imm-no-icrc", "send-imm-short", "pad-short",
                                  "read-short", "cmp-swap-short", "fetch-add-short", "send-last-inv-short",
                                  "send-only-inv-short", "read-no-icrc"])
def test_malformed_request_violates(what, family, vlans, tmp_path):
    """A malformed request of a provisioned connection (BTH TVer != 0, or the
    extended headers + pad + ICRC the opcode requires do not fit) is counted
    as malformed_bth and is a profile violation ([SEQOBS]): it closes the
    open epoch (profileViolation + finalEpoch), is not counted, and later
    requests of the connection count nothing. The extended headers are seed
    001's "Operation -> Extended Header" for every RC request, not only SEND
    and WRITE: READ Request a RETH (16), Compare & Swap and Fetch & Add an
    AtomicETH (28), SEND with Invalidate an IETH (4)."""
    s, d = V4 if family == 4 else V6
    op, kw = {
        "tver1": (t.SEND_ONLY, dict(tver=1)),
        "tver15": (t.WRITE_ONLY, dict(tver=15)),
        "write-first-short": (t.WRITE_FIRST, dict(ext=10, data=b"")),          # RETH needs 16
        "write-only-short": (t.WRITE_ONLY, dict(ext=15, data=b"")),
        "write-only-imm-no-icrc": (t.WRITE_ONLY_IMM, dict(data=b"")),          # cut 4 below
        "send-imm-short": (t.SEND_ONLY_IMM, dict(ext=3, data=b"")),
        "pad-short": (t.SEND_ONLY, dict(padcnt=0, data=b"")),                  # PadCnt set below
        "read-short": (t.READ_REQUEST, dict(ext=12, data=b"")),                # RETH needs 16
        "read-no-icrc": (t.READ_REQUEST, dict(data=b"")),                      # cut 4 below
        "cmp-swap-short": (t.CMP_SWAP, dict(ext=20, data=b"")),                # AtomicETH needs 28
        "fetch-add-short": (t.FETCH_ADD, dict(ext=27, data=b"")),
        "send-last-inv-short": (t.SEND_LAST_INV, dict(ext=2, data=b"")),       # IETH needs 4
        "send-only-inv-short": (t.SEND_ONLY_INV, dict(ext=0, data=b"")),
    }[what]
    p = bytearray(t.roce_payload(op, QP_X, PSN_X, **kw))
    if what in ("write-only-imm-no-icrc", "read-no-icrc"):
        p = p[:-4]
    if what == "pad-short":
        p[1] |= 3 << 4  # PadCnt 3 but only the ICRC follows the BTH
    kx = key_x(family)
    bad = bytes(eth(vlans) / ip_for(family) / UDP(sport=50000, dport=4791) / Raw(bytes(p)))
    cases = [(t.roce_frame(s, d, QP_X, PSN_X - 1, vlans=vlans), None, Rec(kx, t.SEND_ONLY, PSN_X - 1)),
             (bad, None, Rec(kx, op, PSN_X, malformed=True)),
             (t.roce_frame(s, d, QP_X, PSN_X + 1, vlans=vlans), None, Rec(kx, t.SEND_ONLY, PSN_X + 1))]
    r = run(tmp_path, family, vlans, cases)
    x = [rep for rep in r.reports if t.report_key(rep) == kx]
    assert len(x) == 1
    assert x[0]["requestPacketTotalCount"] == 1
    assert x[0]["rdmaSequenceFlags"] == FINAL | PROFILE_VIOLATION | GEN
    assert r.stats["malformed_bth"] == 1 and r.stats["profile_violations"] == 1
    assert r.stats["disabled_requests"] == 1


@pytest.mark.parametrize("family", [4, 6])
def test_well_formed_request_sizes(family, tmp_path):
    """The smallest well-formed requests are metered: SEND Only with no data,
    WRITE First with its RETH, WRITE Only with Immediate with RETH + ImmDt,
    PadCnt 3 with 3 pad bytes."""
    s, d = V4 if family == 4 else V6
    kx = key_x(family)
    cases = []
    for i, (op, kw) in enumerate([(t.SEND_ONLY, dict(data=b"")), (t.WRITE_FIRST, dict(data=b"")),
                                  (t.WRITE_ONLY_IMM, dict(data=b"")), (t.SEND_LAST_IMM, dict(data=b"")),
                                  (t.SEND_ONLY, dict(data=b"a", padcnt=3))]):
        p = t.roce_payload(op, QP_X, PSN_X + i, **kw)
        cases.append((bytes(eth() / ip_for(family) / UDP(sport=50000, dport=4791) / Raw(p)), None,
                      Rec(kx, op, PSN_X + i)))
    r = run(tmp_path, family, (), cases)
    assert r.stats["malformed_bth"] == 0
    assert [x["requestPacketTotalCount"] for x in r.reports if t.report_key(x) == kx] == [5]


def test_malformed_unprovisioned_is_not_a_violation(tmp_path):
    """A malformed request of a connection that is not provisioned is counted
    (malformed_bth, not_provisioned) and creates nothing."""
    conf = tmp_path / "k.conf"
    s, d = V4
    conf.write_text("[provision]\nconnection = %s %s %d any\n" % (s, d, QP_K))
    bad = bytes(eth() / ip_for(4) / UDP(sport=50000, dport=4791) / Raw(payload_x(tver=2)))
    r = run(tmp_path, 4, (), [(bad, None, Rec(key_x(4), t.SEND_ONLY, PSN_X, malformed=True)),
                              (full(4), None, metered(4))],
            args=("--config", str(conf)), provisioned=lambda k: k[3] == QP_K)
    assert r.stats["malformed_bth"] == 1 and r.stats["not_provisioned"] == 2
    assert r.stats["profile_violations"] == 0


def test_response_and_cnp_sizes_not_checked(tmp_path):
    """Responses and CNPs never touch a context, whatever their size or
    TVer."""
    s, d = V4
    cases = [
        (bytes(eth() / ip_for(4) / UDP(sport=1, dport=4791) / Raw(t.bth(t.ACK, QP_K, 77, tver=3))), None,
         Rec(t.make_key(s, d, QP_K), t.ACK, 77)),
        (bytes(eth() / ip_for(4) / UDP(sport=1, dport=4791) / Raw(t.bth(t.CNP, QP_K, 0))), None,
         Rec(t.make_key(s, d, QP_K), t.CNP, 0)),
    ]
    r = run(tmp_path, 4, (), cases)
    assert r.stats["responses"] == 1 and r.stats["cnp"] == 1 and r.stats["malformed_bth"] == 0


@pytest.mark.parametrize("family,vlans", [(4, ()), (6, (5, 6))])
def test_large_frames(family, vlans, tmp_path):
    """RoCE MTU 4096 and 9000-byte jumbo frames (multi-buffer XDP under
    BPF_PROG_TEST_RUN) are parsed and metered like small ones."""
    s, d = V4 if family == 4 else V6
    kx = key_x(family)
    cases = []
    for i, n in enumerate([4096, 8192, 8900]):
        data = t.roce_frame(s, d, QP_X, PSN_X + i, opcode=t.WRITE_ONLY, vlans=vlans, data=b"\xab" * n)
        cases.append((data, None, Rec(kx, t.WRITE_ONLY, PSN_X + i)))
    r = run(tmp_path, family, vlans, cases)
    assert [x["requestPacketTotalCount"] for x in r.reports if t.report_key(x) == kx] == [3]


# --------------------------------------------------------------------------
# Requests the meter cannot meter (docs/meter.md): none may vanish.

def k_frame(family, psn, **kw):
    s, d = V4 if family == 4 else V6
    return t.roce_frame(s, d, QP_K, psn, **kw)


def k_key(family):
    s, d = V4 if family == 4 else V6
    return t.make_key(s, d, QP_K)


def ipv4_first_fragment(family):
    u = UDP(sport=50000, dport=4791) / Raw(t.roce_payload(t.SEND_ONLY, QP_K, 11))
    return bytes(eth() / IP(src=V4[0], dst=V4[1], flags="MF", frag=0) / u)


def ipv6_first_fragment(family):
    return bytes(eth() / IPv6(src=V6[0], dst=V6[1]) / IPv6ExtHdrFragment(offset=0, m=1, id=9)
                 / UDP(sport=50000, dport=4791) / Raw(t.roce_payload(t.SEND_ONLY, QP_K, 11)))


def udp_longer_than_ip(family):
    p = t.roce_payload(t.SEND_ONLY, QP_K, 11)
    return bytes(eth() / ip_for(family) / UDP(sport=50000, dport=4791, len=8 + len(p) + 16) / Raw(p))


def three_tags(family):
    return bytes(eth((1, 2, 3)) / ip_for(family) / UDP(sport=50000, dport=4791)
                 / Raw(t.roce_payload(t.SEND_ONLY, QP_K, 11)))


def five_ext(family):
    return bytes(eth() / IPv6(src=V6[0], dst=V6[1]) / HBH() / DST() / RT() / FRAG() / DST()
                 / UDP(sport=50000, dport=4791) / Raw(t.roce_payload(t.SEND_ONLY, QP_K, 11)))


def tpid(value):
    def frame(family):
        tag = value.to_bytes(2, "big") + (5).to_bytes(2, "big")   # TPID, TCI (VLAN 5)
        inner = bytes(ip_for(family) / UDP(sport=50000, dport=4791) / Raw(t.roce_payload(t.SEND_ONLY, QP_K, 11)))
        return bytes(eth())[:12] + tag + (0x0800 if family == 4 else 0x86DD).to_bytes(2, "big") + inner
    return frame


def opcode_of(op):
    def frame(family):
        return k_frame(family, 11, opcode=op)
    return frame


UNMETERED = [
    # (id, family, frame builder, its BTH opcode, cause statistic, closure)
    ("ipv4-first-fragment", 4, ipv4_first_fragment, t.SEND_ONLY, "ip_fragments", CD),
    ("ipv6-first-fragment", 6, ipv6_first_fragment, t.SEND_ONLY, "ip_fragments", CD),
    ("udp-longer-than-ip-ipv4", 4, udp_longer_than_ip, t.SEND_ONLY, "malformed_udp", PROFILE_VIOLATION),
    ("udp-longer-than-ip-ipv6", 6, udp_longer_than_ip, t.SEND_ONLY, "malformed_udp", PROFILE_VIOLATION),
    ("uc-send-only", 4, opcode_of(t.UC_SEND_ONLY), t.UC_SEND_ONLY, None, PROFILE_VIOLATION),
    ("ud-send-only", 6, opcode_of(t.UD_SEND_ONLY), t.UD_SEND_ONLY, None, PROFILE_VIOLATION),
    ("rd-send-only", 4, opcode_of(0x44), 0x44, None, PROFILE_VIOLATION),
    ("xrc-send-only", 4, opcode_of(0xA4), 0xA4, None, PROFILE_VIOLATION),
    ("three-vlan-tags-ipv4", 4, three_tags, t.SEND_ONLY, "unsupported_encapsulation", CD),
    ("three-vlan-tags-ipv6", 6, three_tags, t.SEND_ONLY, "unsupported_encapsulation", CD),
    ("five-ipv6-extension-headers", 6, five_ext, t.SEND_ONLY, "unsupported_encapsulation", CD),
    ("tpid-9100", 4, tpid(0x9100), t.SEND_ONLY, "unsupported_tpid", CD),
    ("tpid-9200", 6, tpid(0x9200), t.SEND_ONLY, "unsupported_tpid", CD),
    ("tpid-9300", 4, tpid(0x9300), t.SEND_ONLY, "unsupported_tpid", CD),
]


@pytest.mark.parametrize("family,build,op,cause,closure", [pytest.param(*c[1:], id=c[0]) for c in UNMETERED])
def test_unmetered_request_closes_its_epoch(family, build, op, cause, closure, tmp_path):
    """K's requests 10, then PSN 11 of K in a form the meter does not meter,
    then 12. Never one epoch that skips 11 (final flags 0x21, read as a
    network gap): what the meter could not observe (a fragment, an
    unsupported encapsulation) closes the epoch with captureDiscontinuity
    and 12 starts a fresh one; a malformed or foreign-transport request
    closes it with profileViolation and disables K ([SEQOBS] "Applicability
    and Provisioning"), so 12 is not counted."""
    data = build(family)
    k = k_key(family)
    x = Rec(k, op, 11, irregular=cause)
    cases = [(k_frame(family, 10), None, Rec(k, t.SEND_ONLY, 10)), (data, None, x),
             (k_frame(family, 12), None, Rec(k, t.SEND_ONLY, 12))]
    r = run(tmp_path, family, (), cases, anchor=False)
    first = r.reports[0]
    assert first["requestPacketTotalCount"] == 1 and first["skippedPsnTotalCount"] == 0
    assert first["rdmaSequenceFlags"] == FINAL | closure | GEN
    if closure == CD:
        assert [x["requestPacketTotalCount"] for x in r.reports] == [1, 1]
        assert r.stats["unobserved_requests"] == 1 and r.stats["profile_violations"] == 0
    else:
        assert len(r.reports) == 1
        assert r.stats["profile_violations"] == 1 and r.stats["disabled_requests"] == 1
    if cause:
        assert r.stats[cause] == 1


def test_foreign_transport_needs_a_known_connection(tmp_path):
    """A UD request is a violation of the RC connection whose key it carries
    only when that connection is known: a context exists, or a provisioning
    line names its QP (here K, before any request of K: K is disabled). With
    a line that provisions any QP, a UD request to a QP without a context is
    only counted (other_transport): QP 1 of connection management is UD."""
    conf = tmp_path / "k.conf"
    s, d = V4
    conf.write_text("[provision]\nconnection = %s %s %d any\nconnection = %s %s any any\n"
                    % (s, d, QP_K, d, s))
    k = k_key(4)
    rev = t.make_key(d, s, 1)
    cases = [(k_frame(4, 9, opcode=t.UD_SEND_ONLY), None, Rec(k, t.UD_SEND_ONLY, 9)),
             (k_frame(4, 10), None, Rec(k, t.SEND_ONLY, 10)),
             (t.roce_frame(d, s, 1, 5, opcode=t.UD_SEND_ONLY), None, Rec(rev, t.UD_SEND_ONLY, 5)),
             (t.roce_frame(d, s, 1, 6), None, Rec(rev, t.SEND_ONLY, 6))]
    r = run(tmp_path, 4, (), cases, args=("--config", str(conf)), anchor=False,
            provisioned=lambda key: key[3] == QP_K or key[1] == ipaddress.ip_address(d),
            names_qp=lambda key: key[3] == QP_K)
    assert r.stats["profile_violations"] == 1 and r.stats["disabled_requests"] == 1
    assert r.stats["other_transport"] == 2
    assert [(x["rdmaDestinationQP"], x["requestPacketTotalCount"]) for x in r.reports] == [(1, 1)]


def opaque_ah(family):
    inner = bytes(UDP(sport=50000, dport=4791, chksum=0) / Raw(payload_x()))
    ext = bytes([17, 4, 0, 0]) + b"\0\0\0\1" + b"\0\0\0\1" + b"\0" * 12   # AH, (4 + 2) * 4 = 24 bytes
    return bytes(eth() / IPv6(src=V6[0], dst=V6[1], nh=51, plen=len(ext) + len(inner)) / Raw(ext + inner))


def fragment_without_bth(family):
    """An IPv4 first fragment carrying only the UDP header (8 bytes): the BTH
    is in the next fragment."""
    return bytes(eth() / IP(src=V4[0], dst=V4[1], flags="MF", proto=17)
                 / Raw(bytes(UDP(sport=50000, dport=4791, len=8 + 12 + 12, chksum=0))))


UNATTRIBUTED = [
    ("ipv6-ah", 6, opaque_ah, "unsupported_encapsulation"),
    ("ipv4-first-fragment-without-bth", 4, fragment_without_bth, "ip_fragments"),
]


@pytest.mark.parametrize("loss", [True, False], ids=["default", "unattributed_is_loss-no"])
@pytest.mark.parametrize("family,build,cause", [pytest.param(*c[1:], id=c[0]) for c in UNATTRIBUTED])
def test_unattributed_frame_is_capture_loss(family, build, cause, loss, tmp_path):
    """A frame that may carry a request but names no connection: counted per
    cause and as unattributed_frames. By default ([meter]
    unattributed_is_loss = yes) it is a capture fault for every open epoch:
    K's next request closes the epoch with captureDiscontinuity and starts a
    fresh one ([SEQOBS] "An unclassifiable capture fault affecting several
    contexts closes all contexts that may be affected"); with no, the epoch
    goes on."""
    args = ("-a",)
    if not loss:
        conf = tmp_path / "off.conf"
        conf.write_text("[meter]\nunattributed_is_loss = no\n")
        args = ("-a", "--config", str(conf))
    r = run(tmp_path, family, (), [(build(family), None, Unattributed(cause))], args=args,
            unattributed_is_loss=loss)
    assert r.stats["unattributed_frames"] == 1
    if loss:
        assert [(x["requestPacketTotalCount"], x["rdmaSequenceFlags"]) for x in r.reports] == \
            [(1, FINAL | CD | GEN), (1, FINAL | GEN)]
    else:
        assert [(x["requestPacketTotalCount"], x["rdmaSequenceFlags"]) for x in r.reports] == [(2, FINAL | GEN)]


def test_unattributed_closes_silent_epochs_at_the_end(tmp_path):
    """An epoch that gets no request after the unattributed frame still
    closes with captureDiscontinuity (here at the end of input)."""
    s, d = V4
    k = k_key(4)
    cases = [(k_frame(4, 10), None, Rec(k, t.SEND_ONLY, 10)),
             (fragment_without_bth(4), None, Unattributed("ip_fragments"))]
    r = run(tmp_path, 4, (), cases, anchor=False)
    assert [x["rdmaSequenceFlags"] for x in r.reports] == [FINAL | CD | GEN]


def vlan_of(rep):
    return (rep.get("vlanId"), rep.get("dot1qCustomerVlanId"))


def test_priority_tag_keeps_the_key(tmp_path):
    """namespace = vlan: a priority tag (802.1Q, VLAN ID 0: only a priority,
    IEEE 802.1Q "priority-tagged frame") names no VLAN. An untagged request,
    a priority-tagged one and one with a priority tag inside VLAN 7 give the
    keys (0, 0), (0, 0) and (7, 0): one epoch of two requests for the
    untagged connection, not two."""
    conf = tmp_path / "vlan.conf"
    conf.write_text("[meter]\nnamespace = vlan\nprovision_all = yes\n")
    s, d = V4
    frames = [t.roce_frame(s, d, QP_K, 10), t.roce_frame(s, d, QP_K, 11, vlans=(0,)),
              t.roce_frame(s, d, QP_K, 12, vlans=(7, 0)), t.roce_frame(s, d, QP_K, 13, vlans=(0, 7))]
    path = str(tmp_path / "prio.pcap")
    t.write_pcap(path, [Frame(f, t.T0 + (i + 1) * MS) for i, f in enumerate(frames)])
    r = t.run_replay(path, tmp_path, "--config", str(conf))
    assert r.rc == 0, r.stderr
    got = sorted((vlan_of(x), x["requestPacketTotalCount"]) for x in r.reports)
    assert got == [((0, 0), 2), ((7, 0), 2)], r.reports
