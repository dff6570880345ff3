# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter connections FILE...`: the connection census (bpf/census.bpf.c
under BPF_PROG_TEST_RUN) over the real captures (shared/data/pcaps beside
the checkout and the bundled data/pcaps) and over a synthetic capture built
with scapy.

Expected values: per connection key, the packets by opcode class, the
opcodes and the first and last times come from tshark's independent decode
of each capture, classed by the ranges of [IBPKT]'s BTH opcode table written
out here; for the synthetic capture from how it was built. Eligibility is
[SEQOBS] "Applicability and Provisioning" (only SEND and RDMA WRITE
requests under the key). The printed [provision] lines are then loaded by
`rocemeter replay --config`: every eligible connection is metered (all its
SEND/WRITE requests accounted), no request of it is counted as
not_provisioned, nothing is a profile violation. Needs root (BPF).
"""
import glob
import os
import subprocess
from collections import Counter, defaultdict

import pytest

import rocetest as t
from rocetest import Frame

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="BPF_PROG_TEST_RUN needs root")

BUNDLED = sorted(glob.glob(os.path.join(t.ROOT, "data", "pcaps", "*.pcap")))
SHARED = sorted(glob.glob(os.path.join(t.PCAPS, "*.pcap")))
CAPTURES = SHARED + BUNDLED
MS = 10**6


def ids(paths):
    return [("bundled/" if p in BUNDLED else "shared/") + os.path.basename(p) for p in paths]


def klass(op):
    """[IBPKT] "BTH Opcode master table", by range."""
    if op <= 0x0B:
        return "send_write"
    if op == 0x0C:
        return "read"
    if 0x0D <= op <= 0x12:
        return "responses"
    if op in (0x13, 0x14):
        return "atomic"
    if 0x15 <= op <= 0x1F:
        return "other_rc"
    if 0x20 <= op <= 0x3F:
        return "uc"
    if 0x60 <= op <= 0x7F:
        return "ud"
    if op == 0x81:
        return "cnp"
    return "other"


CLASSES = ["send_write", "read", "atomic", "other_rc", "responses", "uc", "ud", "cnp", "other"]


def exclusions(packets, malformed=0):
    """Why a key is not eligible, in the order of the JSON's "excluded"."""
    why = [n for n in ("read", "atomic", "other_rc", "uc", "ud", "other") if packets[n]]
    if malformed:
        why.append("malformed")
    if not why and not packets["send_write"]:
        why = ["no_requests"]
    return why


def is_rc_request(op):
    return op <= 0x1F and not 0x0D <= op <= 0x12


def connections(path, *args):
    p = subprocess.run([t.ROCEMETER, "connections", *args, *([path] if isinstance(path, str) else path)],
                       capture_output=True, text=True, timeout=300)
    return p


