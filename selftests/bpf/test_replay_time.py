# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter replay` and capture time (docs/architecture.md "Time"):
periodic reports across gaps of capture time (an hour, two months, a first
frame stamped 1970), idle expiry before periodic reports, timestamps that go
backwards, near 0 or past 2038.

Expected reports are written from the documented rules (a non-final report
of an epoch is due at a --report-interval boundary only if the epoch counted
a request since its last report; idle expiry as of the boundary first; the
capture clock made non-decreasing) and checked again against the Python
model in tests/lib/rocetest.py. Every run reads at most a bounded number of
report lines, so that an unbounded schedule fails the test instead of filling
memory. Needs root (BPF) and the built build/rocemeter.
"""
import json
import os
import subprocess

import pytest

import rocetest as t
from rocetest import FINAL, GENERATION_UNVERIFIED as GEN, Frame, Rec

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="BPF_PROG_TEST_RUN needs root")

MS = 10**6
S = 10**9
DAY = 86400 * S
SRC, DST = "192.0.2.1", "192.0.2.2"
QA, QB = 0x000100, 0x000200


class Run:
    def __init__(self, rc, reports, stats, stderr):
        self.rc, self.reports, self.stats, self.stderr = rc, reports, stats, stderr


def frames_of(items):
    """items: (ts_ns, qp, psn) -> Frame list (RC SEND Only, IPv4)."""
    return [Frame(t.roce_frame(SRC, DST, qp, psn), ts) for ts, qp, psn in items]


def replay_bounded(tmp_path, items, *args, max_reports, conf=None):
    """Replay items with --json, reading at most max_reports lines: a run
    that prints more is killed and the test fails (the bound is what the
    rules allow; the old schedule printed without end)."""
    pcap = str(tmp_path / "in.pcap")
    t.write_pcap(pcap, frames_of(items))
    stats_file = str(tmp_path / "stats.json")
    if os.path.exists(stats_file):
        os.unlink(stats_file)
    cmd = [t.ROCEMETER, "replay", "--json", "--stats-json", stats_file]
    if conf is not None:
        path = tmp_path / "replay.conf"
        path.write_text(conf)
        cmd += ["--config", str(path)]
    else:
        cmd += ["-a"]
    cmd += [str(a) for a in args] + [pcap]
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if len(lines) > max_reports:
                proc.kill()
                proc.wait()
                pytest.fail("more than %d reports (%s)" % (max_reports, " ".join(cmd)))
        rc = proc.wait(timeout=300)  # a guard against a hang, not a measurement
    stats = None
    if os.path.exists(stats_file):
        with open(stats_file) as f:
            stats = json.load(f)
    return Run(rc, [json.loads(x) for x in lines if x.strip()], stats, err_path.read_text())


def model_of(items, **kw):
    m = t.ReplayModel(**kw)
    for ts, qp, psn in items:
        m.frame(ts, rec=Rec(t.make_key(SRC, DST, qp), t.SEND_ONLY, psn))
    return m.end()


def check_with_model(r, items, **kw):
    assert r.rc == 0, r.stderr
    m = model_of(items, **kw)
    t.compare_reports(m.reports, r.reports)
    assert r.stats == t.expected_stats(m)
    for x in r.reports:
        assert x["flowEndMilliseconds"] >= x["flowStartMilliseconds"], x
    # Bounded output: per epoch at most one non-final report per request,
    # plus its final.
    assert len(r.reports) <= r.stats["eligible_requests"] + r.stats["epochs_started"]


def brief(x):
    return (x["rdmaDestinationQP"], x["rdmaSequenceReportId"], x["rdmaSequenceFlags"],
            x["requestPacketTotalCount"], x["flowStartMilliseconds"], x["flowEndMilliseconds"])


NO_IDLE = "[meter]\nprovision_all = yes\nidle_timeout_ms = 0\n"


# --------------------------------------------------------------------------
# Periodic reports across gaps of capture time.

def test_hour_gap_interval_1s(tmp_path):
    """Two frames of one connection an hour apart, -i 1000, idle 60 s: the
    first epoch is reported once at the first boundary (1 s, it changed),
    never again unchanged; the idle sweep at the second frame closes it;
    the second frame starts a new epoch closed at the end: 3 reports (the
    old schedule wrote one per second of the hour: 3,602)."""
    items = [(t.T0, QA, 1), (t.T0 + 3600 * S, QA, 2)]
    r = replay_bounded(tmp_path, items, "-i", "1000", max_reports=10)
    assert r.rc == 0, r.stderr
    t0, t1 = t.T0 // MS, (t.T0 + 3600 * S) // MS
    assert [brief(x) for x in r.reports] == [
        (QA, 1, GEN, 1, t0, t0),            # boundary at 1 s
        (QA, 2, FINAL | GEN, 1, t0, t0),    # idle sweep before the second frame
        (QA, 1, FINAL | GEN, 1, t1, t1),    # end of input
    ]
    check_with_model(r, items, interval_ms=1000)


def test_two_month_gap_interval_1ms_no_idle(tmp_path):
    """idle_timeout_ms = 0 (never) and -i 1 across 61 days: one epoch, one
    non-final report when it changed, then its final; the old schedule
    walked every millisecond of the gap (5.3e9 walks)."""
    items = [(t.T0, QA, 1), (t.T0 + 61 * DAY, QA, 2)]
    r = replay_bounded(tmp_path, items, "-i", "1", conf=NO_IDLE, max_reports=10)
    assert r.rc == 0, r.stderr
    t0, t1 = t.T0 // MS, (t.T0 + 61 * DAY) // MS
    assert [brief(x) for x in r.reports] == [(QA, 1, GEN, 1, t0, t0), (QA, 2, FINAL | GEN, 2, t0, t1)]
    check_with_model(r, items, interval_ms=1, idle_timeout_ms=0)


def test_first_frame_1970(tmp_path):
    """A first frame stamped 1 s after the UNIX epoch, the rest 53 years
    later, -i 1: the 1970 epoch is reported at its first boundary, closed
    idle at the next frame; the new epoch is reported at each 1 ms boundary
    after which it changed."""
    items = [(1 * S, QA, 1), (t.T0, QA, 2), (t.T0 + 1 * MS, QA, 3), (t.T0 + 2 * MS, QA, 4)]
    r = replay_bounded(tmp_path, items, "-i", "1", max_reports=10)
    assert r.rc == 0, r.stderr
    t0 = t.T0 // MS
    assert [brief(x) for x in r.reports] == [
        (QA, 1, GEN, 1, 1000, 1000),
        (QA, 2, FINAL | GEN, 1, 1000, 1000),
        (QA, 1, GEN, 1, t0, t0),                  # boundary t0 + 1 ms, before PSN 3
        (QA, 2, GEN, 2, t0, t0 + 1),              # boundary t0 + 2 ms, before PSN 4
        (QA, 3, FINAL | GEN, 3, t0, t0 + 2),
    ]
    check_with_model(r, items, interval_ms=1)


def test_untouched_epoch_not_reported_again(tmp_path):
    """Two connections, -i 10: A is silent after 2 ms, B sends every 10 ms:
    B is reported at every boundary, A only at the first one."""
    items = [(t.T0, QA, 1), (t.T0 + 2 * MS, QA, 2)]
    items += [(t.T0 + (1 + 10 * i) * MS, QB, 100 + i) for i in range(6)]
    items.sort()
    r = replay_bounded(tmp_path, items, "-i", "10", max_reports=20)
    assert r.rc == 0, r.stderr
    qa = [x for x in r.reports if x["rdmaDestinationQP"] == QA]
    qb = [x for x in r.reports if x["rdmaDestinationQP"] == QB]
    assert [(x["rdmaSequenceReportId"], x["rdmaSequenceFlags"]) for x in qa] == [(1, GEN), (2, FINAL | GEN)]
    # B: boundaries at 10, 20, 30, 40, 50 ms each after a new request; final at the end.
    assert [x["requestPacketTotalCount"] for x in qb] == [1, 2, 3, 4, 5, 6]
    check_with_model(r, items, interval_ms=10)


def test_idle_expiry_before_the_boundary(tmp_path):
    """idle_timeout_ms = 1000, -i 5000: A's last request is at 100 ms; the
    next frame comes at 20 s. At the first boundary (5 s) A has been silent
    for 4.9 s, longer than the timeout: it gets its final, no non-final
    report of an expired epoch first."""
    conf = "[meter]\nprovision_all = yes\nidle_timeout_ms = 1000\n"
    items = [(t.T0, QA, 1), (t.T0 + 100 * MS, QA, 2), (t.T0 + 20 * S, QB, 7)]
    r = replay_bounded(tmp_path, items, "-i", "5000", conf=conf, max_reports=10)
    assert r.rc == 0, r.stderr
    t0 = t.T0 // MS
    assert [brief(x) for x in r.reports] == [
        (QA, 1, FINAL | GEN, 2, t0, t0 + 100),
        (QB, 1, FINAL | GEN, 1, t0 + 20000, t0 + 20000),
    ]
    check_with_model(r, items, interval_ms=5000, idle_timeout_ms=1000)


def test_gaps_and_steps_bounded(tmp_path):
    """Several connections, gaps from 1 ms to 30 years, steps back, with
    and without idle expiry and intervals: the reports equal the model's
    and never exceed requests + epochs."""
    items, ts = [], t.T0
    gaps = [1 * MS, 3 * MS, 2 * S, -5 * MS, 90 * S, 7 * DAY, -3 * S, 1 * MS, 30 * 365 * DAY, 4 * MS, -40 * 365 * DAY,
            2 * MS, 11 * S]
    psn = {QA: 10, QB: 500, 0x300: 9000}
    qps = [QA, QB, 0x300]
    for i, g in enumerate(gaps):
        ts += g
        qp = qps[i % 3]
        psn[qp] += 1 + (i % 2)
        items.append((ts, qp, psn[qp]))
    for interval in (1, 10, 1000):
        for idle in (0, 500, 60000):
            conf = "[meter]\nprovision_all = yes\nidle_timeout_ms = %d\n" % idle
            r = replay_bounded(tmp_path, items, "-i", str(interval), conf=conf, max_reports=2 * len(items) + 4)
            check_with_model(r, items, interval_ms=interval, idle_timeout_ms=idle)


# --------------------------------------------------------------------------
# Timestamps that go backwards, and timestamps near 0.

def test_backwards_step_never_ends_before_start(tmp_path):
    """A frame stamped 5 ms before the previous one arrives at the latest
    time seen (10 ms): flowEnd = flowStart, counted once in
    timestamps_backwards (the old replay exported flowEnd < flowStart)."""
    items = [(t.T0 + 10 * MS, QA, 1), (t.T0 + 5 * MS, QA, 2)]
    r = replay_bounded(tmp_path, items, max_reports=5)
    assert r.rc == 0, r.stderr
    t10 = (t.T0 + 10 * MS) // MS
    assert [brief(x) for x in r.reports] == [(QA, 1, FINAL | GEN, 2, t10, t10)]
    assert r.stats["timestamps_backwards"] == 1
    check_with_model(r, items)


def test_backwards_epoch_start_is_clock_time(tmp_path):
    """An epoch whose first frame is stamped back in time starts at the
    clock's time (the latest seen), not before it."""
    items = [(t.T0 + 10 * MS, QA, 1), (t.T0 + 3 * MS, QB, 1), (t.T0 + 12 * MS, QB, 2)]
    r = replay_bounded(tmp_path, items, max_reports=5)
    assert r.rc == 0, r.stderr
    t0 = t.T0 // MS
    assert sorted(brief(x) for x in r.reports) == [(QA, 1, FINAL | GEN, 1, t0 + 10, t0 + 10),
                                                   (QB, 1, FINAL | GEN, 2, t0 + 10, t0 + 12)]
    assert r.stats["timestamps_backwards"] == 1
    check_with_model(r, items)


