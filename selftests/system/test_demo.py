"""The main job end to end: scripts/demo, as `make demo` runs it.

It must end with every epoch of the bundled NCCL/rping/IPv6 captures stored
by the collector as complete, every Flow Label seen on the far side equal to
`rocemeter flowlabel`'s (an independent computation is tested elsewhere),
the RDMA READ connection disabled, and nothing left behind.

On the way the demo drops three requests of one connection, swaps two of
another and duplicates one of a third (scripts/demo-gaps). The expected
counters follow from [SEQOBS]'s transitions with the demo's window of 1024
(each connection has fewer requests): a dropped request inside the sequence
is one skipped position, still pending at closure, so abandoned; a swapped
pair is one skipped position filled by the late request; a duplicate is one
repeated PSN. Requests per connection are counted with tshark in the bundled
captures; the stored counters are read back with Python's sqlite3."""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, BPF)")


def pin_namespaces():
    base = "/sys/fs/bpf/rocemeter"
    return [os.path.join(base, d) for d in os.listdir(base)] if os.path.isdir(base) else []


PCAPS = os.path.join(ROOT, "data", "pcaps")
# scripts/demo-gaps: (source, destination, destination QP) of each change
DROPPED = ("172.30.0.25", "172.30.0.11", 0x1D)   # 3 requests left out
SWAPPED = ("172.30.0.12", "172.30.0.25", 0x1D)   # 2 consecutive requests exchanged
DUPLICATED = ("172.30.0.25", "172.30.0.12", 0x1F)  # 1 request sent twice
# the table of `report` and of `report --summary` (docs/man/rocemeter-report.8)
EPOCH_LINE = re.compile(r"^(\S+)\s+\d+\s+(\d+) (complete|incomplete|invalid|open)\s+(\S+) ([0-9.]+),([0-9.]+),"
                        r"(0x[0-9a-f]+)\s+(\d+) (.+)$", re.M)
SUMMARY_LINE = re.compile(r"^\s*(\d+) ([0-9.]+),([0-9.]+),(0x[0-9a-f]+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+"
                          r"(\S+)\s+(\S+) (.+)$", re.M)


def requests_in_captures(conn, prefix="linlinw5_nccl_"):
    """RC SEND/WRITE requests (BTH opcodes 0x00..0x0b) of conn in the bundled captures whose name starts
    with prefix (by default the NCCL captures, which the demo sends), counted by tshark."""
    n = 0
    src, dst, qp = conn
    for name in sorted(os.listdir(PCAPS)):
        if not name.startswith(prefix):
            continue
        out = subprocess.run(["tshark", "-r", os.path.join(PCAPS, name), "-Y",
                              f"ip.src == {src} && ip.dst == {dst} && infiniband.bth.destqp == {qp} && "
                              "infiniband.bth.opcode <= 11", "-T", "fields", "-e", "frame.number"],
                             capture_output=True, text=True, check=True).stdout
        n += len(out.split())
    return n


def section(out, title):
    """The lines of the demo's step whose title starts with title."""
    part = out.split("\n== " + title, 1)[1]
    return part.split("\n== ", 1)[0]


def check_page(html, work):
    """The demo's page at 1,400 x 900 and 1,920 x 1,080 in chromium (test_report_switches.py's checks):
    no label cut, no horizontal scroll, a 24-hour UTC time axis; a screenshot kept under build/."""
    import test_report_switches as sw
    if sw.CHROMIUM is None or not os.path.exists(sw.D3):
        return
    sources = set()
    for line in sw.out(os.path.join(work, "collector.db"), "--json").splitlines():
        k = json.loads(line)["key"]
        sources.add(k.get("sourceIPv4Address") or k["sourceIPv6Address"])
    for width, height in sw.SIZES:
        m = sw.layout(html, work, width, height,
                      shot=os.path.join(ROOT, "build", "demo-report-%d.png" % width) if width == 1400 else None)
        sw.assert_readable(m, width, sorted(sources))


def test_demo_end_to_end():
    before = set(pin_namespaces())
    html = os.path.join(ROOT, "build", "demo-report.html")
    if os.path.exists(html):
        os.remove(html)  # the demo must write it again
    p = subprocess.run([os.path.join(ROOT, "scripts", "demo")], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, ROCEMETER_DEMO_KEEP="1"))
    out = p.stdout
    kept = re.search(r"^demo: kept (\S+)$", out, re.M)
    try:
        assert p.returncode == 0, out[-3000:] + p.stderr[-3000:]
        assert kept and out.rstrip().endswith("demo: done\ndemo: kept " + kept.group(1))
        check_output(out, os.path.join(kept.group(1), "collector.db"))
        check_page(html, kept.group(1))
    finally:
        if kept:
            shutil.rmtree(kept.group(1))
    assert "rmdemo" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    # Pins are keyed by namespace and ifindex (docs/service.md): none is left in a directory the demo made.
    for ns_dir in set(pin_namespaces()) - before:
        left = [os.path.join(d, f) for d, _, files in os.walk(ns_dir) for f in files]
        assert not left, left


