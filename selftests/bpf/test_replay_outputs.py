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
