# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter replay` and write errors on its outputs: reports on standard
output (JSON Lines and text), --ipfix-out and --stats-json to a full device
(/dev/full) end the run with exit status 1 and one message naming the output
and the reason. Needs root (BPF) and the built build/rocemeter.
"""
import os
import subprocess

import pytest

import rocetest as t
from rocetest import Frame

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="BPF_PROG_TEST_RUN needs root")

MS = 10**6
SRC, DST = "192.0.2.1", "192.0.2.2"


def run_to(tmp_path, items, stdout_path, *args):
    """replay -a ARGS over items ((ts_ns, qp, psn): RC SEND Only), standard
    output to stdout_path."""
    pcap = str(tmp_path / "w.pcap")
    t.write_pcap(pcap, [Frame(t.roce_frame(SRC, DST, qp, psn), ts) for ts, qp, psn in items])
    with open(stdout_path, "w") as out:
        return subprocess.run([t.ROCEMETER, "replay", "-a", *args, pcap], stdout=out, stderr=subprocess.PIPE,
                              text=True, timeout=300)


def many_epochs(n):
    """n connections, one request each: n final reports."""
    return [(t.T0 + i * MS, 0x1000 + i, 1) for i in range(n)]


@pytest.mark.parametrize("fmt", [["--json"], []], ids=["json", "text"])
@pytest.mark.parametrize("n", [1, 3000])
def test_stdout_full(tmp_path, fmt, n):
    """Reports to a full device (/dev/full): exit status 1 and one message
    naming standard output and the reason (the old replay exited 0)."""
    p = run_to(tmp_path, many_epochs(n), "/dev/full", *fmt)
    assert p.returncode == 1, p.stderr
    assert "standard output" in p.stderr and "No space left on device" in p.stderr, p.stderr


def test_ipfix_out_full(tmp_path):
    """--ipfix-out to a full device, with enough reports to write while
    running: exit status 1 and a message naming the file and the reason
    (the old replay exited 1 without a word)."""
    p = run_to(tmp_path, many_epochs(3000), "/dev/null", "--ipfix-out", "/dev/full")
    assert p.returncode == 1
    assert "/dev/full" in p.stderr and "No space left on device" in p.stderr, p.stderr


def test_stats_json_full(tmp_path):
    """--stats-json to a full device: exit status 1 and a message (the old
    replay exited 0)."""
    p = run_to(tmp_path, many_epochs(2), "/dev/null", "--stats-json", "/dev/full")
    assert p.returncode == 1, p.stderr
    assert "/dev/full" in p.stderr and "No space left on device" in p.stderr, p.stderr


def test_outputs_not_full_exit_0(tmp_path):
    """The same runs to ordinary files exit 0 (the checks above are about
    the device, not the size)."""
    out = tmp_path / "out.jsonl"
    p = run_to(tmp_path, many_epochs(3000), out, "--json", "--ipfix-out", tmp_path / "o.ipfix", "--stats-json",
               tmp_path / "s.json")
    assert p.returncode == 0, p.stderr
    assert len(out.read_text().splitlines()) == 3000


# ---------------------------------------------------------------- text for operators

def iso(ms, digits=3):
    """UNIX ms as ISO-8601 UTC, computed with Python's datetime (independent of the C code)."""
    import datetime
    d = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc).replace(microsecond=(ms % 1000) * 1000)
    text = d.strftime("%Y-%m-%dT%H:%M:%S")
    return text + (".%03dZ" % (ms % 1000) if digits else "")


