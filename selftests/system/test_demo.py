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


def test_demo_end_to_end():
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
    assert not os.path.exists("/sys/fs/bpf/rocemeter/rmdemo-r")
    assert not os.path.exists("/sys/fs/bpf/rocemeter/rmdemo-s")
