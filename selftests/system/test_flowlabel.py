# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Flow label ([FLOWLABEL]) against independent references.

Labels are computed here from the fields the test chose (never parsed back
from the program's output): zlib.crc32 for crc32, a few lines of Python for
the literal loop, CRC-32C and CRC-32/MPEG-2. scapy builds the frames;
tests/lib/fl_helper runs them through bpf/flowlabel.bpf.c with
BPF_PROG_TEST_RUN. Also: `rocemeter flowlabel`, ICRC and UDP checksum of
rewritten frames, and an end-to-end run over a veth pair between two network
namespaces created here, decoded with tshark.
"""
import ipaddress
import json
import os
import random
import select
import shutil
import signal
import struct
import subprocess
from pathlib import Path
import tempfile
import time
import zlib

import pytest

from flowlabel_ref import VARIANTS, ref_hash, ref_input  # tests/lib: [FLOWLABEL] written out
import rocetest as rt  # tests/lib: pin_dir()
from procs import sh  # tests/lib

from scapy.all import Ether, Dot1Q, IP, IPv6, UDP, Raw, wrpcap
from scapy.layers.inet6 import (IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                                IPv6ExtHdrHopByHop, IPv6ExtHdrRouting)
from scapy.contrib.roce import BTH

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
HELPER = os.path.join(BUILD, "tests", "lib", "fl_helper")
ROCEMETER = os.path.join(BUILD, "rocemeter")

RC_OPCODES = (0x00, 0x04, 0x05, 0x06, 0x0a, 0x0b, 0x0c, 0x10, 0x11, 0x12, 0x81)
UD_OPCODES = (0x64, 0x65)

MACS = {"src": "02:00:00:00:00:01", "dst": "02:00:00:00:00:02"}
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (BPF)")


# ---- independent references -------------------------------------------------

# docs/flowlabel.md "A computed label of 0": the program writes this instead
# (a zero Flow Label means "no label", RFC 6437), and counts it as zero_hash.
ZERO_SUBSTITUTE = 0x00001


def ref_label(variant, src, dst, dqp, sqp=None, mix=False, seed=0):
    """The 20-bit label of [FLOWLABEL], before the zero substitute."""
    return ref_hash(variant, ref_input(src, dst, dqp, sqp), mix, seed) & 0xFFFFF


def written_label(label):
    """What the program writes for a computed label."""
    return label or ZERO_SUBSTITUTE


def zero_label_dqp(src, dst):
    """A Dst_QP whose CRC-32 (zlib) input gives 20 zero low bits."""
    tail = ref_input(src, dst, 0)[3:]
    return next(q for q in range(1 << 24) if zlib.crc32(q.to_bytes(3, "big") + tail) & 0xFFFFF == 0)


def test_reference_matches_design_vectors():
    """The references here reproduce the table of docs/flowlabel.md (so they can be trusted below)."""
    table = {
        "123456ABCDEF00010002": (0x0136CB3E, 0x8DD783D7, 0xEB0A2BCC, 0xBE61753D),
        "ABCDEF00010002": (0x065193A9, 0x30FE0E95, 0xC1DC2A9A, 0xA7DDD356),
        "00010000100020": (0x00E6A83B, 0x71788F63, 0x0411F220, 0x1F85BAAE),
        "00000100000100100020": (0x025D1D19, 0x3508C2E0, 0xC2EF11B4, 0x06EC6BEF),
    }
    for hexin, expect in table.items():
        for v, e in zip(VARIANTS, expect):
            assert ref_hash(v, bytes.fromhex(hexin)) == e, (hexin, v)


# ---- frames --------------------------------------------------------------

def rand_v6(rng):
    return str(ipaddress.IPv6Address(rng.getrandbits(128)))


def ext_chain(rng, n):
    """n IPv6 extension headers (hop-by-hop only first), in scapy layers."""
    layers = []
    for i in range(n):
        kind = rng.choice(("hbh", "dst", "rt", "frag") if i == 0 else ("dst", "rt", "frag"))
        if kind == "hbh":
            layers.append(IPv6ExtHdrHopByHop())
        elif kind == "dst":
            layers.append(IPv6ExtHdrDestOpt())
        elif kind == "rt":
            layers.append(IPv6ExtHdrRouting(segleft=0, addresses=[]))
        else:
            layers.append(IPv6ExtHdrFragment(offset=0, m=0, id=rng.getrandbits(32)))
    return layers


def rocev2(opcode, dqp, sqp, payload, pkey=0xFFFF, psn=1, icrc=0):
    """UDP/BTH[/DETH]/payload/ICRC; icrc: the 4 ICRC bytes as a big-endian number."""
    deth = b""
    if opcode in UD_OPCODES:
        deth = struct.pack("!I", 0x80010000) + b"\x00" + sqp.to_bytes(3, "big")
    return (UDP(sport=0xC000 | (dqp & 0x3FFF), dport=4791) /
            BTH(opcode=opcode, pkey=pkey, dqpn=dqp, psn=psn, icrc=icrc) / Raw(deth + payload))


def random_case(rng):
    """One frame and the facts needed to predict the program's output."""
    c = {"ipv4": rng.random() < 0.1, "nvlan": rng.choice((0, 0, 0, 1, 2)),
         "opcode": rng.choice(RC_OPCODES + UD_OPCODES), "dqp": rng.getrandbits(24),
         "sqp": rng.getrandbits(24), "label": 0, "tc": rng.getrandbits(8),
         "next": rng.choice((0, 0, 0, 1, 2, 3, 4))}
    if rng.random() < 0.2:
        c["label"] = rng.randrange(1, 1 << 20)
    payload = bytes(rng.getrandbits(8) for _ in range(rng.choice((0, 4, 16, 64))))
    l2 = Ether(**MACS)
    for i in range(c["nvlan"]):
        l2 = l2 / Dot1Q(vlan=10 + i)
    l4 = rocev2(c["opcode"], c["dqp"], c["sqp"], payload)
    if c["ipv4"]:
        pkt = l2 / IP(src="192.0.2.%d" % rng.randrange(1, 255), dst="198.51.100.7") / l4
    else:
        c["src"], c["dst"] = rand_v6(rng), rand_v6(rng)
        l3 = IPv6(src=c["src"], dst=c["dst"], tc=c["tc"], fl=c["label"], hlim=64)
        for e in ext_chain(rng, c["next"]):
            l3 = l3 / e
        pkt = l2 / l3 / l4
    c["frame"] = bytes(pkt)
    c["ip_off"] = 14 + 4 * c["nvlan"]
    return c


def expected_out(c, variant, mix=False, seed=0):
    """(frame after the program, statistics entry it is counted in)."""
    f = c["frame"]
    if c["ipv4"]:
        return f, "ipv4"
    if c["label"]:
        return f, "label_present"
    ud = c["opcode"] in UD_OPCODES
    lab = ref_label(variant, c["src"], c["dst"], c["dqp"], c["sqp"] if ud else None, mix, seed)
    stat = "zero_hash" if lab == 0 else "rewritten_ud" if ud else "rewritten"
    lab = written_label(lab)
    o = c["ip_off"]
    b = bytearray(f)
    b[o + 1] = (b[o + 1] & 0xF0) | (lab >> 16)
    b[o + 2] = (lab >> 8) & 0xFF
    b[o + 3] = lab & 0xFF
    return bytes(b), stat


def run_helper(frames, *opts):
    if not os.path.exists(HELPER):
        pytest.fail("%s missing: run 'make build/tests/lib/fl_helper'" % HELPER)
    p = subprocess.run([HELPER, "run", *opts], input="".join(f.hex() + "\n" for f in frames),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    outs = []
    for ln in lines[:-1]:
        tag, ret, hexout = ln.split()
        assert tag == "RET" and ret == "0", ln  # TC_ACT_OK
        outs.append(bytes.fromhex(hexout))
    assert lines[-1].startswith("STATS ")
    stats = {k: int(v) for k, v in (kv.split("=") for kv in lines[-1].split()[1:])}
    return outs, stats


# ---- through BPF_PROG_TEST_RUN ---------------------------------------------

CONFIGS = [(v, False, 0) for v in VARIANTS] + [("literal", True, 0), ("crc32", False, 0x1234ABCD),
                                               ("mpeg2", True, 0xDEADBEEF), ("crc32c", True, 7)]


@needs_root
@pytest.mark.parametrize("variant,mix,seed", CONFIGS)
def test_random_frames(variant, mix, seed):
    rng = random.Random("flowlabel-%s-%s-%s" % (variant, mix, seed))
    cases = [random_case(rng) for _ in range(400)]
    opts = ["--hash", variant] + (["--mix"] if mix else []) + (["--seed", str(seed)] if seed else [])
    outs, stats = run_helper([c["frame"] for c in cases], *opts)
    assert len(outs) == len(cases)
    want = {}
    for c, out in zip(cases, outs):
        exp, stat = expected_out(c, variant, mix, seed)
        assert out == exp, (c["opcode"], c["nvlan"], c["next"], stat)
        want[stat] = want.get(stat, 0) + 1
    for k, v in stats.items():
        assert v == want.get(k, 0), (k, v, want)
    assert want.get("rewritten", 0) > 100 and want.get("rewritten_ud", 0) > 20


@needs_root
def test_ud_uses_src_qp():
    """Same Dst_QP and addresses: the UD label follows the DETH Src_QP, the RC one does not."""
    src, dst = "2001:db8::a:1", "2001:db8::b:2"
    base = Ether(**MACS) / IPv6(src=src, dst=dst)
    frames = [bytes(base / rocev2(0x64, 0x77, sqp, b"")) for sqp in (1, 2, 0xFFFFFF)]
    frames.append(bytes(base / rocev2(0x04, 0x77, 0, b"")))
    outs, _ = run_helper(frames, "--hash", "crc32")
    labels = [int.from_bytes(o[15:18], "big") & 0xFFFFF for o in outs]
    assert labels[:3] == [ref_label("crc32", src, dst, 0x77, s) for s in (1, 2, 0xFFFFFF)]
    assert labels[3] == ref_label("crc32", src, dst, 0x77)
    assert len(set(labels)) == 4


@needs_root
def test_zero_label_gets_the_substitute():
    """A Dst_QP whose CRC-32 (zlib) has 20 zero low bits: a zero label would
    leave the packet unlabelled (no ECMP entropy for that connection), so
    the program writes the documented substitute 0x00001 instead, counted as
    zero_hash; only the label bytes change."""
    src, dst = "2001:db8::1", "2001:db8::2"
    dqp = zero_label_dqp(src, dst)
    assert ref_label("crc32", src, dst, dqp) == 0
    frame = bytes(Ether(**MACS) / IPv6(src=src, dst=dst) / rocev2(0x04, dqp, 0, b"zz"))
    want = bytes(Ether(**MACS) / IPv6(src=src, dst=dst, fl=ZERO_SUBSTITUTE) / rocev2(0x04, dqp, 0, b"zz"))
    outs, stats = run_helper([frame], "--hash", "crc32")
    assert outs == [want]
    assert stats["zero_hash"] == 1 and stats["rewritten"] == 0


@needs_root
def test_truncated_frames_counted():
    rng = random.Random(7)
    frame = bytes(Ether(**MACS) / IPv6(src=rand_v6(rng), dst=rand_v6(rng)) / rocev2(0x65, 5, 6, b"p" * 8))
    cuts = list(range(54, len(frame)))  # the kernel's test run wants Ethernet + IPv6 header
    outs, stats = run_helper([frame[:n] for n in cuts])
    assert outs == [frame[:n] for n in cuts]
    assert stats["malformed_ip"] == len(cuts)
    assert sum(stats.values()) == len(cuts)


def icrc_v6(frame, ip_off):
    """RoCEv2 ICRC over IPv6 (no extension headers): CRC-32 over 8 bytes of 0xFF, the
    IPv6 header with Traffic Class, Flow Label and Hop Limit set to ones, the UDP
    header with its checksum set to ones, the BTH with byte 4 set to ones, the rest."""
    ip = bytearray(frame[ip_off:ip_off + 40])
    assert ip[6] == 17
    ip[0] |= 0x0F
    ip[1:4] = b"\xff\xff\xff"
    ip[7] = 0xFF
    udp = bytearray(frame[ip_off + 40:ip_off + 48])
    udp[6:8] = b"\xff\xff"
    bth = bytearray(frame[ip_off + 48:ip_off + 60])
    bth[4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + frame[ip_off + 60:-4])


def udp6_checksum_ok(frame, ip_off):
    ip = frame[ip_off:ip_off + 40]
    ulen = struct.unpack("!H", frame[ip_off + 44:ip_off + 46])[0]
    udp = frame[ip_off + 40:ip_off + 40 + ulen]
    data = ip[8:40] + struct.pack("!I3xB", ulen, 17) + udp
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return struct.unpack("!H", udp[6:8])[0] != 0 and s == 0xFFFF


@needs_root
def test_icrc_and_udp_checksum_still_valid():
    rng = random.Random(2)
    frames = []
    for i in range(50):
        op = rng.choice(RC_OPCODES + UD_OPCODES)
        l3 = Ether(**MACS) / IPv6(src=rand_v6(rng), dst=rand_v6(rng), tc=rng.getrandbits(8))
        args = (op, rng.getrandbits(24), rng.getrandbits(24), bytes(range(i)))
        # The ICRC masks the UDP checksum: compute it first, then let scapy checksum the UDP.
        crc = icrc_v6(bytes(l3 / rocev2(*args)), 14)
        f = bytes(l3 / rocev2(*args, icrc=int.from_bytes(struct.pack("<I", crc), "big")))
        assert f[-4:] == struct.pack("<I", crc)
        frames.append(f)
    outs, stats = run_helper(frames, "--hash", "crc32c")
    changed = 0
    for f, o in zip(frames, outs):
        assert udp6_checksum_ok(f, 14)
        assert udp6_checksum_ok(o, 14)
        assert o[-4:] == f[-4:] and icrc_v6(o, 14) == struct.unpack("<I", o[-4:])[0]
        if o != f:
            changed += 1
            # Control: the same CRC without the Flow Label mask does see the rewrite.
            assert zlib.crc32(o[14:-4]) != zlib.crc32(f[14:-4])
    assert changed == stats["rewritten"] + stats["rewritten_ud"] and changed >= 45


# ---- the `flowlabel` command --------------------------------------------------

def rocemeter(*args):
    if not os.path.exists(ROCEMETER):
        pytest.fail("%s missing: run make" % ROCEMETER)
    return subprocess.run([ROCEMETER, "flowlabel", *args], capture_output=True, text=True, timeout=30)


def test_command_matches_reference():
    rng = random.Random(3)
    for i in range(40):
        variant = VARIANTS[i % 4]
        src, dst, dqp = rand_v6(rng), rand_v6(rng), rng.getrandbits(24)
        sqp = rng.getrandbits(24) if i % 3 == 0 else None
        mix, seed = i % 5 == 0, (rng.getrandbits(32) if i % 7 == 0 else 0)
        args = ["--src", src, "--dst", dst, "--dqp", hex(dqp), "--hash", variant]
        args += ["--sqp", str(sqp)] if sqp is not None else []
        args += ["--mix"] if mix else []
        args += ["--seed", str(seed)] if seed else []
        p = rocemeter(*args)
        assert p.returncode == 0, p.stderr
        h = ref_hash(variant, ref_input(src, dst, dqp, sqp), mix, seed)
        lab = written_label(h & 0xFFFFF)
        assert "hash:       0x%08x" % h in p.stdout
        assert "flow label: 0x%05x (%d)" % (lab, lab) in p.stdout


def test_command_zero_label_substitute():
    """`rocemeter flowlabel` prints the label the program writes: the
    substitute for a computed 0, and says so."""
    src, dst = "2001:db8::1", "2001:db8::2"
    dqp = zero_label_dqp(src, dst)
    p = rocemeter("--src", src, "--dst", dst, "--dqp", hex(dqp), "--hash", "crc32")
    assert p.returncode == 0, p.stderr
    assert "flow label: 0x00001 (1)" in p.stdout
    assert "computed label 0" in p.stdout


def test_command_design_vector_default_literal():
    p = rocemeter("--src", "2001:db8::1", "--dst", "2001:db8::2", "--sqp", "0x123456", "--dqp", "0xABCDEF")
    assert p.returncode == 0
    assert "flow label: 0x6cb3e (445246)" in p.stdout  # docs/flowlabel.md: literal 0136CB3E / 6CB3E


@pytest.mark.parametrize("args,msg", [
    (["--src", "192.0.2.1", "--dst", "::2", "--dqp", "1"], "IPv4"),
    (["--src", "::1", "--dst", "nonsense", "--dqp", "1"], "not an IPv6 address"),
    (["--src", "::1", "--dst", "::2", "--dqp", "0x1000000"], "24 bits"),
    (["--src", "::1", "--dst", "::2", "--dqp", "-1"], "24 bits"),
    (["--src", "::1", "--dst", "::2", "--dqp", "1", "--hash", "md5"], "literal, crc32, crc32c or mpeg2"),
    (["--src", "::1", "--dst", "::2", "--dqp", "1", "--seed", "0x100000000"], "32-bit"),
    (["--src", "::1", "--dst", "::2"], "required"),
    (["--src", "::1", "--dst", "::2", "--dqp", "1", "--bogus"], "unknown option"),
    (["--src"], "needs a value"),
])
def test_command_errors(args, msg):
    p = rocemeter(*args)
    assert p.returncode == 2
    assert msg in p.stderr
    assert p.stdout == ""


def test_command_numbers_decimal_or_hex():
    """QPNs and seeds are decimal or 0x hex, as the usage says: a leading zero is not octal."""
    src, dst = "2001:db8::1", "2001:db8::2"
    for arg, dqp in (("010", 10), ("08", 8), ("0x10", 16), ("0X1f", 31), ("16777215", 0xFFFFFF)):
        p = rocemeter("--src", src, "--dst", dst, "--dqp", arg, "--hash", "crc32")
        assert p.returncode == 0, (arg, p.stderr)
        lab = zlib.crc32(ref_input(src, dst, dqp)) & 0xFFFFF
        assert "flow label: 0x%05x (%d)" % (lab, lab) in p.stdout, arg
    p = rocemeter("--src", src, "--dst", dst, "--dqp", "1", "--hash", "crc32", "--seed", "0100")
    assert p.returncode == 0, p.stderr
    h = zlib.crc32(ref_input(src, dst, 1), 100) & 0xFFFFFFFF
    assert "hash:       0x%08x" % h in p.stdout
    for bad in ("0x", "1e3", "0b1", "0x-1"):
        p = rocemeter("--src", src, "--dst", dst, "--dqp", bad)
        assert p.returncode == 2 and "24 bits" in p.stderr, bad


def test_command_help():
    p = rocemeter("--help")
    assert p.returncode == 0 and "--dqp QPN" in p.stdout and "mpeg2" in p.stdout


# ---- end to end: two namespaces, a veth pair -----------------------------------

@pytest.fixture
def veth_pair():
    tag = "%x" % (os.getpid() & 0xFFFFF)
    ns_a, ns_b = "rmfl-a-" + tag, "rmfl-b-" + tag
    if_a, if_b = "rmfla" + tag, "rmflb" + tag
    pins = None
    try:
        sh("ip", "netns", "add", ns_a)
        sh("ip", "netns", "add", ns_b)
        sh("ip", "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b, "netns", ns_b)
        for ns, dev in ((ns_a, if_a), (ns_b, if_b)):
            sh("ip", "-n", ns, "link", "set", dev, "up")
        pins = rt.pin_dir(if_a, ns_a)
        yield ns_a, if_a, ns_b, if_b
    finally:
        if os.path.exists(HELPER):
            sh(HELPER, "detach", ns_a, if_a, check=False)
        sh("ip", "netns", "del", ns_a, check=False)
        sh("ip", "netns", "del", ns_b, check=False)
        if pins:
            shutil.rmtree(pins, ignore_errors=True)
            try:
                os.rmdir(os.path.dirname(pins))  # the namespace's directory, empty now
            except OSError:
                pass


def start_capture(ns, dev, path, count):
    p = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-i", dev, "-U", "-n", "-c", str(count),
                          "-w", path, "udp", "port", "4791"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        r, _, _ = select.select([p.stderr], [], [], 0.5)
        if r and "listening on" in p.stderr.readline():
            return p
        if p.poll() is not None:
            break
    p.kill()
    raise AssertionError("tcpdump did not start")


@needs_root
def test_end_to_end_veth(veth_pair, tmp_path):
    ns_a, if_a, ns_b, if_b = veth_pair
    pin = os.path.join(rt.pin_dir(if_a, ns_a), "fl_stats")
    if not os.path.exists(HELPER):
        pytest.fail("%s missing" % HELPER)
    sh(HELPER, "attach", ns_a, if_a, "egress", "--hash", "crc32")
    assert os.path.exists(pin)
    again = sh(HELPER, "attach", ns_a, if_a, "egress", check=False)
    assert again.returncode == 1 and "already attached" in again.stderr
    sh(HELPER, "attach", ns_a, if_a, "ingress", "--hash", "mpeg2")  # shares the pinned map

    rng = random.Random(11)
    cases = []
    for i in range(60):
        src, dst = rand_v6(rng), rand_v6(rng)
        op = rng.choice(RC_OPCODES + UD_OPCODES)
        dqp, sqp = rng.getrandbits(24), rng.getrandbits(24)
        preset = rng.randrange(1, 1 << 20) if i % 6 == 0 else 0
        pkt = Ether(**MACS) / \
            IPv6(src=src, dst=dst, fl=preset, tc=0x28) / rocev2(op, dqp, sqp, b"e2e" * 4, psn=i)
        cases.append((src, dst, op, dqp, sqp, preset, pkt))
    pcap_in, pcap_out = str(tmp_path / "in.pcap"), str(tmp_path / "out.pcap")
    wrpcap(pcap_in, [c[-1] for c in cases])

    cap = start_capture(ns_b, if_b, pcap_out, len(cases))
    try:
        sh("ip", "netns", "exec", ns_a, "tcpreplay", "-q", "-i", if_a, pcap_in)
        cap.wait(timeout=20)
    finally:
        if cap.poll() is None:
            cap.send_signal(signal.SIGINT)
            cap.wait(timeout=5)
    out = sh("tshark", "-r", pcap_out, "-T", "fields", "-E", "separator=,", "-e", "ipv6.src", "-e", "ipv6.dst",
             "-e", "ipv6.flow", "-e", "ipv6.tclass", "-e", "infiniband.bth.opcode",
             "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn").stdout.split()
    assert len(out) == len(cases)
    rewritten = 0
    for line in out:
        src, dst, flow, tclass, opcode, destqp, psn = line.split(",")
        c = cases[int(psn, 0)]
        assert (ipaddress.IPv6Address(src), ipaddress.IPv6Address(dst)) == \
            (ipaddress.IPv6Address(c[0]), ipaddress.IPv6Address(c[1]))
        assert int(opcode, 0) == c[2] and int(destqp, 0) == c[3] and int(tclass, 0) == 0x28
        if c[5]:
            assert int(flow, 0) == c[5]
        else:
            ud = c[2] in UD_OPCODES
            assert int(flow, 0) == ref_label("crc32", c[0], c[1], c[3], c[4] if ud else None)
            rewritten += 1

    st = sh(HELPER, "status", ns_a, if_a, "--json")
    s = json.loads(st.stdout)
    assert s["attached"]["egress"]["hash"] == "crc32" and s["attached"]["ingress"]["hash"] == "mpeg2"
    assert s["stats"]["rewritten"] + s["stats"]["rewritten_ud"] == rewritten
    assert s["stats"]["label_present"] == len(cases) - rewritten

    text = sh(HELPER, "status", ns_a, if_a).stdout
    assert "egress   program id" in text and "hash crc32, mix off, seed none" in text
    assert "hash mpeg2" in text and "rewritten" in text

    # Another module's pin in the same directory survives the detach, and so does the directory.
    other = os.path.join(os.path.dirname(pin), "other")
    sh("bpftool", "map", "create", other, "type", "array", "key", "4", "value", "4", "entries", "1",
       "name", "rmfl_other")
    sh(HELPER, "detach", ns_a, if_a)
    assert not os.path.exists(pin) and os.path.exists(other)
    os.unlink(other)
    sh(HELPER, "attach", ns_a, if_a, "egress")
    sh(HELPER, "detach", ns_a, if_a)
    assert not os.path.exists(pin) and not os.path.exists(os.path.dirname(pin))
    tc = sh("ip", "netns", "exec", ns_a, "tc", "filter", "show", "dev", if_a, "egress").stdout
    assert "rocemeter_fl" not in tc
    assert sh(HELPER, "status", ns_a, if_a, check=False).returncode == 1
    assert sh(HELPER, "detach", ns_a, if_a, check=False).returncode == 1


@needs_root
def test_end_to_end_jumbo_nonlinear(veth_pair, tmp_path):
    """Jumbo RoCEv2 frames (4 KiB MTU payloads) sent with a packet socket reach tc as
    non-linear skbs (only the Ethernet header in the linear part): still relabeled."""
    ns_a, if_a, ns_b, if_b = veth_pair
    for ns, dev in ((ns_a, if_a), (ns_b, if_b)):
        sh("ip", "-n", ns, "link", "set", dev, "mtu", "9000")
    sh(HELPER, "attach", ns_a, if_a, "egress", "--hash", "crc32")
    rng = random.Random(13)
    cases = []
    for i in range(8):
        src, dst = rand_v6(rng), rand_v6(rng)
        op = UD_OPCODES[i % 2] if i % 4 == 0 else 0x0a
        dqp, sqp = rng.getrandbits(24), rng.getrandbits(24)
        pkt = Ether(**MACS) / IPv6(src=src, dst=dst) / rocev2(op, dqp, sqp, bytes(4096 + 64 * i), psn=i)
        cases.append((src, dst, op, dqp, sqp, pkt))
    pcap_in, pcap_out = str(tmp_path / "in.pcap"), str(tmp_path / "out.pcap")
    wrpcap(pcap_in, [c[-1] for c in cases])
    cap = start_capture(ns_b, if_b, pcap_out, len(cases))
    try:
        sh("ip", "netns", "exec", ns_a, "tcpreplay", "-q", "-i", if_a, pcap_in)
        cap.wait(timeout=20)
    finally:
        if cap.poll() is None:
            cap.send_signal(signal.SIGINT)
            cap.wait(timeout=5)
    out = sh("tshark", "-r", pcap_out, "-T", "fields", "-E", "separator=,", "-e", "ipv6.flow",
             "-e", "infiniband.bth.psn", "-e", "frame.len").stdout.split()
    assert len(out) == len(cases)
    for line in out:
        flow, psn, flen = line.split(",")
        src, dst, op, dqp, sqp, pkt = cases[int(psn, 0)]
        assert int(flen) == len(pkt)
        ud = op in UD_OPCODES
        assert int(flow, 0) == ref_label("crc32", src, dst, dqp, sqp if ud else None), line
    s = json.loads(sh(HELPER, "status", ns_a, if_a, "--json").stdout)
    assert s["stats"]["rewritten"] + s["stats"]["rewritten_ud"] == len(cases), s["stats"]


@needs_root
@pytest.mark.parametrize("prefix", ["rmflo", 'rm"f\\'])
def test_pins_follow_bpffs_override(tmp_path, prefix):
    """ROCEMETER_BPFFS moves the flow-label program's pin with the meter's
    (user/common/paths.h): `attach --flowlabel-only` mounts a bpffs on the
    directory it names, as the meter does, `status` and `detach` find the pin
    there, and nothing is pinned under /sys/fs/bpf. Linux lets an interface
    name hold '"' and '\\': status --json still prints valid JSON."""
    tag = "%x" % (os.getpid() & 0xFFFFF)
    dev, peer = prefix + tag, "rmflp" + tag
    root = tmp_path / "bpffs"
    root.mkdir()
    env = dict(os.environ, ROCEMETER_BPFFS=str(root), ROCEMETER_RUNDIR=str(tmp_path / "run"))

    def rm(*args):
        return subprocess.run([ROCEMETER, *args], env=env, capture_output=True, text=True, timeout=60)

    try:
        sh("ip", "link", "add", dev, "type", "veth", "peer", "name", peer)
        sh("ip", "link", "set", dev, "up")
        p = rm("attach", dev, "--flowlabel", "egress", "--hash", "crc32", "--flowlabel-only")
        assert p.returncode == 0, p.stderr
        assert sh("stat", "-f", "-c", "%T", str(root)).stdout.strip() == "bpf_fs"
        pin = Path(rt.pin_dir(dev, bpffs=str(root))) / "fl_stats"
        assert pin.exists()
        assert not os.path.exists(rt.pin_dir(dev, bpffs="/sys/fs/bpf"))

        st = rm("status", dev, "--json")
        assert st.returncode == 0, st.stderr
        s = json.loads(st.stdout)
        assert s[0]["interface"] == dev and s[0]["meter"] is None
        assert s[0]["flowlabel"]["attached"]["egress"]["hash"] == "crc32"

        d = rm("detach", dev)
        assert d.returncode == 0 and "removed the flow-label program from %s" % dev in d.stdout, d.stderr
        assert not pin.exists() and not pin.parent.exists()
        tc = sh("tc", "filter", "show", "dev", dev, "egress").stdout
        assert "rocemeter_fl" not in tc
    finally:
        default_pins = rt.pin_dir(dev, bpffs="/sys/fs/bpf") if os.path.exists("/sys/class/net/" + dev) else None
        sh("ip", "link", "del", dev, check=False)
        if os.path.ismount(root):
            sh("umount", str(root), check=False)
        if default_pins:
            shutil.rmtree(default_pins, ignore_errors=True)