def test_text_lines_compact_and_wide(tmp_path):
    """Text reports: times in ISO-8601 UTC, the state and the closure reason in
    words, the sequence health in parentheses; the compact default fits a
    terminal (requests and the counters that are not 0), --wide carries every
    field."""
    # qp 0x11 PSN 1 then 3 (closed at the end of input with position 2 never seen:
    # skipped 1, abandoned 1 at closure); qp 0x12 an RDMA READ after a SEND: a profile
    # violation closes its epoch ([SEQOBS] "Applicability"); qp 0x13 PSNs 5, 7, 6 (a swapped
    # pair: skipped 1, filled 1, as [SEQOBS]'s first verification example, no repeat);
    # qp 0x14 PSN 9 twice (repeated 1).
    frames = [Frame(t.roce_frame(SRC, DST, 0x11, 1), t.T0), Frame(t.roce_frame(SRC, DST, 0x11, 3), t.T0 + MS),
              Frame(t.roce_frame(SRC, DST, 0x12, 7), t.T0 + 2 * MS),
              Frame(t.roce_frame(SRC, DST, 0x12, 8, opcode=t.READ_REQUEST), t.T0 + 3 * MS),
              Frame(t.roce_frame(SRC, DST, 0x13, 5), t.T0 + 4 * MS), Frame(t.roce_frame(SRC, DST, 0x13, 7), t.T0 + 5 * MS),
              Frame(t.roce_frame(SRC, DST, 0x13, 6), t.T0 + 6 * MS), Frame(t.roce_frame(SRC, DST, 0x14, 9), t.T0 + 7 * MS),
              Frame(t.roce_frame(SRC, DST, 0x14, 9), t.T0 + 8 * MS)]
    pcap = str(tmp_path / "t.pcap")
    t.write_pcap(pcap, frames)
    js = [__import__("json").loads(x) for x in subprocess.run(
        [t.ROCEMETER, "replay", "-a", "--json", pcap], capture_output=True, text=True, check=True).stdout.splitlines()]
    compact = subprocess.run([t.ROCEMETER, "replay", "-a", pcap], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    wide = subprocess.run([t.ROCEMETER, "replay", "-a", "--wide", pcap], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    assert len(js) == len(compact) == len(wide) == 4
    by_qp = {r["rdmaDestinationQP"]: (r, c, w) for r, c, w in zip(js, compact, wide)}

    def head(r):
        return "%s %s > %s qp 0x%06x e%d r1" % (iso(r["flowEndMilliseconds"], 0), SRC, DST, r["rdmaDestinationQP"],
                                                r["rdmaSequenceEpochId"])
    r, c, w = by_qp[0x12]
    assert c == head(r) + " closed: profile violation (clean) req=1"
    assert "%s .. %s" % (iso(r["flowStartMilliseconds"]), iso(r["flowEndMilliseconds"])) in w
    assert "closed: profile violation (clean) [finalEpoch,profileViolation,generationUnverified]" in w
    assert "pkey 0xffff" in w and "abandoned=0" in w and "pending=0" in w
    r, c, w = by_qp[0x11]
    assert c == head(r) + " closed (never seen) req=2 skip=1 aban=1"
    assert "closed (never seen) [" in w and "skipped=1 filled=0 expired=0 abandoned=1 pending=0" in w
    r, c, w = by_qp[0x13]
    assert c == head(r) + " closed (seen late) req=3 skip=1 fill=1"
    assert "skipped=1 filled=1 expired=0 abandoned=0 pending=0 repeated=0" in w
    r, c, w = by_qp[0x14]
    assert c == head(r) + " closed (repeated) req=2 rep=1"
    assert all(len(x) <= 120 for x in compact)  # IPv4 addresses: one line of a 120-column terminal


def test_text_open_epoch_pending(tmp_path):
    """A periodic report of an open epoch shows its pending positions: PSN 1 then 3 with a
    report interval of 10 ms, and a later request of another connection past the boundary,
    so the open epoch gets a non-final report (pending 1) before its final (abandoned 1)
    at the end of input (docs/architecture.md "Time")."""
    frames = [Frame(t.roce_frame(SRC, DST, 0x21, 1), t.T0), Frame(t.roce_frame(SRC, DST, 0x21, 3), t.T0 + MS),
              Frame(t.roce_frame(SRC, DST, 0x22, 1), t.T0 + 30 * MS)]
    pcap = str(tmp_path / "p.pcap")
    t.write_pcap(pcap, frames)
    lines = subprocess.run([t.ROCEMETER, "replay", "-a", "--report-interval", "10", pcap], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    mine = [x.split(" e", 1)[1].split(" ", 1)[1] for x in lines if " qp 0x000021 " in x]
    assert mine == ["r1 open (pending) req=2 skip=1 pend=1", "r2 closed (never seen) req=2 skip=1 aban=1"], lines


def test_progress_line_only_on_a_terminal(tmp_path):
    """Long replays show their progress on standard error when it is a
    terminal, rewritten in place and cleared at the end; never in a pipe."""
    import pty
    pcap = str(tmp_path / "p.pcap")
    n = 70000  # more than one progress step (65536 frames)
    t.write_pcap(pcap, [Frame(t.roce_frame(SRC, DST, 0x20, 1 + i), t.T0 + i * 1000) for i in range(n)])
    master, slave = pty.openpty()
    p = subprocess.run([t.ROCEMETER, "replay", "-a", "--json", pcap], stdout=subprocess.DEVNULL, stderr=slave,
                       timeout=300)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert p.returncode == 0
    assert b"\rreplay: 65536 of %d frames (93%%)" % n in out, out[:300]
    assert b"\rreplay: %d of %d frames (100%%)\r\x1b[K" % (n, n) in out
    piped = subprocess.run([t.ROCEMETER, "replay", "-a", "--json", pcap], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=300)
    assert piped.returncode == 0 and b"\r" not in piped.stderr and b"of %d frames" % n not in piped.stderr


@pytest.mark.parametrize("fmt", [["--json"], []], ids=["json", "text"])
def test_ipfix_out_also_prints(tmp_path, fmt):
    """--ipfix-out FILE "also" writes the reports (replay --help, rocemeter-replay.8): standard
    output keeps them, one final report per connection (3 connections, one request each)."""
    plain = run_to(tmp_path, many_epochs(3), tmp_path / "plain.out", *fmt)
    assert plain.returncode == 0, plain.stderr
    ipfix = tmp_path / "o.ipfix"
    both = run_to(tmp_path, many_epochs(3), tmp_path / "both.out", *fmt, "--ipfix-out", ipfix)
    assert both.returncode == 0, both.stderr
    lines = (tmp_path / "both.out").read_text().splitlines()
    assert len(lines) == 3, lines
    assert lines == (tmp_path / "plain.out").read_text().splitlines()
    assert ipfix.stat().st_size > 0
