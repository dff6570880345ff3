# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The Flow Label's benefit on a real ECMP router: the Linux kernel's own
IPv6 multipath routing in a network namespace.

Topology (namespaces and interfaces named with the test's pid, removed at the
end): a sender namespace S whose veth s0 leads to router namespace R; R has
an IPv6 multipath route to fd00:99::/64 over K next hops, each a veth nhI to
a sink namespace D (packets there are dropped once counted).
The sender sends 64 RoCEv2 RC QPs that share one 5-tuple (same addresses,
UDP 49152 -> 4791), 3 SEND Only packets each, with a zero Flow Label, as
[FLOWLABEL] says a host does. A packet socket on each next hop's far end (in
D) counts the UDP 4791 packets that arrived by that path, with their BTH
DestQP and Flow Label (the kernel's own NDP and MLD traffic is not counted).

R's hash ([ip-sysctl] net.ipv6.fib_multipath_hash_policy):
  0  L3: addresses, Flow Label, next header (RFC 6438's recommendation)
  3  custom, fib_multipath_hash_fields 0x3f: 5-tuple + Flow Label
  1  L4: the 5-tuple only, no Flow Label
Without the flow-label program (labels stay 0) every QP takes one path under
every policy. With `rocemeter attach --flowlabel egress` on s0, each QP gets
its own label: under policies 0 and 3 the QPs spread, under policy 1 they do
not (the switch must hash the label for it to matter).

The bound asserted for a spread: if the kernel's hash puts each of the n = 64
QPs on one of the K paths independently and uniformly (labels distinct, a
keyed hash), then P(all QPs on at most m paths) <= C(K, m) (m/K)^n (union over
the m-subsets) and P(some path gets >= t QPs) <= K P(Binomial(n, 1/K) >= t).
The test takes the largest m and the smallest t whose bound is below 1e-6 and
asserts more than m paths used and fewer than t QPs on the busiest one; a
correct program fails it with probability below 2e-6 per case. Each
QP's packets all take one path.

Closing the loop (test_meter_per_path): a meter (`rocemeter attach`, XDP)
on each next hop's far end, one observation point per path, reports per
path the connections that took it and their sequence health: the QPs that
skipped a PSN show the gap in the final report of the path they took, and
nowhere else. Needs root.
"""
import ctypes
import json
import math
import os
import select
import shutil
import signal
import socket
import subprocess
import time

import pytest

import rocetest as rt
from procs import sh  # tests/lib
from scapy.all import Ether, IPv6, UDP, Raw

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, tc, BPF)")

ROCEMETER = rt.ROCEMETER
QPS, PKTS = 64, 3
KMAX = 8
BOUND = 1e-6
SRC, DST = "fd00:1::1", "fd00:99::1"


def min_paths_bound(k, n=QPS, bound=BOUND):
    """The largest m < k with C(k, m) (m/k)^n < bound: more than m paths are used but with probability < bound."""
    ok = [m for m in range(1, k) if math.comb(k, m) * (m / k) ** n < bound]
    return max(ok) if ok else 0


def max_load_bound(k, n=QPS, bound=BOUND):
    """The smallest t with k P(Bin(n, 1/k) >= t) < bound: the busiest path has fewer QPs but with probability < bound."""
    p = 1 / k
    for t in range(1, n + 1):
        tail = sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(t, n + 1))
        if k * tail < bound:
            return t
    return n + 1


def test_bounds_are_what_the_docstring_says():
    # K = 2: both paths (P(one path) = 2 * 2^-64); K = 4: all 4 (4 (3/4)^64 = 4.0e-8);
    # K = 8: at least 7 (28 (6/8)^64 = 2.8e-7, but 8 (7/8)^64 = 1.5e-3).
    assert [min_paths_bound(k) for k in (2, 4, 8)] == [1, 3, 6]
    assert all(max_load_bound(k) < QPS for k in (2, 4, 8))


LIBC = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def in_netns(name, fn):
    """fn() with this thread in network namespace /run/netns/name, then back in its own."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    try:
        if LIBC.setns(fd, CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), "setns " + name)
        return fn()
    finally:
        if LIBC.setns(own, CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), "setns back")
        os.close(fd)
        os.close(own)


