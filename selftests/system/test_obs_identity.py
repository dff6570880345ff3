# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The default observationPointId of `attach` (docs/configuration.md "observation_point_id").

Two network namespaces made here each hold a veth of the same name, with the same interface index:
the meters attached to them get two different observationPointIds, each equal to the value that
rocetest.derived_observation_point computes with hashlib from /etc/machine-id, ethtool -P and ip(8);
a restart keeps it; observation_point_id in the configuration wins. The ID is read from the daemon's
stats file through `status --json` (docs/json.md "daemon").
"""
import json
import os
import subprocess
import time

import pytest

import rocetest as rt
from procs import sh  # tests/lib

ROCEMETER = rt.ROCEMETER
PID = os.getpid()
NS = ["rmida%d" % PID, "rmidb%d" % PID]
DEV, PEER = "rmid%d" % PID, "rmiq%d" % PID

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, BPF)")


def inside(ns, *args, check=True):
    """rocemeter in namespace ns, with the host's bpffs (nsenter, not ip netns exec)."""
    return sh("nsenter", "--net=/run/netns/" + ns, ROCEMETER, *args, check=check)


def attach(ns, *args):
    return subprocess.Popen(["nsenter", "--net=/run/netns/" + ns, ROCEMETER, "attach", DEV, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def point_of(ns, proc, timeout=30):
    """The running daemon's observationPointId (status --json: daemon, written once a second)."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, "attach exited %d: %s" % (proc.returncode, proc.stderr.read())
        p = inside(ns, "status", DEV, "--json", check=False)
        if p.returncode == 0:
            daemon = json.loads(p.stdout)[0].get("daemon")
            if daemon and "observationPointId" in daemon:
                return daemon["observationPointId"]
        assert time.monotonic() < deadline, "no daemon stats in %s: %s" % (ns, p.stdout)
        time.sleep(0.2)


def stop(proc):
    proc.terminate()
    assert proc.wait(timeout=30) == 0, proc.stderr.read()


@pytest.fixture
def two_namespaces():
    procs = []
    inos = []
    try:
        for ns in NS:
            sh("ip", "netns", "add", ns)
            inos.append(os.stat("/run/netns/" + ns).st_ino)
            sh("ip", "-n", ns, "link", "add", DEV, "type", "veth", "peer", "name", PEER)
            for d in (DEV, PEER):
                sh("ip", "-n", ns, "link", "set", d, "up")
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
        for ns, ino in zip(NS, inos):
            inside(ns, "detach", DEV, check=False)
            sh("ip", "netns", "del", ns, check=False)
            sh("rm", "-rf", "/sys/fs/bpf/rocemeter/%d" % ino, check=False)


def test_same_name_two_namespaces_two_points_stable_over_restart(two_namespaces, tmp_path):
    procs = two_namespaces
    ifindex = [json.loads(sh("ip", "-n", ns, "-j", "link", "show", "dev", DEV).stdout)[0]["ifindex"] for ns in NS]
    assert ifindex[0] == ifindex[1]  # the old default (the interface index) would collide
    want = [rt.derived_observation_point(DEV, ns) for ns in NS]
    assert want[0] != want[1]
    procs += [attach(ns) for ns in NS]
    got = [point_of(ns, p) for ns, p in zip(NS, procs)]
    assert got == want
    assert all(1 << 62 <= g < 1 << 63 for g in got)

    stop(procs[0])
    procs.append(attach(NS[0]))
    assert point_of(NS[0], procs[-1]) == want[0]  # the same after a restart
    stop(procs[-1])

    conf = tmp_path / "meter.conf"
    conf.write_text("[meter]\nobservation_point_id = 42\n")
    procs.append(attach(NS[0], "-c", conf))
    assert point_of(NS[0], procs[-1]) == 42  # the configuration wins