def check_output(out, db):
    """What the demo printed and stored."""
    node0 = "linlinw5_nccl_nccl_node0."  # the capture the demo changes: one epoch of each connection
    n_drop, n_swap, n_dup = (requests_in_captures(c, node0) for c in (DROPPED, SWAPPED, DUPLICATED))
    epochs = EPOCH_LINE.findall(section(out, "collector report"))
    # The nine NCCL captures, rping's SEND connection and the IPv6 copy, each
    # connection in its own epoch (idle gaps between the captures); the outcome is
    # report coverage: complete also for the epochs whose sequence is not clean.
    assert len(epochs) >= 40 and {e[2] for e in epochs} == {"complete"}, epochs
    seq = {(e[4], e[5], int(e[6], 16)): e[8] for e in epochs if e[8] != "clean"}
    assert seq == {DROPPED: "never seen 3", SWAPPED: "seen late 1", DUPLICATED: "repeated 1"}, seq
    anomalies = EPOCH_LINE.findall(section(out, "epochs whose sequence is not clean"))
    assert sorted((e[4], e[5], int(e[6], 16), int(e[7]), e[8]) for e in anomalies) == sorted([
        DROPPED + (n_drop - 3, "never seen 3"),
        SWAPPED + (n_swap, "seen late 1"),
        DUPLICATED + (n_dup + 1, "repeated 1")])
    # The summary names the three connections first (most positions never seen, then the other
    # kinds in order: pending, seen late, repeated, unclassified late), over both epochs of each
    # (the connection is in two of the NCCL captures).
    html = os.path.join(ROOT, "build", "demo-report.html")
    assert out.rstrip().splitlines()[-3] == "demo: the HTML report (report --format html --output FILE): " + html
    with open(html) as f:
        assert f.read(15).lower() == "<!doctype html>"
    summary = section(out, "summary per connection")
    assert summary.splitlines()[1].split() == ["OP", "CONNECTION", "EPOCHS", "REQUESTS", "NEVER", "SEEN", "PENDING",
                                               "SEEN", "LATE", "REPEATED", "UNCL", "LATE", "NOT", "COMPLETE"]
    rows = SUMMARY_LINE.findall(summary)
    assert len(rows) == 8
    got = [((r[1], r[2], int(r[3], 16)), int(r[4]), int(r[5]), r[6:11], r[11]) for r in rows[:3]]
    assert got == [
        (DROPPED, 2, requests_in_captures(DROPPED) - 3, ("3", "-", "-", "-", "-"), "-"),
        (SWAPPED, 2, requests_in_captures(SWAPPED), ("-", "-", "1", "-", "-"), "-"),
        (DUPLICATED, 2, requests_in_captures(DUPLICATED) + 1, ("-", "-", "-", "1", "-"), "-")]
    assert all(r[6:11] == ("-",) * 5 for r in rows[3:])
    # every counter of the three epochs, from the store itself
    con = sqlite3.connect(db)
    stored = {(r[0], r[1], r[2]): r[3:] for r in con.execute(
        "SELECT src, dst, dest_qp, requests, skipped, filled, expired, abandoned, pending, repeated, "
        "unclassified_late FROM epochs WHERE skipped > 0 OR repeated > 0 OR unclassified_late > 0")}
    con.close()
    assert stored == {
        DROPPED: (n_drop - 3, 3, 0, 0, 3, 0, 0, 0),
        SWAPPED: (n_swap, 1, 1, 0, 0, 0, 0, 0),
        DUPLICATED: (n_dup + 1, 0, 0, 0, 0, 0, 1, 0)}, stored
    assert "DISABLED(profileViolation)" in out  # rping's READ connection
    labels = re.findall(r"^\s+\d+\s+2001:db8::\S+\s+2001:db8::\S+\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+0x[0-9a-f]+ (\w+)$",
                        out, re.M)
    assert len(labels) == 4 and set(labels) == {"ok"}, labels


def test_two_demos_at_once():
    """Two demos at the same time (two engineers, two CI jobs) do not collide: each has namespaces and
    interfaces of its own, named after its process ID, and its collector on its own namespace's
    loopback (before: fixed names, so the second deleted the first's namespaces). Both end as one
    demo alone does, and leave nothing behind."""
    def netns():
        return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout

    env = dict(os.environ, ROCEMETER_DEMO_KEEP="1")
    demo = os.path.join(ROOT, "scripts", "demo")
    a = subprocess.Popen([demo], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    b = None
    try:
        for _ in range(600):  # the first demo's namespaces exist: start the second one beside it
            if "rmdemo" in netns() or a.poll() is not None:
                break
            time.sleep(0.1)
        b = subprocess.Popen([demo], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        outs = [p.communicate(timeout=600) for p in (a, b)]
    finally:
        for p in (a, b):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    kept = [re.search(r"^demo: kept (\S+)$", out, re.M) for out, _ in outs]
    try:
        for p, (out, err) in zip((a, b), outs):
            assert p.returncode == 0, out[-3000:] + err[-3000:]
            assert ("namespaces rmdemo-snd-%d and rmdemo-rcv-%d" % (p.pid, p.pid)) in out, out[:500]
        for (out, _), k in zip(outs, kept):
            check_output(out, os.path.join(k.group(1), "collector.db"))
    finally:
        for k in kept:
            if k:
                shutil.rmtree(k.group(1))
    assert "rmdemo" not in netns()