class Topo:
    def __init__(self):
        tag = "%x" % (os.getpid() & 0xFFFFF)
        self.tag = tag
        self.ns_s, self.ns_r, self.ns_d = "rmecS" + tag, "rmecR" + tag, "rmecD" + tag
        self.s0, self.r0 = "rmes" + tag, "rmer" + tag
        self.nh = ["rmh%d%s" % (i, tag) for i in range(KMAX)]
        self.sk = ["rmk%d%s" % (i, tag) for i in range(KMAX)]

    def r(self, *cmd, check=True):
        return sh("ip", "netns", "exec", self.ns_r, *cmd, check=check)

    def build(self):
        for ns in (self.ns_s, self.ns_r, self.ns_d):
            sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", self.s0, "netns", self.ns_s, "type", "veth", "peer", "name", self.r0, "netns",
           self.ns_r)
        sh("ip", "-n", self.ns_s, "addr", "add", SRC + "/64", "dev", self.s0, "nodad")
        sh("ip", "-n", self.ns_r, "addr", "add", "fd00:1::2/64", "dev", self.r0, "nodad")
        for ns, dev in ((self.ns_s, self.s0), (self.ns_r, self.r0)):
            sh("ip", "-n", ns, "link", "set", dev, "up")
        self.r("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
        for i in range(KMAX):
            nh, sk = self.nh[i], self.sk[i]
            sh("ip", "link", "add", nh, "netns", self.ns_r, "type", "veth", "peer", "name", sk, "netns", self.ns_d)
            sh("ip", "-n", self.ns_r, "addr", "add", "fd00:10:%x::1/64" % i, "dev", nh, "nodad")
            sh("ip", "-n", self.ns_d, "addr", "add", "fd00:10:%x::2/64" % i, "dev", sk, "nodad")
            sh("ip", "-n", self.ns_r, "link", "set", nh, "up")
            sh("ip", "-n", self.ns_d, "link", "set", sk, "up")
            mac = json.loads(sh("ip", "-n", self.ns_d, "-j", "link", "show", sk).stdout)[0]["address"]
            sh("ip", "-n", self.ns_r, "-6", "neigh", "replace", "fd00:10:%x::2" % i, "lladdr", mac, "dev", nh,
               "nud", "permanent")
        self.s_mac = json.loads(sh("ip", "-n", self.ns_s, "-j", "link", "show", self.s0).stdout)[0]["address"]
        self.r_mac = json.loads(sh("ip", "-n", self.ns_r, "-j", "link", "show", self.r0).stdout)[0]["address"]

    def route(self, k, policy, fields=None):
        self.r("sysctl", "-qw", "net.ipv6.fib_multipath_hash_policy=%d" % policy)
        if fields is not None:
            self.r("sysctl", "-qw", "net.ipv6.fib_multipath_hash_fields=%#x" % fields)
        self.r("ip", "-6", "route", "del", "fd00:99::/64", check=False)
        hops = []
        for i in range(k):
            hops += ["nexthop", "via", "fd00:10:%x::2" % i, "dev", self.nh[i]]
        self.r("ip", "-6", "route", "add", "fd00:99::/64", *hops)

    def open_sockets(self):
        """A packet socket on each sink interface, made in namespace D (setns() of this thread and back)."""
        def make():
            socks = []
            for sk in self.sk:
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86DD))
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
                s.bind((sk, 0))
                s.setblocking(False)
                socks.append(s)
            return socks
        self.socks = in_netns(self.ns_d, make)

    def receive(self, want, timeout=10.0):
        """[(path, DestQP, Flow Label)] of the RoCEv2 packets received, until want of them or the timeout."""
        got, end = [], time.monotonic() + timeout
        while len(got) < want and time.monotonic() < end:
            ready, _, _ = select.select(self.socks, [], [], 0.2)
            for s in ready:
                path = self.socks.index(s)
                while True:
                    try:
                        f = s.recv(4096)
                    except BlockingIOError:
                        break
                    if len(f) >= 14 + 40 + 8 + 12 and f[20] == 17 and f[56:58] == (4791).to_bytes(2, "big"):
                        got.append((path, int.from_bytes(f[67:70], "big"), int.from_bytes(f[15:18], "big") & 0xFFFFF))
        return got

    def rocemeter(self, *args, check=True):
        return sh("nsenter", "--net=/run/netns/" + self.ns_s, ROCEMETER, *args, check=check, timeout=60)

    def destroy(self):
        for s in getattr(self, "socks", []):
            s.close()
        if os.path.exists("/run/netns/" + self.ns_s):
            self.rocemeter("detach", self.s0, check=False)
        pins = rt.pin_dir(self.s0, self.ns_s) if os.path.exists("/run/netns/" + self.ns_s) else None
        for ns in (self.ns_s, self.ns_r, self.ns_d):
            sh("ip", "netns", "del", ns, check=False)
        if pins and os.path.exists(pins):
            shutil.rmtree(pins, ignore_errors=True)


