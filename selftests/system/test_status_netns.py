# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter status` from outside the meter's network namespace, and its exit status as a health check.

A meter runs inside network namespace A (made here, entered with nsenter so that the bpffs is the
host's): from this namespace `status` lists it under A's inode and path, `status IFACE` exits 3
and says where it is; inside A, `status IFACE` exits 0 while live, 5 once its process is killed
(-9: the pins stay, no program uses them) and 3 once detached. The namespace's inode comes from
stat(2) on /run/netns/A, not from rocemeter.
"""
import json
import os
import signal
import subprocess

import pytest

import rocetest as rt
from procs import sh, wait_for  # tests/lib

ROCEMETER = rt.ROCEMETER
PID = os.getpid()
NS = "rmstns%d" % PID
DEV, PEER = "rmst%d" % PID, "rmsu%d" % PID
NOT_ATTACHED, STALE = 3, 5

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, BPF)")


def inside(*args, check=True):
    return sh("nsenter", "--net=/run/netns/" + NS, ROCEMETER, *args, check=check)


@pytest.fixture
def meter():
    sh("ip", "netns", "add", NS)
    proc = None
    try:
        sh("ip", "-n", NS, "link", "add", DEV, "type", "veth", "peer", "name", PEER)
        for d in (DEV, PEER):
            sh("ip", "-n", NS, "link", "set", d, "up")
        netns = os.stat("/run/netns/" + NS).st_ino
        ifindex = json.loads(sh("ip", "-n", NS, "-j", "link", "show", "dev", DEV).stdout)[0]["ifindex"]
        proc = subprocess.Popen(["nsenter", "--net=/run/netns/" + NS, ROCEMETER, "attach", DEV],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: inside("status", DEV, check=False).returncode == 0, "the meter to attach", interval=0.2)
        yield proc, netns, ifindex
    finally:
        if proc and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
        inside("detach", DEV, check=False)
        sh("ip", "netns", "del", NS, check=False)
        if proc:
            sh("rm", "-rf", "/sys/fs/bpf/rocemeter/%d" % netns, check=False)


def test_host_lists_the_meter_of_another_namespace(meter):
    proc, netns, ifindex = meter
    listed = [o for o in json.loads(sh(ROCEMETER, "status", "--json").stdout) if o.get("netns") == netns]
    assert len(listed) == 1, listed
    (o,) = listed
    assert (o["interface"], o["ifindex"], o["netns_path"], o["state"]) == (DEV, ifindex, "/run/netns/" + NS, "live")
    assert o["pins"] == "/sys/fs/bpf/rocemeter/%d/%d" % (netns, ifindex)
    text = sh(ROCEMETER, "status").stdout
    assert "network namespace %d (/run/netns/%s;" % (netns, NS) in text, text
    assert "%s (ifindex %d, pins /sys/fs/bpf/rocemeter/%d/%d):" % (DEV, ifindex, netns, ifindex) in text, text


def test_status_iface_not_here_says_where_and_exits_3(meter):
    proc, netns, ifindex = meter
    p = sh(ROCEMETER, "status", DEV, check=False)
    assert p.returncode == NOT_ATTACHED, p
    assert "nsenter --net=/run/netns/%s rocemeter status %s" % (NS, DEV) in p.stdout, p.stdout
    p = sh(ROCEMETER, "status", DEV, "--json", check=False)
    assert p.returncode == NOT_ATTACHED
    (o,) = json.loads(p.stdout)
    assert o["meter"] is None and [(e["netns"], e["ifindex"]) for e in o["elsewhere"]] == [(netns, ifindex)], o


def test_exit_status_live_stale_not_attached(meter):
    proc, netns, ifindex = meter
    assert inside("status", DEV, check=False).returncode == 0
    assert inside("status", DEV, "--json", check=False).returncode == 0
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    p = inside("status", DEV, "--json", check=False)
    assert p.returncode == STALE and json.loads(p.stdout)[0]["state"] == "stale", p
    inside("detach", DEV)
    p = inside("status", DEV, check=False)
    assert p.returncode == NOT_ATTACHED and "meter: not attached" in p.stdout, p
    assert inside("status", DEV, "--connections", check=False).returncode == NOT_ATTACHED


def test_namespace_selector_status_and_detach_from_the_host(meter):
    """--namespace NS (an ip netns name, or the inode status lists): status and detach of the meter in
    namespace A, run from this namespace; detach stops its daemon (final reports, exit 0) and removes
    its pins, as the same detach run inside A does."""
    proc, netns, ifindex = meter
    p = sh(ROCEMETER, "status", "--namespace", NS, DEV, "--json", check=False)
    assert p.returncode == 0, p
    (o,) = json.loads(p.stdout)
    assert (o["netns"], o["ifindex"], o["state"]) == (netns, ifindex, "live")
    listed = json.loads(sh(ROCEMETER, "status", "--namespace", str(netns), "--json").stdout)
    assert [(x["netns"], x["interface"]) for x in listed] == [(netns, DEV)]  # that namespace only
    p = sh(ROCEMETER, "detach", "--namespace", NS, DEV, check=False)
    assert p.returncode == 0 and "stopped the meter on %s (process" % DEV in p.stdout, p
    assert proc.wait(timeout=30) == 0, proc.stderr.read()
    assert not os.path.exists("/sys/fs/bpf/rocemeter/%d/%d" % (netns, ifindex))
    p = sh(ROCEMETER, "status", "--namespace", str(netns), DEV, check=False)
    assert p.returncode == NOT_ATTACHED, p
    p = sh(ROCEMETER, "detach", "--namespace", "rmstnone%d" % PID, DEV, check=False)
    assert p.returncode != 0 and "--namespace rmstnone%d: cannot enter /run/netns/rmstnone%d" % (PID, PID) in p.stderr
