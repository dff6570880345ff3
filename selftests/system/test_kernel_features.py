# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`attach` probes the kernel's BPF features before it loads the meter (docs/requirements.md).

This kernel has every feature, so each refusal is forced: ROCEMETER_TEST_KERNEL_LACKS (test only,
user/meter/features.h) makes the probe of the named feature report it absent. For each, attach on a
veth made here exits 1 naming the feature and the first kernel that has it (docs/requirements.md's
table, from the kernel's history), and leaves no XDP program and no pins behind. The VLAN RX metadata
kfunc is needed only by namespace = vlan in native mode: without that, its absence changes nothing.
"""
import os
import subprocess
import time

import pytest

import rocetest as rt

ROCEMETER = rt.ROCEMETER
PID = os.getpid()
DEV, PEER = "rmkf%d" % PID, "rmkg%d" % PID
ENV = "ROCEMETER_TEST_KERNEL_LACKS"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (XDP, bpffs)")

# name in the test list -> what the message names, first mainline kernel (docs/requirements.md)
FEATURES = {
    "ringbuf": ("BPF_MAP_TYPE_RINGBUF", "5.8"),
    "spin_lock": ("bpf_spin_lock", "5.1"),
    "ktime_get_coarse_ns": ("bpf_ktime_get_coarse_ns", "5.11"),
    "xdp_load_bytes": ("bpf_xdp_load_bytes", "5.18"),
    "iter_num": ("bpf_iter_num_new", "6.4"),
}


@pytest.fixture
def veth():
    subprocess.run(["ip", "link", "add", DEV, "type", "veth", "peer", "name", PEER], check=True)
    try:
        for d in (DEV, PEER):
            subprocess.run(["ip", "link", "set", d, "up"], check=True)
        yield rt.pin_dir(DEV)
    finally:
        subprocess.run([ROCEMETER, "detach", DEV], capture_output=True)
        subprocess.run(["ip", "link", "del", DEV], capture_output=True)


def attach(lacks, *args):
    env = dict(os.environ, **{ENV: lacks})
    return subprocess.Popen([ROCEMETER, "attach", DEV, *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def refused(p):
    """attach's exit status and standard error; an attach that did not exit is killed (a failure)."""
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail("attach did not refuse: it was still running after 60 s")
    return p.returncode, err


def xdp_on(dev):
    return " xdp" in subprocess.run(["ip", "link", "show", "dev", dev], capture_output=True, text=True).stdout


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_missing_feature_is_named_at_attach(veth, name):
    what, since = FEATURES[name]
    rc, err = refused(attach(name))
    assert rc == 1, err
    assert "the kernel lacks" in err and what in err and "(Linux %s or later; docs/requirements.md)" % since in err, err
    assert not xdp_on(DEV) and not os.path.exists(os.path.join(veth, "contexts")), err


def test_vlan_metadata_kfunc(veth, tmp_path):
    conf = tmp_path / "vlan.conf"
    conf.write_text("[meter]\nnamespace = vlan\n")
    rc, err = refused(attach("rx_vlan_tag", "-c", str(conf)))
    assert rc == 1, err
    assert "bpf_xdp_metadata_rx_vlan_tag" in err and "Linux 6.8 or later" in err and "--mode generic" in err, err
    assert not xdp_on(DEV)
    # without namespace = vlan (and in generic mode) the kfunc is not needed: the meter attaches
    for args in ((), ("-c", str(conf), "--mode", "generic")):
        p = attach("rx_vlan_tag", *args)
        try:
            deadline = time.monotonic() + 30
            while subprocess.run([ROCEMETER, "status", DEV], capture_output=True).returncode != 0:
                assert p.poll() is None, p.stderr.read()
                assert time.monotonic() < deadline, "attach did not come up"
                time.sleep(0.2)
        finally:
            p.terminate()
            assert p.wait(timeout=30) == 0, p.stderr.read()