@pytest.fixture(scope="module")
def topo(tmp_path_factory):
    t = Topo()
    try:
        t.build()
        t.open_sockets()
        frames = []
        for q in range(QPS):
            for j in range(PKTS):
                pkt = Ether(src=t.s_mac, dst=t.r_mac) / IPv6(src=SRC, dst=DST, fl=0, hlim=64) / \
                    UDP(sport=49152, dport=4791) / Raw(rt.roce_payload(rt.SEND_ONLY, 0x100 + q, 1 + j))
                frames.append(rt.Frame(bytes(pkt), rt.T0 + (q * PKTS + j) * 1000))
        t.pcap = str(tmp_path_factory.mktemp("ecmp") / "qps.pcap")
        rt.write_pcap(t.pcap, frames)
        yield t
    finally:
        t.destroy()


def send(t, k):
    """Send the 64 QPs' packets: {DestQP: path} and {DestQP: Flow Label} as received, each QP on one path."""
    t.receive(1 << 30, timeout=0.1)  # nothing left from before
    sh("ip", "netns", "exec", t.ns_s, "tcpreplay", "-q", "-i", t.s0, t.pcap)
    got = t.receive(QPS * PKTS)
    assert len(got) == QPS * PKTS, len(got)
    paths, labels = {}, {}
    for path, qp, fl in got:
        assert paths.setdefault(qp, path) == path, "QP %#x on paths %d and %d" % (qp, paths[qp], path)
        assert labels.setdefault(qp, fl) == fl
    assert sorted(paths) == [0x100 + q for q in range(QPS)]
    assert all(p < k for p in paths.values()), paths  # only the route's next hops
    return paths, labels


def loads(paths, k):
    out = [0] * k
    for p in paths.values():
        out[p] += 1
    return out


POLICIES = [pytest.param(0, None, True, id="policy0-l3-label"),
            pytest.param(3, 0x3f, True, id="policy3-5tuple-label"),
            pytest.param(1, None, False, id="policy1-l4-no-label")]


@pytest.mark.parametrize("policy,fields,hashes_label", POLICIES)
@pytest.mark.parametrize("k", [2, 4, 8])
def test_ecmp_spread(topo, k, policy, fields, hashes_label):
    t = topo
    t.route(k, policy, fields)
    # Program off: every label 0, one 5-tuple: one path for all.
    t.rocemeter("detach", t.s0, check=False)
    paths, labels = send(t, k)
    assert set(labels.values()) == {0}
    assert len(set(paths.values())) == 1, loads(paths, k)
    # Program on: each QP its own label.
    t.rocemeter("attach", t.s0, "--flowlabel", "egress", "--flowlabel-only")
    try:
        paths, labels = send(t, k)
        st = json.loads(t.rocemeter("status", t.s0, "--json").stdout)[0]["flowlabel"]
        assert st["stats"]["rewritten"] + st["stats"]["zero_hash"] == QPS * PKTS, st["stats"]
    finally:
        t.rocemeter("detach", t.s0)
    assert 0 not in labels.values() and len(set(labels.values())) == QPS  # distinct labels
    load = loads(paths, k)
    print("policy %d, K = %d: QPs per path with labels %s" % (policy, k, load))
    if hashes_label:
        assert sum(1 for c in load if c) > min_paths_bound(k), (k, load)
        assert max(load) < max_load_bound(k), (k, load)
    else:
        assert sum(1 for c in load if c) == 1, load  # the label is not hashed: no spread


