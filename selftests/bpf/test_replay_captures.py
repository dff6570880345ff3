# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter replay` (the real XDP meter under BPF_PROG_TEST_RUN) over the
real RoCEv2 captures in shared/data/pcaps beside the checkout (see SOURCES.md there).

tshark decodes every capture independently; the expected reports and
statistics come from tests/lib/rocetest.py's Python model of [SEQOBS] fed with
tshark's fields (addresses, destination QP, opcode, PSN, P_Key, arrival
time), never from running the tool. Needs root (BPF) and the built
build/rocemeter.
"""
import glob
import os
import subprocess
from collections import defaultdict

import pytest

import rocetest as t

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="BPF_PROG_TEST_RUN needs root")
if not os.path.isdir(t.PCAPS):
    pytest.skip("the project's shared captures are not beside the checkout (../shared/data/pcaps); "
                "set ROCEMETER_PCAPS to their folder", allow_module_level=True)

ALL = sorted(glob.glob(os.path.join(t.PCAPS, "*.pcap")))
NCCL = [p for p in ALL if "_nccl_" in os.path.basename(p)]
READ_CAPS = [os.path.join(t.PCAPS, n) for n in (
    "linlinw5_rping.pcap", "linlinw5_rdma_read_bw.pcap", "linlinw5_rdma_read_lat.pcap",
    "montybeatnik_roce_capture_read-write-ecn.pcap", "montybeatnik_test.pcap")]
REQUEST_OPS = range(0x00, 0x0C)       # SEND and RDMA WRITE ([SEQOBS] profile)
RESPONSE_OPS = range(0x0D, 0x13)      # READ responses, ACK, ATOMIC ACK

_tshark_cache = {}


def decoded(path):
    if path not in _tshark_cache:
        _tshark_cache[path] = t.tshark_frames(path)
    return _tshark_cache[path]


def model_of(frames, **kw):
    m = t.ReplayModel(**kw)
    for f in frames:
        m.frame(f["ts_ns"], rec=f["rec"])
    return m.end()


def ids(paths):
    return [os.path.basename(p) for p in paths]


def test_captures_present():
    # 20 linlinw5 + oferby + 2 montybeatnik + the scapy CNP (SOURCES.md).
    assert len(ALL) == 24 and len(NCCL) == 9


@pytest.mark.parametrize("path", ALL, ids=ids(ALL))
def test_capture_matches_model(path, tmp_path):
    """Every capture replays with exit 0; frame count = tshark's; every
    statistic and every report = the model's."""
    frames = decoded(path)
    r = t.run_replay(path, tmp_path, "--provision-all")
    assert r.rc == 0, r.stderr
    assert r.stats["frames_read"] == len(frames)
    assert r.stats["frames"] == len(frames)
    m = model_of(frames)
    assert r.stats == t.expected_stats(m)
    t.compare_reports(m.reports, r.reports)


def request_psns(frames):
    """Per key, the PSNs of SEND/WRITE requests in capture order (tshark)."""
    out = defaultdict(list)
    for f in frames:
        rec = f["rec"]
        if rec and rec.opcode in REQUEST_OPS:
            out[rec.key].append(rec.psn)
    return out


@pytest.mark.parametrize("path", NCCL, ids=ids(NCCL))
def test_nccl_one_epoch_per_connection(path, tmp_path):
    """NCCL: RC WRITE / WRITE with immediate only, initial PSN 0. One final
    epoch per connection (src, dst, dest QP, P_Key) whose request count is
    tshark's count of opcodes 0x00..0x0B, skipped 0, generationUnverified."""
    frames = decoded(path)
    psns = request_psns(frames)
    assert psns, "no RC request in %s" % path
    # The capture's claim (SOURCES.md): PSNs advance by one from 0 -> nothing skipped.
    for key, seq in psns.items():
        assert seq == list(range(seq[0], seq[0] + len(seq))), key
    r = t.run_replay(path, tmp_path, "--provision-all")
    assert r.rc == 0, r.stderr
    got = {}
    for rep in r.reports:
        k = t.report_key(rep)
        assert k not in got, "two epochs for %r" % (k,)
        got[k] = rep
    assert set(got) == set(psns)
    for k, rep in got.items():
        assert rep["requestPacketTotalCount"] == len(psns[k])
        for f in ("skippedPsnTotalCount", "filledPsnTotalCount", "expiredPsnTotalCount",
                  "abandonedPsnTotalCount", "pendingPsnCount", "repeatedPsnTotalCount",
                  "unclassifiedLatePacketTotalCount"):
            assert rep[f] == 0, f
        assert rep["rdmaSequenceFlags"] == t.FINAL | t.GENERATION_UNVERIFIED
        assert rep["rdmaSequenceReportId"] == 1
    assert r.stats["eligible_requests"] == sum(len(v) for v in psns.values())
    assert r.stats["profile_violations"] == 0 and r.stats["disabled_requests"] == 0


