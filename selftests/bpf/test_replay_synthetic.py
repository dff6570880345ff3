# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter replay` over synthetic captures built with scapy: [SEQOBS]'s
verification examples verbatim, PSN wrap, the half-space boundary, W = 1,
READ disabling a connection, non-final reports (--report-interval) and epoch
ID order, --window, --provision-all and --config provisioning (exact and
wildcard lines), the UDP source port, VLAN namespaces, idle expiration, and
bad capture files. Every case runs over IPv4 and IPv6, with and without
VLAN tags.

Expected values are written from [SEQOBS]'s text, checked again against the
Python model in tests/lib/rocetest.py (every report and every statistic), never
taken from the tool. Needs root (BPF) and the built build/rocemeter.
"""
import ipaddress
import json
import os
import shutil
import subprocess

import pytest

import rocetest as t
from rocetest import (FINAL, GENERATION_UNVERIFIED as GEN, PROFILE_VIOLATION, SERIAL_DISCONTINUITY, Frame, Rec)
from seqobs_examples import EXAMPLES  # tests/lib: [SEQOBS] "Verification Examples"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="BPF_PROG_TEST_RUN needs root")

MS = 10**6
W_DEFAULT = 1 << 22  # W without --window (docs/configuration.md)

ENCAPS = [
    pytest.param((4, ()), id="ipv4"),
    pytest.param((4, (100,)), id="ipv4-vlan"),
    pytest.param((6, ()), id="ipv6"),
    pytest.param((6, (100, 200)), id="ipv6-qinq"),
    pytest.param((4, (300, 7)), id="ipv4-qinq"),
    pytest.param((6, (4094,)), id="ipv6-vlan"),
]

ADDR = {4: ("192.0.2.1", "192.0.2.2", "192.0.2.3"), 6: ("2001:db8::1", "2001:db8::2", "2001:db8::3")}


class Cap:
    """A synthetic capture and what each frame is, for the model."""

    def __init__(self, encap, qp=0x000100, pkey=0xFFFF):
        self.family, self.vlans = encap
        self.src, self.dst, self.other = ADDR[self.family]
        self.qp, self.pkey = qp, pkey
        self.items = []  # (Frame, rec, verdict)
        self.ms = 0

    def key(self, src=None, dst=None, qp=None, pkey=None):
        return t.make_key(src or self.src, dst or self.dst, self.qp if qp is None else qp,
                          self.pkey if pkey is None else pkey)

    def req(self, psn, opcode=t.SEND_ONLY, at_ms=None, src=None, dst=None, qp=None, pkey=None, sport=49152,
            vlans=None, **kw):
        """A request (or any BTH frame) at at_ms (default: 1 ms after the last)."""
        self.ms = self.ms + 1 if at_ms is None else at_ms
        src, dst = src or self.src, dst or self.dst
        qp = self.qp if qp is None else qp
        pkey = self.pkey if pkey is None else pkey
        data = t.roce_frame(src, dst, qp, psn, opcode=opcode, pkey=pkey,
                            vlans=self.vlans if vlans is None else vlans,
                            outer_8021ad=len(self.vlans) == 2, sport=sport, **kw)
        self.items.append((Frame(data, t.T0 + self.ms * MS), Rec(t.make_key(src, dst, qp, pkey), opcode, psn), None))
        return self

    def reqs(self, psns, **kw):
        for p in psns:
            self.req(p, **kw)
        return self

    def filler(self, at_ms):
        """A frame that is not RoCEv2 (UDP to port 53): time passes."""
        self.ms = at_ms
        data = t.roce_frame(self.src, self.dst, 0, 0, vlans=self.vlans, outer_8021ad=len(self.vlans) == 2,
                            dport=53, payload=b"\0" * 20)
        self.items.append((Frame(data, t.T0 + at_ms * MS), None, "not_rocev2"))
        return self

    def run(self, tmp_path, *args, name="c.pcap", **model_kw):
        path = str(tmp_path / name)
        t.write_pcap(path, [f for f, _, _ in self.items])
        r = t.run_replay(path, tmp_path, *args)
        assert r.rc == 0, r.stderr
        m = t.ReplayModel(**model_kw)
        for f, rec, verdict in self.items:
            m.frame(f.ts_ns, rec=rec, verdict=verdict)
        m.end()
        t.compare_reports(m.reports, r.reports)
        assert r.stats == t.expected_stats(m)
        return r


ZERO = dict(skippedPsnTotalCount=0, filledPsnTotalCount=0, expiredPsnTotalCount=0, abandonedPsnTotalCount=0,
            pendingPsnCount=0, repeatedPsnTotalCount=0, unclassifiedLatePacketTotalCount=0)


def counters(**kw):
    c = dict(ZERO)
    for k, v in kw.items():
        c[{"requests": "requestPacketTotalCount", "skipped": "skippedPsnTotalCount",
           "filled": "filledPsnTotalCount", "expired": "expiredPsnTotalCount",
           "abandoned": "abandonedPsnTotalCount", "pending": "pendingPsnCount",
           "repeated": "repeatedPsnTotalCount", "late": "unclassifiedLatePacketTotalCount",
           "flags": "rdmaSequenceFlags", "window": "rdmaSequenceWindow"}[k]] = v
    return c


def assert_report(rep, **kw):
    want = counters(**kw)
    got = {k: rep[k] for k in want}
    assert got == want


# --------------------------------------------------------------------------
# The builder itself, checked by tshark.

@pytest.mark.parametrize("encap", ENCAPS)
def test_builder_decodes_in_tshark(encap, tmp_path):
    """tshark reads back the addresses, QP, P_Key, opcode and PSN the frames
    were built with (so the cases below test what they say)."""
    c = Cap(encap, qp=0xABCDEF, pkey=0x8001)
    ops = list(range(0x00, 0x0D)) + [0x11, 0x13, 0x14, 0x16, 0x17, t.UC_SEND_ONLY, t.UD_SEND_ONLY, t.CNP]
    for i, op in enumerate(ops):
        c.req((16777200 + i) % t.M, opcode=op)
    path = str(tmp_path / "b.pcap")
    t.write_pcap(path, [f for f, _, _ in c.items])
    dec = t.tshark_frames(path)
    assert [(d["ts_ns"], d["rec"].key, d["rec"].opcode, d["rec"].psn) for d in dec] == \
        [(f.ts_ns, r.key, r.opcode, r.psn) for f, r, _ in c.items]


# --------------------------------------------------------------------------
# [SEQOBS], "Verification Examples", verbatim.

@pytest.mark.parametrize("encap", ENCAPS)
def test_example_reorder(encap, tmp_path):
    """W=4, PSNs 100,102,101,103,102: requests=5, skipped=1, filled=1,
    repeated=1, pending=expired=abandoned=unclassifiedLate=0."""
    psns, want = EXAMPLES[1]
    r = Cap(encap).reqs(psns).run(tmp_path, "-a", "--window", "4", window=4)
    assert len(r.reports) == 1
    assert_report(r.reports[0], **want, window=4, flags=FINAL | GEN)


@pytest.mark.parametrize("encap", ENCAPS)
def test_example_before_start(encap, tmp_path):
    """W=4, PSNs 100,99,100: 99 precedes S: requests=3, unclassifiedLate=1,
    repeated=1, skipped=filled=pending=0."""
    psns, want = EXAMPLES[2]
    r = Cap(encap).reqs(psns).run(tmp_path, "-a", "--window", "4", window=4)
    assert len(r.reports) == 1
    assert_report(r.reports[0], **want, window=4, flags=FINAL | GEN)


@pytest.mark.parametrize("encap", ENCAPS)
def test_example_expiry_then_close(encap, tmp_path):
    """W=4, PSNs 100,102,106: skipped=4, expired=1, pending=3 (seen in a
    non-final report); closing (end of input) gives abandoned=3, pending=0."""
    psns, want = EXAMPLES[3]
    c = Cap(encap).reqs(psns).filler(20)  # the filler triggers a snapshot at 10 ms
    r = c.run(tmp_path, "-a", "--window", "4", "--report-interval", "10", window=4, interval_ms=10)
    assert len(r.reports) == 2
    snap, final = r.reports
    assert_report(snap, **want, window=4, flags=GEN)
    assert_report(final, requests=3, skipped=4, expired=1, abandoned=3, pending=0, window=4, flags=FINAL | GEN)
    assert snap["rdmaSequenceEpochId"] == final["rdmaSequenceEpochId"]
    assert (snap["rdmaSequenceReportId"], final["rdmaSequenceReportId"]) == (1, 2)


@pytest.mark.parametrize("encap", ENCAPS)
def test_example_closed_result_cannot_be_filled(encap, tmp_path):
    """W=4, 100,102,106, then 111 (d=5 > W: serialDiscontinuity closes with
    abandoned=3), then 103: it cannot fill the closed epoch; in the new epoch
    (S=111) it is unclassifiedLate."""
    r = Cap(encap).reqs([100, 102, 106, 111, 103]).run(tmp_path, "-a", "--window", "4", window=4)
    assert len(r.reports) == 2
    old, new = r.reports
    assert_report(old, requests=3, skipped=4, expired=1, abandoned=3, window=4,
                  flags=FINAL | SERIAL_DISCONTINUITY | GEN)
    assert_report(new, requests=2, late=1, window=4, flags=FINAL | GEN)
    assert old["rdmaSequenceEpochId"] < new["rdmaSequenceEpochId"]


@pytest.mark.parametrize("encap", ENCAPS)
def test_example_wrap(encap, tmp_path):
    """PSNs 16777214,16777215,0,1 advance continuously with no skipped positions."""
    psns, want = EXAMPLES[4]
    r = Cap(encap).reqs(psns).run(tmp_path, "-a", "--window", "4", window=4)
    assert len(r.reports) == 1
    assert_report(r.reports[0], **want, window=4, flags=FINAL | GEN)


@pytest.mark.parametrize("encap", ENCAPS)
def test_wrap_with_gap_and_fill(encap, tmp_path):
    """16777215 -> 1 skips 0 (d=2 across the wrap); 0 then fills it; 16777215
    again is a repeat; 16777213 precedes S: unclassifiedLate."""
    r = Cap(encap).reqs([16777215, 1, 0, 16777215, 16777213]).run(tmp_path, "-a", "--window", "8", window=8)
    assert len(r.reports) == 1
    assert_report(r.reports[0], requests=5, skipped=1, filled=1, repeated=1, late=1, window=8, flags=FINAL | GEN)


@pytest.mark.parametrize("encap", ENCAPS)
def test_example_half_space_jump(encap, tmp_path):
    """A jump of exactly 2^23 closes as ambiguous (serialDiscontinuity); the
    jumping request starts the next epoch and is counted once."""
    p0 = 100
    jump = (p0 + t.HALF) % t.M
    r = Cap(encap).reqs([p0, p0 + 1, jump, jump + 1]).run(
        tmp_path, "-a", "--window", "4194304", "--max-contexts", "8", window=4194304)
    assert len(r.reports) == 2
    old, new = r.reports
    assert_report(old, requests=2, window=4194304, flags=FINAL | SERIAL_DISCONTINUITY | GEN)
    assert_report(new, requests=2, window=4194304, flags=FINAL | GEN)
    assert old["rdmaSequenceEpochId"] < new["rdmaSequenceEpochId"]


@pytest.mark.parametrize("encap", ENCAPS[:3])
def test_half_space_boundaries(encap, tmp_path):
    """W=2^22 at H=16777000: d = 2^22 is accounted (skipped 2^22-1, all
    pending); a backward distance of 2^23-1 maps before L: unclassifiedLate;
    a forward distance of 2^23 + 1 is a backward distance of 2^23 - 1."""
    w = 1 << 22
    h = 16777000
    far = (h + w) % t.M
    c = Cap(encap).reqs([h, far, (far - (t.HALF - 1)) % t.M, (far + t.HALF + 1) % t.M])
    r = c.run(tmp_path, "-a", "--window", str(w), "--max-contexts", "8", window=w)
    assert len(r.reports) == 1
    assert_report(r.reports[0], requests=4, skipped=w - 1, abandoned=w - 1, late=2, window=w, flags=FINAL | GEN)


@pytest.mark.parametrize("encap", ENCAPS)
def test_forward_beyond_window(encap, tmp_path):
    """d = W is a bounded advance; d = W + 1 closes with serialDiscontinuity."""
    r = Cap(encap).reqs([10, 14, 19]).run(tmp_path, "-a", "--window", "4", window=4)
    assert len(r.reports) == 2
    assert_report(r.reports[0], requests=2, skipped=3, abandoned=3, window=4,
                  flags=FINAL | SERIAL_DISCONTINUITY | GEN)
    assert_report(r.reports[1], requests=1, window=4, flags=FINAL | GEN)


@pytest.mark.parametrize("encap", ENCAPS)
def test_example_w1(encap, tmp_path):
    """W=1: any forward advance greater than one starts a fresh epoch; no
    pending positions exist. d=1 advances, d=0 repeats, d<0 is late."""
    r = Cap(encap).reqs([100, 101, 101, 100, 103, 104, 107]).run(tmp_path, "-a", "--window", "1", window=1)
    assert len(r.reports) == 3
    assert_report(r.reports[0], requests=4, repeated=1, late=1, window=1,
                  flags=FINAL | SERIAL_DISCONTINUITY | GEN)
    assert_report(r.reports[1], requests=2, window=1, flags=FINAL | SERIAL_DISCONTINUITY | GEN)
    assert_report(r.reports[2], requests=1, window=1, flags=FINAL | GEN)


@pytest.mark.parametrize("encap", ENCAPS)
def test_example_read_disables(encap, tmp_path):
    """An observed READ closes the epoch with profileViolation and disables
    the connection, including for subsequent SEND packets; the READ is not
    counted. Responses of the connection change nothing."""
    c = Cap(encap).reqs([100, 101], opcode=t.SEND_ONLY)
    c.req(0x500, opcode=t.ACK).req(102, opcode=t.READ_REQUEST).req(0x501, opcode=t.READ_RESP_ONLY)
    c.reqs([103, 104], opcode=t.SEND_ONLY).req(105, opcode=t.WRITE_ONLY)
    r = c.run(tmp_path, "-a", "--window", "4", window=4)
    assert len(r.reports) == 1
    assert_report(r.reports[0], requests=2, window=4, flags=FINAL | PROFILE_VIOLATION | GEN)
    assert r.stats["profile_violations"] == 1
    assert r.stats["disabled_requests"] == 3
    assert r.stats["responses"] == 2


@pytest.mark.parametrize("encap", ENCAPS[:3])
@pytest.mark.parametrize("op", [t.READ_REQUEST, t.CMP_SWAP, t.FETCH_ADD, 0x15, t.SEND_LAST_INV, t.SEND_ONLY_INV,
                                0x18, 0x1F])
def test_unsupported_rc_opcodes(op, encap, tmp_path):
    """Every RC opcode outside 0x00..0x0B that is not a response is a profile
    violation: first on an open epoch (closed), then as the very first
    request of another connection (no report, connection disabled)."""
    c = Cap(encap).reqs([7, 8]).req(9, opcode=op).req(10)
    c.req(1, opcode=op, qp=0x200).req(2, qp=0x200)
    r = c.run(tmp_path, "-a")
    assert len(r.reports) == 1
    assert t.report_key(r.reports[0]) == c.key()
    assert_report(r.reports[0], requests=2, window=W_DEFAULT, flags=FINAL | PROFILE_VIOLATION | GEN)
    assert r.stats["profile_violations"] == 2 and r.stats["disabled_requests"] == 2


@pytest.mark.parametrize("encap", ENCAPS[:3])
def test_every_request_opcode_counts(encap, tmp_path):
    """SEND and RDMA WRITE, with and without immediate (0x00..0x0B), each with
    its extended headers, are eligible requests of one context."""
    c = Cap(encap)
    for i, op in enumerate(range(0x00, 0x0C)):
        c.req(1000 + i, opcode=op)
    r = c.run(tmp_path, "-a")
    assert len(r.reports) == 1
    assert_report(r.reports[0], requests=12, window=W_DEFAULT, flags=FINAL | GEN)


@pytest.mark.parametrize("encap", ENCAPS[:3])
def test_responses_and_cnp_change_nothing(encap, tmp_path):
    """Responses, ACKs and CNPs, even under the same key and interleaved with
    the requests at wild PSNs, do not touch the epoch ([SEQOBS]: "Response
    packets and CNPs do not change this request state"). A UC, RD, UD or XRC
    request under the key of a known RC connection is a foreign-transport
    violation instead (selftests/bpf/test_meter_parse.py)."""
    c = Cap(encap).req(50)
    for i, op in enumerate([0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, t.CNP]):
        c.req((50 + 1000 * (i + 1)) % t.M, opcode=op)
    c.req(51)
    r = c.run(tmp_path, "-a", "--window", "4", window=4)
    assert len(r.reports) == 1
    assert_report(r.reports[0], requests=2, window=4, flags=FINAL | GEN)
    assert r.stats["responses"] == 6 and r.stats["cnp"] == 1 and r.stats["other_transport"] == 0


@pytest.mark.parametrize("encap", ENCAPS[:3])
def test_uc_ud_of_other_connections_change_nothing(encap, tmp_path):
    """UC and UD requests to QPs no RC connection uses (no context, and
    --provision-all names no QP) are counted and change nothing."""
    c = Cap(encap).req(50)
    for i, op in enumerate([t.UC_SEND_ONLY, t.UD_SEND_ONLY, 0x20, 0xA4]):
        c.req(7, opcode=op, qp=0x900 + i)
    c.req(51)
    r = c.run(tmp_path, "-a", "--window", "4", window=4)
    assert len(r.reports) == 1
    assert_report(r.reports[0], requests=2, window=4, flags=FINAL | GEN)
    assert r.stats["other_transport"] == 4 and r.stats["profile_violations"] == 0


# --------------------------------------------------------------------------
# Non-final reports and IDs.

@pytest.mark.parametrize("encap", ENCAPS)
def test_report_interval_and_epoch_ids(encap, tmp_path):
    """Interval 10 ms. Context A starts at 1 ms, context B at 2 ms; B's epoch
    closes at 3 ms (serial discontinuity) and is serialized first; the
    snapshot at 11 ms covers A, then B's second epoch (order of first
    arrival); the one at 21 ms (before B's request of 21 ms) only A, the
    epoch that changed since. Non-final reports: generationUnverified only,
    abandoned 0. Epoch IDs: B1 < A < B2. Report IDs 1, 2, 3 per epoch."""
    c = Cap(encap)
    qa, qb = 0x11, 0x22
    c.req(10, qp=qa, at_ms=1).req(500, qp=qb, at_ms=2).req(506, qp=qb, at_ms=3).req(12, qp=qa, at_ms=4)
    c.req(13, qp=qa, at_ms=11).req(11, qp=qa, at_ms=12).req(507, qp=qb, at_ms=21)
    r = c.run(tmp_path, "-a", "--window", "4", "--report-interval", "10", window=4, interval_ms=10)
    reps = [(x["rdmaDestinationQP"], x["rdmaSequenceEpochId"], x["rdmaSequenceReportId"], x["rdmaSequenceFlags"])
            for x in r.reports]
    assert len(reps) == 6
    b1, a, b2 = reps[0][1], reps[1][1], reps[2][1]
    assert 0 < b1 < a < b2
    assert reps == [
        (qb, b1, 1, FINAL | SERIAL_DISCONTINUITY | GEN),
        (qa, a, 1, GEN), (qb, b2, 1, GEN),        # walk at 11 ms
        (qa, a, 2, GEN),                          # walk at 21 ms: B2 unchanged
        (qa, a, 3, FINAL | GEN), (qb, b2, 2, FINAL | GEN),  # end of input
    ]
    # A at 11 ms (before 13): 10, 12 -> skipped 1, pending 1.
    assert_report(r.reports[1], requests=2, skipped=1, pending=1, window=4, flags=GEN)
    # A at 21 ms: 13 advanced, 11 filled.
    assert_report(r.reports[3], requests=4, skipped=1, filled=1, window=4, flags=GEN)
    for x in r.reports:
        if not x["rdmaSequenceFlags"] & FINAL:
            assert x["abandonedPsnTotalCount"] == 0
    assert r.reports[1]["flowStartMilliseconds"] == (t.T0 + 1 * MS) // MS
    assert r.reports[1]["flowEndMilliseconds"] == (t.T0 + 4 * MS) // MS


@pytest.mark.parametrize("encap", ENCAPS[:3])
def test_interval_no_report_of_untouched_epoch(encap, tmp_path):
    """A non-final report is due only for an epoch that counted a request
    since its last report (docs/architecture.md "Time"): an epoch without
    new traffic is reported at the first boundary and then only by its
    final, which continues the report IDs."""
    c = Cap(encap).reqs([5, 7]).filler(15).filler(25).filler(35)
    r = c.run(tmp_path, "-a", "--window", "4", "--report-interval", "10", window=4, interval_ms=10)
    assert [x["rdmaSequenceReportId"] for x in r.reports] == [1, 2]
    assert_report(r.reports[0], requests=2, skipped=1, pending=1, window=4, flags=GEN)
    assert_report(r.reports[1], requests=2, skipped=1, abandoned=1, window=4, flags=FINAL | GEN)


# --------------------------------------------------------------------------
# Keys.

@pytest.mark.parametrize("encap", ENCAPS)
def test_udp_source_port_never_splits(encap, tmp_path):
    c = Cap(encap)
    for i, sport in enumerate([49152, 49153, 1, 65535, 4791, 0, 50000]):
        c.req(200 + i, sport=sport)
    r = c.run(tmp_path, "-a")
    assert len(r.reports) == 1
    assert_report(r.reports[0], requests=7, window=W_DEFAULT, flags=FINAL | GEN)


@pytest.mark.parametrize("encap", ENCAPS)
def test_key_fields_split_contexts(encap, tmp_path):
    """Source, destination, destination QP and P_Key each select a context;
    the reverse direction is another context."""
    c = Cap(encap)
    c.req(1).req(1, dst=c.other).req(1, qp=0x101).req(1, pkey=0x7FFF).req(1, src=c.dst, dst=c.src)
    c.req(2).req(3, dst=c.other).req(4, qp=0x101).req(5, pkey=0x7FFF).req(6, src=c.dst, dst=c.src)
    r = c.run(tmp_path, "-a")
    assert len(r.reports) == 5
    got = {t.report_key(x): x for x in r.reports}
    assert set(got) == {c.key(), c.key(dst=c.other), c.key(qp=0x101), c.key(pkey=0x7FFF),
                        c.key(src=c.dst, dst=c.src)}
    assert_report(got[c.key()], requests=2, window=W_DEFAULT, flags=FINAL | GEN)
    assert_report(got[c.key(src=c.dst, dst=c.src)], requests=2, skipped=4, abandoned=4, window=W_DEFAULT,
                  flags=FINAL | GEN)


@pytest.mark.parametrize("family", [4, 6])
def test_vlan_ids_do_not_split_without_namespace(family, tmp_path):
    """namespace = none (default): the same connection seen under different
    VLAN tags is one context."""
    c = Cap((family, (10,)))
    c.req(1).req(2, vlans=(11,)).req(3, vlans=()).req(4, vlans=(10, 20))
    r = c.run(tmp_path, "-a")
    assert len(r.reports) == 1
    assert_report(r.reports[0], requests=4, window=W_DEFAULT, flags=FINAL | GEN)
    assert "vlanId" not in r.reports[0]


@pytest.mark.parametrize("family", [4, 6])
def test_vlan_namespace(family, tmp_path):
    """namespace = vlan: VLAN IDs are part of the key and of the report
    (vlanId = outer tag, dot1qCustomerVlanId = inner tag, 0 when absent)."""
    conf = tmp_path / "ns.conf"
    conf.write_text("[meter]\nnamespace = vlan\nprovision_all = yes\n")
    c = Cap((family, (10,)))
    c.req(1).req(2, vlans=(11,)).req(3, vlans=()).req(4, vlans=(10, 20)).req(5, vlans=(10,))
    path = str(tmp_path / "v.pcap")
    t.write_pcap(path, [f for f, _, _ in c.items])
    r = t.run_replay(path, tmp_path, "--config", conf)
    assert r.rc == 0, r.stderr
    got = sorted((x["vlanId"], x["dot1qCustomerVlanId"], x["requestPacketTotalCount"], x["skippedPsnTotalCount"])
                 for x in r.reports)
    assert got == [(0, 0, 1, 0), (10, 0, 2, 3), (10, 20, 1, 0), (11, 0, 1, 0)]


# --------------------------------------------------------------------------
# Window and provisioning.

def test_window_option_and_config(tmp_path):
    c = Cap((4, ())).reqs([100, 102, 106])
    conf = tmp_path / "w.conf"
    conf.write_text("[meter]\nwindow = 4\nprovision_all = yes\n")
    r = c.run(tmp_path, "--config", conf, window=4)
    assert_report(r.reports[0], requests=3, skipped=4, expired=1, abandoned=3, window=4, flags=FINAL | GEN)
    # --window overrides the file: W=8, nothing expires.
    r = c.run(tmp_path, "--config", conf, "--window", "8", window=8)
    assert_report(r.reports[0], requests=3, skipped=4, abandoned=4, window=8, flags=FINAL | GEN)
    # Default W = 2^22.
    r = c.run(tmp_path, "-a", window=1 << 22)
    assert r.reports[0]["rdmaSequenceWindow"] == 1 << 22


@pytest.mark.parametrize("bad", ["0", "4194305", "-1", "x", "4k"])
def test_window_out_of_range(bad, tmp_path):
    path = str(tmp_path / "e.pcap")
    t.write_pcap(path, [f for f, _, _ in Cap((4, ())).req(1).items])
    r = t.run_replay(path, tmp_path, "-a", "--window", bad)
    assert r.rc == 2 and r.stdout == "" and "--window" in r.stderr


def test_config_provisioning(tmp_path):
    """[provision] lines: exact (src, dst, QP, P_Key), any QP, any P_Key, any
    both, IPv4 and IPv6. Unprovisioned connections are counted and get no
    report."""
    conf = tmp_path / "p.conf"
    conf.write_text(
        "[meter]\nwindow = 16\n"
        "[provision]\n"
        "connection = 192.0.2.1 192.0.2.2 0x000100 0xffff\n"
        "connection = 192.0.2.1 192.0.2.3 any 0x8001\n"
        "connection = 192.0.2.1 192.0.2.4 0x200 any\n"
        "connection = 2001:db8::1 2001:db8::2 any any\n"
        "connection = 2001:db8::1 2001:db8::3 16777215 65535\n")
    rules = [("192.0.2.1", "192.0.2.2", 0x100, 0xFFFF), ("192.0.2.1", "192.0.2.3", None, 0x8001),
             ("192.0.2.1", "192.0.2.4", 0x200, None), ("2001:db8::1", "2001:db8::2", None, None),
             ("2001:db8::1", "2001:db8::3", 0xFFFFFF, 0xFFFF)]

    def provisioned(key):
        fam, s, d, qp, pk = key
        return any(ipaddress.ip_address(a) == s and ipaddress.ip_address(b) == d and q in (None, qp)
                   and p in (None, pk) for a, b, q, p in rules)

    c = Cap((4, ()))
    conns = [  # (src, dst, qp, pkey, provisioned?)
        ("192.0.2.1", "192.0.2.2", 0x100, 0xFFFF, True),
        ("192.0.2.1", "192.0.2.2", 0x101, 0xFFFF, False),     # other QP
        ("192.0.2.1", "192.0.2.2", 0x100, 0x7FFF, False),     # other P_Key
        ("192.0.2.2", "192.0.2.1", 0x100, 0xFFFF, False),     # reverse direction
        ("192.0.2.9", "192.0.2.2", 0x100, 0xFFFF, False),     # other source
        ("192.0.2.1", "192.0.2.3", 0x1, 0x8001, True),        # any QP
        ("192.0.2.1", "192.0.2.3", 0xFFFFFF, 0x8001, True),
        ("192.0.2.1", "192.0.2.3", 0x1, 0x8002, False),
        ("192.0.2.1", "192.0.2.4", 0x200, 0x0001, True),      # any P_Key
        ("192.0.2.1", "192.0.2.4", 0x200, 0xFFFF, True),
        ("192.0.2.1", "192.0.2.4", 0x201, 0xFFFF, False),
        ("2001:db8::1", "2001:db8::2", 0x5, 0x1234, True),    # any both
        ("2001:db8::1", "2001:db8::2", 0x0, 0x0, True),
        ("2001:db8::2", "2001:db8::1", 0x5, 0x1234, False),
        ("2001:db8::1", "2001:db8::3", 0xFFFFFF, 0xFFFF, True),
        ("2001:db8::1", "2001:db8::3", 0xFFFFFE, 0xFFFF, False),
    ]
    for rnd in range(3):
        for i, (s, d, qp, pk, _) in enumerate(conns):
            c.req(1000 * i + rnd, src=s, dst=d, qp=qp, pkey=pk)
    r = c.run(tmp_path, "--config", conf, window=16, provisioned=provisioned)
    want = {t.make_key(s, d, qp, pk) for s, d, qp, pk, p in conns if p}
    assert {t.report_key(x) for x in r.reports} == want
    for x in r.reports:
        assert_report(x, requests=3, window=16, flags=FINAL | GEN)
    assert r.stats["not_provisioned"] == 3 * sum(1 for *_, p in conns if not p)
    # --provision-all adds everything else.
    r = c.run(tmp_path, "--config", conf, "-a", window=16)
    assert len(r.reports) == len(conns)


def test_config_generation_verified(tmp_path):
    """generation_verified = yes: reports do not carry generationUnverified."""
    conf = tmp_path / "g.conf"
    conf.write_text("[meter]\nprovision_all = yes\ngeneration_verified = yes\n")
    r = Cap((6, ())).reqs([1, 2]).run(tmp_path, "--config", conf, generation_verified=True)
    assert r.reports[0]["rdmaSequenceFlags"] == FINAL


@pytest.mark.parametrize("text,what", [
    ("[provision]\nconnection = 192.0.2.1 2001:db8::1 1 1\n", "different address families"),
    ("[provision]\nconnection = 192.0.2.1 192.0.2.2 0x1000000 any\n", "destination QP"),
    ("[provision]\nconnection = 192.0.2.1 192.0.2.2 any 0x10000\n", "P_Key"),
    ("[provision]\nconnection = 192.0.2.1 192.0.2.2 any\n", "expected"),
    ("[meter]\nwindow = 4194305\n", "window"),
])
def test_config_errors(text, what, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text(text)
    path = str(tmp_path / "e.pcap")
    t.write_pcap(path, [f for f, _, _ in Cap((4, ())).req(1).items])
    r = t.run_replay(path, tmp_path, "--config", conf)
    assert r.rc == 2 and r.stdout == ""
    assert str(conf) in r.stderr and what in r.stderr


@pytest.mark.parametrize("encap", ENCAPS[:3])
def test_context_table_full(encap, tmp_path):
    """--max-contexts 2: a third connection is refused (table_full, every
    request of it), gets no report, and does not disturb the other two;
    a connection disabled by a READ keeps its context."""
    c = Cap(encap)
    c.req(1, qp=1).req(1, qp=2, opcode=t.READ_REQUEST).req(1, qp=3).req(2, qp=1).req(2, qp=3).req(3, qp=2)
    r = c.run(tmp_path, "-a", "--max-contexts", "2", max_contexts=2)
    assert [(x["rdmaDestinationQP"], x["requestPacketTotalCount"]) for x in r.reports] == [(1, 2)]
    assert r.stats["table_full"] == 2 and r.stats["disabled_requests"] == 1


@pytest.mark.parametrize("encap", ENCAPS[:3])
def test_capture_truncation_is_a_capture_discontinuity(encap, tmp_path):
    """[SEQOBS]: "A capture gap closes affected epochs with
    captureDiscontinuity; metering resumes only after complete observation
    has been re-established and starts fresh state." Here the capture's snap
    length cut request PSN 3 of the provisioned connection inside its BTH
    (addresses visible, wire length = full frame): the meter cannot account
    it, so the epoch holding 1, 2 must close with captureDiscontinuity and 4
    must start a fresh epoch -- never a skipped position that a collector
    would read as a network gap."""
    c = Cap(encap).reqs([1, 2, 3, 4])
    f, rec, _ = c.items[2]
    hdr = len(f.data) - len(t.roce_payload(t.SEND_ONLY, c.qp, 3))
    c.items[2] = (Frame(f.data[:hdr + 4], f.ts_ns, wirelen=len(f.data)), None, "malformed_bth")
    path = str(tmp_path / "cut.pcap")
    t.write_pcap(path, [x[0] for x in c.items])
    r = t.run_replay(path, tmp_path, "-a")
    assert r.rc == 0, r.stderr
    assert all(x["skippedPsnTotalCount"] == 0 for x in r.reports)
    assert len(r.reports) == 2
    assert r.reports[0]["rdmaSequenceFlags"] & t.CAPTURE_DISCONTINUITY
    assert r.reports[0]["requestPacketTotalCount"] == 2
    assert r.reports[1]["requestPacketTotalCount"] == 1


@pytest.mark.parametrize("size", [80000, 262144])
def test_frame_larger_than_test_run_accepts(size, tmp_path):
    """A capture written with snap length 262144 (tcpdump on a host with
    GRO/GSO or BIG TCP) holds frames longer than BPF_PROG_TEST_RUN takes in
    one run (about 72 KiB with fragments). Such a frame is not a request
    (an IPv4/UDP length cannot describe it); replay must go on with the
    frames after it, not stop with an error: one epoch of PSNs 1, 2, 3."""
    c = Cap((4, ())).reqs([1, 2])
    big = b"\x02" * 12 + b"\x88\xcc" + b"\x11" * (size - 14)  # LLDP EtherType: not IP
    c.items.append((Frame(big, t.T0 + 3 * MS), None, "not_rocev2"))
    c.ms = 3
    c.req(3)
    path = str(tmp_path / "big.pcap")
    t.write_pcap(path, [f for f, _, _ in c.items], snaplen=262144)
    r = t.run_replay(path, tmp_path, "-a")
    assert r.rc == 0, r.stderr
    assert len(r.reports) == 1
    assert_report(r.reports[0], requests=3, flags=FINAL | GEN, window=W_DEFAULT)
    assert r.stats["frames"] == 4 and r.stats["not_rocev2"] == 1 and r.stats["frames_truncated_by_capture"] == 0


# --------------------------------------------------------------------------
# Idle expiration ([meter] idle_timeout_ms).

@pytest.mark.parametrize("encap", ENCAPS[:3])
def test_idle_expiration(encap, tmp_path):
    """idle_timeout_ms = 1000 ([SEQOBS]: idle expiration closes an epoch,
    finalEpoch alone). Connection A: a request 1001 ms after the previous
    one starts a new epoch; a request exactly 1000 ms later joins. Connection
    B goes silent and is closed while A's traffic goes on (before the end)."""
    conf = tmp_path / "idle.conf"
    conf.write_text("[meter]\nprovision_all = yes\nwindow = 4\nidle_timeout_ms = 1000\n")
    c = Cap(encap)
    b = 0x300
    c.req(1, at_ms=0).req(2, at_ms=500).req(7, qp=b, at_ms=1000)
    for psn, ms in [(3, 1501), (4, 1900), (5, 2300), (6, 2700), (7, 3100), (8, 4100)]:
        c.req(psn, at_ms=ms)
    r = c.run(tmp_path, "--config", conf, window=4, idle_timeout_ms=1000)
    q = [(x["rdmaDestinationQP"], x["requestPacketTotalCount"], x["rdmaSequenceFlags"]) for x in r.reports]
    assert q == [(0x100, 2, FINAL | GEN), (b, 1, FINAL | GEN), (0x100, 6, FINAL | GEN)]
    assert r.reports[0]["flowEndMilliseconds"] == (t.T0 + 500 * MS) // MS
    assert r.reports[2]["flowStartMilliseconds"] == (t.T0 + 1501 * MS) // MS


# --------------------------------------------------------------------------
# Bad capture files.

def _check_rejected(r, path):
    assert r.rc != 0
    assert r.stdout == ""
    assert str(path) in r.stderr


def test_non_ethernet_link_types(tmp_path):
    frame = Cap((4, ())).req(1).items[0][0]
    for lt, name in [(101, "raw"), (113, "sll"), (12, "raw12"), (228, "ipv4")]:
        path = tmp_path / ("lt-%s.pcap" % name)
        t.write_pcap(str(path), [Frame(frame.data[14:] if lt != 113 else b"\0" * 16 + frame.data[14:],
                                       frame.ts_ns)], linktype=lt)
        r = t.run_replay(path, tmp_path, "-a")
        _check_rejected(r, path)
        assert "link type" in r.stderr


def test_truncated_capture_file(tmp_path):
    """A pcap cut in the middle of a record: error naming the file, exit
    non-zero, nothing on stdout, even though the first records are fine."""
    c = Cap((4, ())).reqs(range(10))
    good = tmp_path / "good.pcap"
    t.write_pcap(str(good), [f for f, _, _ in c.items])
    data = good.read_bytes()
    for cut in (len(data) - 10, len(data) - len(c.items[-1][0].data) - 8):
        path = tmp_path / ("cut%d.pcap" % cut)
        path.write_bytes(data[:cut])
        r = t.run_replay(path, tmp_path, "-a")
        _check_rejected(r, path)
    # Also when the bad file is the second of two: nothing is printed.
    r = t.run_replay([good, path], tmp_path, "-a")
    _check_rejected(r, path)


def test_not_a_capture(tmp_path):
    for name, content in [("text.pcap", b"this is not a capture file\n" * 10), ("empty.pcap", b""),
                          ("short.pcap", b"\xd4\xc3\xb2\xa1\x02\x00")]:
        path = tmp_path / name
        path.write_bytes(content)
        r = t.run_replay(path, tmp_path, "-a")
        _check_rejected(r, path)
    missing = tmp_path / "does-not-exist.pcap"
    r = t.run_replay(missing, tmp_path, "-a")
    _check_rejected(r, missing)


def test_empty_capture(tmp_path):
    """A valid capture without frames: exit 0, no report, zero statistics."""
    path = tmp_path / "none.pcap"
    t.write_pcap(str(path), [])
    r = t.run_replay(path, tmp_path, "-a")
    assert r.rc == 0 and r.reports == []
    assert r.stats == dict(dict.fromkeys(t.STAT_NAMES, 0), frames_read=0, frames_truncated_by_capture=0,
                          capture_faults=0, timestamps_backwards=0)


# ---------------------------------------------------------------------------
# Memory in proportion to need (docs/meter.md "Memory"): any W with default
# options; the window pool and its exhaustion.

@pytest.mark.parametrize("encap", ENCAPS[:3])
def test_window_2_22_with_default_options(encap, tmp_path):
    """W = 2^22 without --max-contexts: the contexts take their inline
    windows, a pool window only for the connection whose pending position
    falls more than 63 behind (its loss found again 100 requests later)."""
    w = 1 << 22
    c = Cap(encap)
    c.reqs(range(1000, 1050))
    c.reqs([1051 + i for i in range(100)])   # 1050 lost ...
    c.req(1050)                              # ... found again: filled
    c.reqs(range(5, 20), qp=0x000200)
    c.reqs([4000000], qp=0x000200)           # a jump of about W: window taken, all pending
    r = c.run(tmp_path, "-a", "--window", str(w), window=w)
    assert len(r.reports) == 2
    assert r.stats["window_pool_taken"] == 2 and r.stats["window_pool_exhausted"] == 0


@pytest.mark.parametrize("encap", ENCAPS[:3])
def test_pool_exhaustion_closes_the_epoch(encap, tmp_path):
    """--max-windows 1: while one connection holds the pool's window, another
    that needs one closes its epoch with stateExhaustion, counted; the
    request starts its new epoch. When the first gives the window back (its
    loss filled), the next one can take it."""
    c = Cap(encap)
    a, b = 0x000100, 0x000200
    c.reqs([10, 12], qp=a)                          # a: 11 lost
    c.reqs(range(13, 90), qp=a)                     # at 75, 11 is more than 63 behind: a takes the window
    c.reqs([100, 102], qp=b)                        # b: 101 lost
    c.reqs(range(103, 170), qp=b)                   # b needs a window at 165: none, stateExhaustion
    c.req(11, qp=a)                                 # a's loss filled: a gives the window back
    c.reqs([170, 172], qp=b)                        # b: 171 lost
    c.reqs(range(173, 250), qp=b)                   # b takes the window
    r = c.run(tmp_path, "-a", "--window", "1024", "--max-windows", "1", window=1024, max_windows=1)
    assert r.stats["window_pool_taken"] == 2 and r.stats["window_pool_exhausted"] == 1
    exhausted = [x for x in r.reports if x["rdmaSequenceFlags"] & t.STATE_EXHAUSTION]
    assert len(exhausted) == 1
    assert exhausted[0]["rdmaDestinationQP"] == b
    assert exhausted[0]["abandonedPsnTotalCount"] == 1 and exhausted[0]["requestPacketTotalCount"] == 64


def test_pool_no_larger_than_the_capture(tmp_path):
    """Replay allocates no more pool windows than its capture has frames
    (docs/meter.md "Replay"): --max-windows 16777216 at W = 2^22 (8.9 TB of
    windows, which no kernel allocates) replays a short capture, and counts
    as the model with that pool does: both connections take a window."""
    w = 1 << 22
    c = Cap((4, ()))
    for qp in (0x100, 0x200):
        c.reqs([0, 100], qp=qp)                    # 1..99 pending, 99 behind: a window each
    r = c.run(tmp_path, "-a", "--window", str(w), "--max-windows", "16777216", window=w, max_windows=16777216)
    assert r.stats["window_pool_taken"] == 2 and r.stats["window_pool_exhausted"] == 0


def test_default_pool_at_w_2_22(tmp_path):
    """With default options (W = 2^22, max_contexts 65536) the automatic
    pool holds as many windows as 32 MiB hold (docs/configuration.md
    max_windows): a window of 2^22 positions is 65536 ring words, 1024 + 16
    summary words and the base, 66577 x 8 = 532,616 bytes; 33,554,432 /
    532,616 = 62.99: 62 windows. 63 connections each leave a position pending
    99 behind the highest: the first 62 take a window, the 63rd closes its
    epoch with stateExhaustion."""
    n = 63
    c = Cap((4, ()))
    for i in range(n):
        c.reqs([0, 100], qp=0x100 + i)
    r = c.run(tmp_path, "-a", window=1 << 22)
    assert r.stats["window_pool_taken"] == 62 and r.stats["window_pool_exhausted"] == 1
    assert all(x["rdmaSequenceWindow"] == 1 << 22 for x in r.reports)


def test_65536_connections_at_w_2_22_with_default_options(tmp_path):
    """65,536 connections in order at W = 2^22 with default options: every
    one is metered (no table_full), none takes a pool window."""
    n = 65536
    base = t.roce_frame("192.0.2.1", "192.0.2.2", 0, 0)
    off = 14 + 20 + 8  # the BTH: Ethernet, IPv4, UDP
    frames = []
    for i in range(2 * n):
        qp, psn = 1 + i % n, i // n
        data = bytearray(base)
        data[off + 5:off + 8] = qp.to_bytes(3, "big")
        data[off + 9:off + 12] = psn.to_bytes(3, "big")
        frames.append(Frame(data, t.T0 + i * 1000))
    path = str(tmp_path / "many.pcap")
    t.write_pcap(path, frames)
    r = t.run_replay(path, tmp_path, "-a", "--window", str(1 << 22))
    assert r.rc == 0, r.stderr
    assert r.stats["eligible_requests"] == 2 * n and r.stats["table_full"] == 0
    assert r.stats["epochs_started"] == n and r.stats["window_pool_taken"] == 0
    assert len(r.reports) == n
    assert all(x["requestPacketTotalCount"] == 2 and x["rdmaSequenceWindow"] == 1 << 22 for x in r.reports)


# ---------------------------------------------------------------------------
# Replay's batches (docs/meter.md "Replay"): several frames per
# BPF_PROG_TEST_RUN, the same results (every test above compares them with
# the model).

@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_replay_runs_frames_in_batches(tmp_path):
    """1,000 frames of two connections take at most one BPF_PROG_TEST_RUN
    per 10 frames (a batch holds about 20 such frames, a report boundary or a
    new second ends one), counted with strace; the reports are the model's."""
    c = Cap((4, ()))
    for i in range(500):
        c.req(100 + i, at_ms=i // 2 + 1)
        c.req(7000 + i, qp=0x000200, at_ms=i // 2 + 1)
    path = str(tmp_path / "b.pcap")
    t.write_pcap(path, [f for f, _, _ in c.items])
    trace = str(tmp_path / "strace.txt")
    r = subprocess.run(["strace", "-f", "-e", "trace=bpf", "-o", trace, t.ROCEMETER, "replay", "-a", "--json",
                        path], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(trace) as f:
        runs = sum(1 for line in f if "BPF_PROG_TEST_RUN" in line)
    assert 0 < runs <= 1000 // 10, runs
    got = [json.loads(x) for x in r.stdout.splitlines()]
    m = t.ReplayModel()
    for f, rec, verdict in c.items:
        m.frame(f.ts_ns, rec=rec, verdict=verdict)
    m.end()
    t.compare_reports(m.reports, got)