def test_spread_model_agrees_on_the_premise():
    """`flowlabel spread` over the same QPs: one path without the label, spread with it (the model's
    5tuple+label class, CRC-32 low bits standing in for the kernel's keyed hash)."""
    for k in (2, 4, 8):
        p = sh(ROCEMETER, "flowlabel", "spread", "-n", str(QPS), "-s", SRC, "-d", DST, "-k", str(k),
               "--qp-base", "0x100", "--key", "5tuple,5tuple+label", "--label", "arriving,literal",
               "--switch-hash", "crc32-lo", "--json")
        cls = {(c["key"], c["label"]): c for c in json.loads(p.stdout)["classes"]}
        assert cls[("5tuple", None)]["paths_used"] == 1 and cls[("5tuple+label", "arriving")]["paths_used"] == 1
        assert cls[("5tuple+label", "literal")]["paths_used"] > min_paths_bound(k)


GAP_QPS = (0x105, 0x111, 0x121, 0x132)  # these skip PSN 2: 1, 3, 4


class Meter:
    """`rocemeter attach IFACE --provision-all --json` in namespace ns, in the foreground; finals only."""

    def __init__(self, ns, iface, workdir):
        self.out, self.err = os.path.join(workdir, iface + ".out"), os.path.join(workdir, iface + ".err")
        with open(self.out, "w") as o, open(self.err, "w") as e:
            self.proc = subprocess.Popen(["nsenter", "--net=/run/netns/" + ns, ROCEMETER, "attach", iface,
                                          "--provision-all", "--json", "--report-interval", "0", "--mode",
                                          "generic"], stdout=o, stderr=e)

    def stderr(self):
        return open(self.err).read()

    def wait_ready(self, timeout=60):
        end = time.monotonic() + timeout
        while "attached to" not in self.stderr():
            assert self.proc.poll() is None, "attach exited: " + self.stderr()
            assert time.monotonic() < end, "attach did not come up: " + self.stderr()
            time.sleep(0.1)

    def finals(self):
        """SIGTERM: every open epoch closes with a final report. The reports."""
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=60) == 0, self.stderr()
        return [json.loads(line) for line in open(self.out) if line.strip()]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def test_meter_per_path(topo, tmp_path):
    """K = 3 (each meter loads and verifies the XDP program: seconds each on a busy machine)."""
    t, k = topo, 3
    t.route(k, 0)
    frames = []
    for q in range(QPS):
        qp = 0x100 + q
        for j, psn in enumerate((1, 3, 4) if qp in GAP_QPS else (1, 2, 3)):
            pkt = Ether(src=t.s_mac, dst=t.r_mac) / IPv6(src=SRC, dst=DST, fl=0, hlim=64) / \
                UDP(sport=49152, dport=4791) / Raw(rt.roce_payload(rt.SEND_ONLY, qp, psn))
            frames.append(rt.Frame(bytes(pkt), rt.T0 + (q * PKTS + j) * 1000))
    pcap = str(tmp_path / "gaps.pcap")
    rt.write_pcap(pcap, frames)
    meters = []
    try:
        for i in range(k):
            meters.append(Meter(t.ns_d, t.sk[i], str(tmp_path)))
        for m in meters:
            m.wait_ready()
        t.rocemeter("attach", t.s0, "--flowlabel", "egress", "--flowlabel-only")
        try:
            t.receive(1 << 30, timeout=0.1)
            sh("ip", "netns", "exec", t.ns_s, "tcpreplay", "-q", "-i", t.s0, pcap)
            got = t.receive(QPS * PKTS)
        finally:
            t.rocemeter("detach", t.s0)
        assert len(got) == QPS * PKTS
        path_of = {qp: path for path, qp, _ in got}
        reports = [m.finals() for m in meters]
    finally:
        for m in meters:
            m.kill()
    ids = set()
    for path in range(k):
        finals = {r["rdmaDestinationQP"]: r for r in reports[path] if "finalEpoch" in r["flag_names"]}
        # The path's meter saw exactly the QPs that took the path, each with its 3 requests ...
        assert set(finals) == {qp for qp, p in path_of.items() if p == path}, path
        for qp, r in finals.items():
            assert r["requestPacketTotalCount"] == 3
            # ... and a gap where, and only where, the QP skipped a PSN.
            assert r["skippedPsnTotalCount"] == (1 if qp in GAP_QPS else 0), (path, hex(qp), r)
            assert r["sourceIPv6Address"] == SRC and r["destinationIPv6Address"] == DST
        ids |= {r["observationPointId"] for r in finals.values()}
    assert len(ids) == len({p for p in path_of.values()})  # one observation point per path used