@pytest.mark.parametrize("path", NCCL[:3], ids=ids(NCCL[:3]))
@pytest.mark.parametrize("args,kw", [
    (["--window", "1"], {"window": 1}),
    (["--window", "4194304", "--max-contexts", "64"], {"window": 4194304}),
    (["--report-interval", "1000"], {"interval_ms": 1000}),
    (["--report-interval", "3000", "--window", "7"], {"interval_ms": 3000, "window": 7}),
], ids=["W1", "Wmax", "interval1s", "interval3s-W7"])
def test_nccl_window_and_interval(path, args, kw, tmp_path):
    frames = decoded(path)
    r = t.run_replay(path, tmp_path, "--provision-all", *args)
    assert r.rc == 0, r.stderr
    m = model_of(frames, **kw)
    if "interval_ms" in kw:
        assert any(not e["final"] for e in m.reports)  # the interval does produce snapshots here
    t.compare_reports(m.reports, r.reports)
    assert r.stats == t.expected_stats(m)


def keys_with(frames, ops):
    return {f["rec"].key for f in frames if f["rec"] and f["rec"].opcode in ops}


@pytest.mark.parametrize("path", READ_CAPS, ids=ids(READ_CAPS))
def test_read_disables_connection(path, tmp_path):
    """The connection carrying an RDMA READ request is disabled: nothing of it
    is counted after the READ; responses and ACKs are never requests."""
    frames = decoded(path)
    read_keys = keys_with(frames, {t.READ_REQUEST})
    assert read_keys
    r = t.run_replay(path, tmp_path, "--provision-all")
    assert r.rc == 0, r.stderr
    # Independent count of what follows the first READ on its connection.
    first_read_ns = {}
    disabled = 0
    for f in frames:
        rec = f["rec"]
        if not rec or rec.opcode >= 0x20 or rec.opcode in RESPONSE_OPS:
            continue
        if rec.key in first_read_ns:
            disabled += 1
        elif rec.opcode == t.READ_REQUEST:
            first_read_ns[rec.key] = f["ts_ns"]
    assert r.stats["profile_violations"] == len(read_keys)
    assert r.stats["disabled_requests"] == disabled
    for rep in r.reports:
        k = t.report_key(rep)
        if k in first_read_ns:
            assert rep["flowEndMilliseconds"] <= first_read_ns[k] // 10**6
            assert rep["rdmaSequenceFlags"] == t.FINAL | t.PROFILE_VIOLATION | t.GENERATION_UNVERIFIED
    # Keys that only ever carry responses/ACKs get no report.
    only_resp = keys_with(frames, RESPONSE_OPS) - keys_with(frames, set(range(0x00, 0x20)) - set(RESPONSE_OPS))
    assert not only_resp & {t.report_key(x) for x in r.reports}
    assert r.stats["responses"] == sum(1 for f in frames if f["rec"] and f["rec"].opcode in RESPONSE_OPS)


def test_rping_read_closes_open_epoch(tmp_path):
    """rping without its first READ request (frame 6, removed with editcap):
    SENDs/WRITEs open an epoch on 10.1.16.61 > 10.1.16.62 QP 0x2c, the next
    READ closes it with profileViolation + finalEpoch and later requests of
    that connection count nothing."""
    src = os.path.join(t.PCAPS, "linlinw5_rping.pcap")
    cut = str(tmp_path / "rping-cut.pcap")
    subprocess.run(["editcap", src, cut, "6"], check=True, capture_output=True)
    frames = decoded(cut)
    key = t.make_key("10.1.16.61", "10.1.16.62", 0x2c)
    before = []
    for f in frames:
        rec = f["rec"]
        if rec and rec.key == key:
            if rec.opcode == t.READ_REQUEST:
                break
            if rec.opcode in REQUEST_OPS:
                before.append(rec.psn)
    assert len(before) >= 2
    r = t.run_replay(cut, tmp_path, "--provision-all")
    assert r.rc == 0, r.stderr
    mine = [x for x in r.reports if t.report_key(x) == key]
    assert len(mine) == 1
    assert mine[0]["requestPacketTotalCount"] == len(before)
    assert mine[0]["rdmaSequenceFlags"] == t.FINAL | t.PROFILE_VIOLATION | t.GENERATION_UNVERIFIED
    assert mine[0]["pendingPsnCount"] == 0
    assert r.stats["epochs_closed_in_datapath"] == 1
    m = model_of(frames)
    t.compare_reports(m.reports, r.reports)
    assert r.stats == t.expected_stats(m)