def test_step_back_to_near_zero_no_idle_closure(tmp_path):
    """A frame stamped 1 ms after the UNIX epoch between two frames of
    2023: no idle closure (the old replay took it as the epoch's last
    arrival, then the next frame looked 53 years later and closed the epoch
    idle in the datapath), one epoch of 3 requests."""
    items = [(t.T0, QA, 1), (1 * MS, QA, 2), (t.T0 + 1 * MS, QA, 3)]
    r = replay_bounded(tmp_path, items, max_reports=5)
    assert r.rc == 0, r.stderr
    t0 = t.T0 // MS
    assert [brief(x) for x in r.reports] == [(QA, 1, FINAL | GEN, 3, t0, t0 + 1)]
    assert r.stats["epochs_started"] == 1 and r.stats["epochs_closed_in_datapath"] == 0
    assert r.stats["timestamps_backwards"] == 1
    check_with_model(r, items)


@pytest.mark.parametrize("interval", [None, 1, 1000])
def test_capture_starting_at_zero(tmp_path, interval):
    """A capture stamped from 0 (1970-01-01T00:00:00Z): times below the idle
    timeout are not mistaken for silence; one epoch."""
    items = [(i * 7 * MS, QA, 1 + i) for i in range(5)]
    args = ["-i", str(interval)] if interval else []
    r = replay_bounded(tmp_path, items, *args, max_reports=10)
    assert r.rc == 0, r.stderr
    assert r.stats["epochs_started"] == 1
    assert r.reports[-1]["rdmaSequenceFlags"] == FINAL | GEN
    assert (r.reports[-1]["flowStartMilliseconds"], r.reports[-1]["flowEndMilliseconds"]) == (0, 28)
    check_with_model(r, items, interval_ms=interval)


def test_pcap_seconds_after_2038(tmp_path):
    """The classic pcap format's seconds field is unsigned 32 bits (to
    2106); libpcap hands it over signed. Frames of 2040 and 2100 are read at
    the times tshark reads (the old replay took them as 1904 and 1964,
    wrapped to year 2500)."""
    y2040, y2100 = 2208988800 * S, 4102444800 * S
    items = [(y2040, QA, 1), (y2040 + 3 * MS, QA, 2), (y2100, QB, 1)]
    r = replay_bounded(tmp_path, items, max_reports=5)
    assert r.rc == 0, r.stderr
    dec = t.tshark_frames(str(tmp_path / "in.pcap"))
    assert [d["ts_ns"] for d in dec] == [ts for ts, _, _ in items]
    assert [brief(x) for x in r.reports] == [
        (QA, 1, FINAL | GEN, 2, dec[0]["ts_ns"] // MS, dec[1]["ts_ns"] // MS),
        (QB, 1, FINAL | GEN, 1, dec[2]["ts_ns"] // MS, dec[2]["ts_ns"] // MS)]
    check_with_model(r, items)