def census_json(path):
    import json
    p = connections(path, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def entry_key(e):
    """(family, src, dst, QP, P_Key) of a JSON connection, as rocetest.make_key."""
    return t.report_key(e)


def expected_from_tshark(frames):
    """{key: {"packets": Counter, "opcodes": set, "first": ns, "last": ns}} of tshark's frames."""
    out = {}
    for f in frames:
        rec = f["rec"]
        if not rec:
            continue
        e = out.setdefault(rec.key, {"packets": Counter(), "opcodes": set(), "first": f["ts_ns"],
                                     "last": f["ts_ns"]})
        e["packets"][klass(rec.opcode)] += 1
        e["opcodes"].add(rec.opcode)
        e["first"] = min(e["first"], f["ts_ns"])
        e["last"] = max(e["last"], f["ts_ns"])
    return out


def assert_entries(got, want):
    """JSON connections (no VLANs here) against the expected table."""
    by_key = {}
    for e in got:
        assert "vlanId" not in e
        assert entry_key(e) not in by_key, "one entry per key"
        by_key[entry_key(e)] = e
    assert set(by_key) == set(want)
    for k, w in want.items():
        e = by_key[k]
        assert e["packets"] == {c: w["packets"][c] for c in CLASSES}, k
        assert e["opcodes"] == sorted(w["opcodes"]), k
        assert e["malformed_requests"] == w.get("malformed", 0), k
        assert e["first_seen_ms"] == w["first"] // MS and e["last_seen_ms"] == w["last"] // MS, k
        why = exclusions(w["packets"], w.get("malformed", 0))
        assert e["excluded"] == why and e["eligible"] == (not why), k


_tshark = {}


def decoded(path):
    if path not in _tshark:
        _tshark[path] = t.tshark_frames(path)
    return _tshark[path]


def test_captures_present():
    assert len(BUNDLED) >= 10
    if not SHARED:
        pytest.skip("the project's shared captures are not beside the checkout (../shared/data/pcaps)")


@pytest.mark.parametrize("path", CAPTURES, ids=ids(CAPTURES))
def test_capture_against_tshark(path):
    """Every key tshark decodes, with its packets by class, opcodes and times;
    the frame counts; the [provision] lines = the eligible keys."""
    frames = decoded(path)
    doc = census_json(path)
    want = expected_from_tshark(frames)
    recs = sum(1 for f in frames if f["rec"])
    assert doc["frames_read"] == len(frames) == doc["frames"]
    assert doc["bth_frames"] == recs and doc["no_bth_frames"] == len(frames) - recs
    assert doc["not_counted_table_full"] == 0
    assert_entries(doc["connections"], want)
    eligible = sorted(k for k, w in want.items() if not exclusions(w["packets"]))
    assert doc["provision"] == ["connection = %s %s 0x%06x 0x%04x" % (k[1], k[2], k[3], k[4]) for k in eligible]


def provision_section(stdout):
    """The [provision] section at the end of the default text output."""
    i = stdout.index("\n[provision]\n")
    return stdout[i + 1:]


def assert_metered_as_provisioned(path, conf_text, want, tmp_path, malformed_keys=()):
    """Replay path with conf_text as its configuration: every eligible key
    metered with all its SEND/WRITE requests, not_provisioned = the RC
    requests of the other keys, no profile violation."""
    conf = tmp_path / "provision.conf"
    conf.write_text(conf_text)
    r = t.run_replay(path, tmp_path, "--config", str(conf))
    assert r.rc == 0, r.stderr
    eligible = {k for k, w in want.items() if not exclusions(w["packets"], w.get("malformed", 0))}
    requests = Counter()
    for rep in r.reports:
        if rep["rdmaSequenceFlags"] & t.FINAL:
            requests[t.report_key(rep)] += rep["requestPacketTotalCount"]
    assert set(requests) <= eligible
    for k in eligible:
        assert requests[k] == want[k]["packets"]["send_write"], k
    assert r.stats["eligible_requests"] == sum(want[k]["packets"]["send_write"] for k in eligible)
    assert r.stats["profile_violations"] == 0
    assert r.stats["not_provisioned"] == sum(n for k, w in want.items() if k not in eligible
                                             for op, n in w["rc_requests"].items())
    return r


@pytest.mark.parametrize("path", CAPTURES, ids=ids(CAPTURES))
def test_provision_lines_load_and_meter(path, tmp_path):
    """`connections --provision-only` is a configuration file, and so is the
    [provision] section of the default output; replay meters with it every
    eligible connection and nothing else."""
    frames = decoded(path)
    want = expected_from_tshark(frames)
    for f in frames:
        if f["rec"] and is_rc_request(f["rec"].opcode):
            want[f["rec"].key].setdefault("rc_requests", Counter())[f["rec"].opcode] += 1
    for w in want.values():
        w.setdefault("rc_requests", Counter())
    p = connections(path, "--provision-only")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("[provision]\n")
    assert_metered_as_provisioned(path, p.stdout, want, tmp_path)
    full = connections(path)
    assert full.returncode == 0, full.stderr
    assert provision_section(full.stdout) == p.stdout


# ---- a synthetic capture ----------------------------------------------------------------------

class Synthetic:
    """Frames, and per key (family, src, dst, QP, P_Key, VLANs) what they are."""

    def __init__(self):
        self.frames = []
        self.want = {}
        self.ms = 0

    def add(self, src, dst, qp, opcode, psn=0, pkey=0xFFFF, vlans=(), caplen=None, outer_8021ad=False, **kw):
        self.ms += 1
        ts = t.T0 + self.ms * MS
        data = t.roce_frame(src, dst, qp, psn, opcode=opcode, pkey=pkey, vlans=vlans, outer_8021ad=outer_8021ad,
                            **kw)
        self.frames.append(Frame(data[:caplen] if caplen else data, ts, wirelen=len(data)))
        key = t.make_key(src, dst, qp, pkey) + (tuple(vlans) + (0, 0))[:2]
        w = self.want.setdefault(key, {"packets": Counter(), "opcodes": set(), "first": ts, "last": ts,
                                       "malformed": 0, "rc_requests": Counter()})
        w["packets"][klass(opcode)] += 1
        w["opcodes"].add(opcode)
        w["last"] = ts
        if kw.get("tver"):
            w["malformed"] += 1
        if is_rc_request(opcode):
            w["rc_requests"][opcode] += 1

    def other(self, data):
        self.ms += 1
        self.frames.append(Frame(data, t.T0 + self.ms * MS))


def synthetic():
    s = Synthetic()
    a, b = "10.0.0.1", "10.0.0.2"
    for psn, op in enumerate([t.SEND_FIRST, t.SEND_MIDDLE, t.SEND_LAST, t.WRITE_ONLY]):
        s.add(a, b, 0x11, op, psn)
    s.add(a, b, 0x11, t.WRITE_ONLY, 4, data=b"\x5a" * 1000, caplen=100)  # cut by the snap length
    for psn in range(3):
        s.add(b, a, 0x21, t.ACK, psn)
    s.add(b, a, 0x21, t.CNP)
    s.add(a, "10.0.0.3", 0x12, t.SEND_ONLY, 0)
    s.add(a, "10.0.0.3", 0x12, t.READ_REQUEST, 1)
    s.add(a, "10.0.0.3", 0x12, t.SEND_ONLY, 2)
    s.add(a, "10.0.0.3", 0x13, t.WRITE_ONLY, 0)
    s.add(a, "10.0.0.3", 0x13, t.CMP_SWAP, 1)
    s.add(a, "10.0.0.3", 0x13, t.FETCH_ADD, 2)
    c, d = "10.0.0.4", "10.0.0.5"
    s.add(c, d, 0x1, t.UD_SEND_ONLY, 0)
    s.add(c, d, 0x1, t.UD_SEND_ONLY, 1)
    s.add(c, d, 0x40, t.UC_SEND_ONLY, 0)
    s.add(c, d, 0x41, t.SEND_ONLY, 0, tver=1)  # malformed: TVer != 0
    s.add(c, d, 0x42, t.SEND_ONLY_INV, 0)
    s.add(c, d, 0x43, 0x44, 0)  # an RD opcode
    e, f = "10.0.0.6", "10.0.0.7"
    s.add(e, f, 0x50, t.SEND_ONLY, 0, vlans=(100,))
    s.add(e, f, 0x50, t.SEND_ONLY, 1, vlans=(100,))
    s.add(e, f, 0x50, t.READ_REQUEST, 2, vlans=(200,))  # the same connection in another VLAN
    s.add(e, f, 0x51, t.WRITE_ONLY, 0, vlans=(300, 301), outer_8021ad=True)
    s.add("2001:db8::1", "2001:db8::2", 0x60, t.SEND_ONLY, 0, pkey=0x8001)
    s.add("2001:db8::1", "2001:db8::2", 0x60, t.WRITE_ONLY, 1, pkey=0x8001)
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    s.other(bytes(Ether() / IP(src=a, dst=b) / UDP(sport=5353, dport=53) / (b"\0" * 20)))  # not RoCEv2
    s.other(b"\x02" * 10)  # shorter than an Ethernet header: read, not run
    return s


# Written by hand from how synthetic() is built and docs/configuration.md "[provision]".
SYNTHETIC_PROVISION = """[provision]
connection = 10.0.0.1 10.0.0.2 0x000011 0xffff
# excluded: 10.0.0.1 10.0.0.3 0x000012 0xffff (RDMA READ)
# excluded: 10.0.0.1 10.0.0.3 0x000013 0xffff (atomics)
# excluded: 10.0.0.2 10.0.0.1 0x000021 0xffff (no requests)
# excluded: 10.0.0.4 10.0.0.5 0x000001 0xffff (UD)
# excluded: 10.0.0.4 10.0.0.5 0x000040 0xffff (UC)
# excluded: 10.0.0.4 10.0.0.5 0x000041 0xffff (malformed requests)
# excluded: 10.0.0.4 10.0.0.5 0x000042 0xffff (other RC requests)
# excluded: 10.0.0.4 10.0.0.5 0x000043 0xffff (RD/XRC/other opcodes)
# excluded: 10.0.0.6 10.0.0.7 0x000050 0xffff (RDMA READ)
connection = 10.0.0.6 10.0.0.7 0x000051 0xffff
connection = 2001:db8::1 2001:db8::2 0x000060 0x8001
"""


def test_synthetic(tmp_path):
    s = synthetic()
    path = str(tmp_path / "synthetic.pcap")
    t.write_pcap(path, s.frames)
    doc = census_json(path)
    bth = sum(sum(w["packets"].values()) for w in s.want.values())
    assert doc["frames_read"] == len(s.frames)
    assert doc["frames"] == len(s.frames) - 1  # the 10-byte frame is not run
    assert doc["bth_frames"] == bth and doc["no_bth_frames"] == 1
    got = {}
    for e in doc["connections"]:
        got[entry_key(e) + (e.get("vlanId", 0), e.get("dot1qCustomerVlanId", 0))] = e
    assert set(got) == set(s.want)
    for k, w in s.want.items():
        e = got[k]
        assert e["packets"] == {c: w["packets"][c] for c in CLASSES}, k
        assert e["opcodes"] == sorted(w["opcodes"]), k
        assert e["malformed_requests"] == w["malformed"], k
        assert (e["first_seen_ms"], e["last_seen_ms"]) == (w["first"] // MS, w["last"] // MS), k
        why = exclusions(w["packets"], w["malformed"])
        assert e["excluded"] == why and e["eligible"] == (not why), k
    # VLAN 100 alone is eligible, VLAN 200 is not: the line covers both, so none.
    assert [e["eligible"] for k, e in sorted(got.items()) if k[3] == 0x50] == [True, False]
    assert "\n".join(doc["provision"]) + "\n" == "\n".join(
        line for line in SYNTHETIC_PROVISION.splitlines() if line.startswith("connection")) + "\n"

    p = connections(path, "--provision-only")
    assert p.returncode == 0, p.stderr
    assert p.stdout == SYNTHETIC_PROVISION
    table = connections(path).stdout
    assert "10.0.0.6 > 10.0.0.7 qp 0x000050 pkey 0xffff vlan 200" in table
    assert "10.0.0.6 > 10.0.0.7 qp 0x000051 pkey 0xffff vlan 300/301" in table
    assert provision_section(table) == SYNTHETIC_PROVISION

    # Replay with these lines (namespace none: a line covers every VLAN).
    want = {}
    for k, w in s.want.items():
        m = want.setdefault(k[:5], {"packets": Counter(), "malformed": 0, "rc_requests": Counter()})
        m["packets"] += w["packets"]
        m["malformed"] += w["malformed"]
        m["rc_requests"] += w["rc_requests"]
    r = assert_metered_as_provisioned(path, p.stdout, want, tmp_path)
    assert r.stats["not_provisioned"] == 3 + 3 + 1 + 1 + 3  # READ, atomics, malformed, other RC, VLAN 200


def test_max_connections(tmp_path):
    """A table of 2 keys: the frames of the other keys are counted as not counted."""
    s = synthetic()
    path = str(tmp_path / "synthetic.pcap")
    t.write_pcap(path, s.frames)
    p = connections(path, "--json", "--max-connections", "2")
    assert p.returncode == 0, p.stderr
    import json
    doc = json.loads(p.stdout)
    assert len(doc["connections"]) == 2
    counted = sum(sum(e["packets"].values()) for e in doc["connections"])
    assert counted + doc["not_counted_table_full"] == doc["bth_frames"]
    # the first two keys of the capture: 5 frames of 0x11, 4 of 0x21
    assert counted == 9 and doc["not_counted_table_full"] > 0


def test_usage_and_bad_files(tmp_path):
    bad = tmp_path / "not.pcap"
    bad.write_text("not a capture\n")
    p = connections(str(bad))
    assert p.returncode == 1 and str(bad) in p.stderr and not p.stdout
    p = connections(BUNDLED[0], "--seconds", "5")
    assert p.returncode == 2 and "--seconds needs --live" in p.stderr
    p = connections([], "--live", "lo", BUNDLED[0])
    assert p.returncode == 2
    p = subprocess.run([t.ROCEMETER, "connections"], capture_output=True, text=True)
    assert p.returncode == 2 and "no capture file" in p.stderr
    p = connections(BUNDLED[0], "--max-connections", "0")
    assert p.returncode == 2 and "--max-connections: '0' is not an integer in 1..16777216" in p.stderr
    p = connections(BUNDLED[0], "--json", "--provision-only")
    assert p.returncode == 2