def test_cnp_changes_nothing(tmp_path):
    path = os.path.join(t.PCAPS, "scapy_test_cx4lx_cnp.pcap")
    r = t.run_replay(path, tmp_path, "--provision-all")
    assert r.rc == 0, r.stderr
    assert r.reports == []
    assert r.stdout == ""
    expected = dict.fromkeys(t.STAT_NAMES, 0)
    expected.update(frames=1, rocev2=1, cnp=1, frames_read=1, frames_truncated_by_capture=0, capture_faults=0,
                    timestamps_backwards=0)
    assert r.stats == expected


def test_atomics_are_violations(tmp_path):
    path = os.path.join(t.PCAPS, "linlinw5_rdma_atomic_bw.pcap")
    frames = decoded(path)
    atomics = [f for f in frames if f["rec"] and f["rec"].opcode in (t.CMP_SWAP, t.FETCH_ADD)]
    assert len(atomics) == 5 and len({f["rec"].key for f in atomics}) == 1
    r = t.run_replay(path, tmp_path, "--provision-all")
    assert r.rc == 0, r.stderr
    assert r.reports == []
    assert r.stats["profile_violations"] == 1          # the first one disables the connection
    assert r.stats["disabled_requests"] == len(atomics) - 1
    assert r.stats["eligible_requests"] == 0


@pytest.mark.parametrize("name", ["linlinw5_pingpong_uc.pcap", "linlinw5_pingpong_ud.pcap", "linlinw5_rdma_cm.pcap"])
def test_uc_ud_not_metered(name, tmp_path):
    path = os.path.join(t.PCAPS, name)
    frames = decoded(path)
    other = [f for f in frames if f["rec"] and f["rec"].opcode >= 0x20 and f["rec"].opcode != t.CNP]
    assert other
    r = t.run_replay(path, tmp_path, "--provision-all")
    assert r.rc == 0, r.stderr
    assert r.stats["other_transport"] == len(other)
    rc_keys = keys_with(frames, REQUEST_OPS)
    assert {t.report_key(x) for x in r.reports} == rc_keys
    if "pingpong" in name:
        assert r.reports == [] and not rc_keys


def test_nothing_provisioned(tmp_path):
    """Without --provision-all or [provision] nothing is metered: every
    request is counted as not provisioned, no report."""
    path = NCCL[0]
    frames = decoded(path)
    r = t.run_replay(path, tmp_path)
    assert r.rc == 0
    assert "nothing is provisioned" in r.stderr
    assert r.reports == []
    m = model_of(frames, provisioned=lambda k: False)
    assert r.stats == t.expected_stats(m)
    assert r.stats["not_provisioned"] == sum(len(v) for v in request_psns(frames).values())


def test_pcapng_same_as_pcap(tmp_path):
    src = NCCL[0]
    ng = str(tmp_path / "node0.pcapng")
    subprocess.run(["editcap", "-F", "pcapng", src, ng], check=True, capture_output=True)
    a = t.run_replay(src, tmp_path, "--provision-all")
    b = t.run_replay(ng, tmp_path, "--provision-all")
    assert a.rc == 0 and b.rc == 0
    t.compare_reports(model_of(decoded(src)).reports, b.reports)
    assert a.stats == b.stats


def test_several_files_one_stream(tmp_path):
    """Files given together are one stream, in the order given."""
    files = [os.path.join(t.PCAPS, "linlinw5_rdma_write_lat.pcap"), os.path.join(t.PCAPS, "linlinw5_rping.pcap"),
             os.path.join(t.PCAPS, "oferby_proxy_roce.pcap")]
    frames = [f for p in files for f in decoded(p)]
    r = t.run_replay(files, tmp_path, "--provision-all")
    assert r.rc == 0, r.stderr
    m = model_of(frames)
    assert r.stats == t.expected_stats(m)
    t.compare_reports(m.reports, r.reports)
