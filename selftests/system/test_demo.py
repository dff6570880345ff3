"""The main job end to end: scripts/demo, as `make demo` runs it.

It must end with every epoch of the bundled NCCL/rping/IPv6 captures stored
by the collector as complete, every Flow Label seen on the far side equal to
`rocemeter flowlabel`'s (an independent computation is tested elsewhere),
the RDMA READ connection disabled, and nothing left behind."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, BPF)")


def pin_namespaces():
    base = "/sys/fs/bpf/rocemeter"
    return [os.path.join(base, d) for d in os.listdir(base)] if os.path.isdir(base) else []


def test_demo_end_to_end():
    before = set(pin_namespaces())
    p = subprocess.run([os.path.join(ROOT, "scripts", "demo")], capture_output=True, text=True, timeout=300)
    out = p.stdout
    assert p.returncode == 0, out[-3000:] + p.stderr[-3000:]
    assert out.rstrip().endswith("demo: done")
    epochs = re.findall(r"^session \d+ domain \d+ epoch \d+: (\w+)", out, re.M)
    # The nine NCCL captures, rping's SEND connection and the IPv6 copy, each
    # connection in its own epoch (idle gaps between the captures).
    assert len(epochs) >= 40 and set(epochs) == {"complete"}, epochs
    assert "DISABLED(profileViolation)" in out  # rping's READ connection
    labels = re.findall(r"^\s+\d+\s+2001:db8::\S+\s+2001:db8::\S+\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+0x[0-9a-f]+ (\w+)$",
                        out, re.M)
    assert len(labels) == 4 and set(labels) == {"ok"}, labels
    assert "rmdemo" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    # Pins are keyed by namespace and ifindex (docs/service.md): none is left in a directory the demo made.
    for ns_dir in set(pin_namespaces()) - before:
        left = [os.path.join(d, f) for d, _, files in os.walk(ns_dir) for f in files]
        assert not left, left
