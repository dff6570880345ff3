# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Live tests of the XDP meter and its loader: `rocemeter attach`, `detach`
and `status` on a veth pair (root).

Each test creates its own network namespace and veth pair with unique names.
The metered end stays in the root namespace (attach pins maps under
/sys/fs/bpf, which `ip netns exec` would hide); only the sending end is moved
into the namespace, where tcpreplay sends captures written here with scapy
(its BTH layer is independent of the project's parser) or the real NCCL
capture. A finalizer kills the daemons, deletes the namespace and the veth,
and removes the pins and run files, also when a test fails.

Expected values come from [SEQOBS]'s verification examples, from tshark's
decoding of the capture, and from `rocemeter replay` over the same file (the
replay path is tested on its own elsewhere: here it shows live == replay).
bpftool reads the pinned maps with their BTF as a second reader besides
`rocemeter status`.
"""
import itertools
import json
import os
import shutil
import select
import signal
import socket
import subprocess
import time
from collections import Counter, defaultdict

import pytest

import rocetest as rt  # tests/lib, on pytest.ini's pythonpath
from procs import sh, wait_for  # tests/lib
from seqobs_examples import EXAMPLES  # tests/lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
ROCEMETER = os.path.join(BUILD, "rocemeter")
RUN_DIR = "/run/rocemeter"
NCCL_PCAP = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data", "pcaps",
                         "linlinw5_nccl_nccl_node0.pcap")  # bundled copy

FINAL = 0x0001
PROFILE_VIOLATION = 0x0002
GENERATION_UNVERIFIED = 0x0020

SRC, DST = "192.0.2.1", "198.51.100.2"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (XDP, bpffs, namespaces)")

_serial = itertools.count()


def stat_names():
    """enum rm_stat (RM_STATS in include/rocemeter/meter.h), in order: the
    index of each statistic in the per-CPU array that bpftool shows."""
    import rocetest
    return ["RM_STAT_" + suffix for suffix, _ in rocetest.stat_table()]


# ---- namespaces, veth, daemons ------------------------------------------------

class Daemon:
    """`rocemeter attach IFACE ...` in the foreground, output in files."""

    def __init__(self, iface, workdir, *args):
        self.iface = iface
        n = next(_serial)
        self.out_path = os.path.join(workdir, "attach%d.out" % n)
        self.err_path = os.path.join(workdir, "attach%d.err" % n)
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen([ROCEMETER, "attach", iface, *args], stdout=out, stderr=err)

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def stdout(self):
        with open(self.out_path) as f:
            return f.read()

    def wait_ready(self):
        def ready():
            if self.proc.poll() is not None:
                pytest.fail("attach exited with %d: %s" % (self.proc.returncode, self.stderr()))
            return "attached to" in self.stderr()
        wait_for(ready, "rocemeter attach to come up")

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=60)

    def reports(self):
        """JSON Lines reports printed so far (--json)."""
        return [json.loads(line) for line in self.stdout().splitlines() if line.strip()]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


class Link:
    """A veth pair: `iface` metered in the root namespace, `peer` in namespace `ns`."""

    def __init__(self, tmp_path):
        tag = "%05d%02d" % (os.getpid() % 100000, next(_serial) % 100)
        self.ns = "rmlive-" + tag
        self.iface = "rml" + tag  # <= 15 characters
        self.peer = "rmp" + tag
        self.tmp = str(tmp_path)
        self.daemons = []

    def setup(self):
        sh("ip", "netns", "add", self.ns)
        # No IPv6 on either end: nothing but the test's frames crosses the link,
        # so the meter's frame counter is exact.
        sh("ip", "netns", "exec", self.ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1")
        sh("ip", "link", "add", self.iface, "type", "veth", "peer", "name", self.peer, "netns", self.ns)
        with open("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % self.iface, "w") as f:
            f.write("1")
        # The NCCL capture has frames of 3903 bytes.
        sh("ip", "link", "set", self.iface, "mtu", "9000", "up")
        sh("ip", "-n", self.ns, "link", "set", self.peer, "mtu", "9000", "up")
        self.pin_dir()

    def attach(self, *args, ready=True):
        d = Daemon(self.iface, self.tmp, *args)
        self.daemons.append(d)
        if ready:
            d.wait_ready()
        return d

    def send_pcap(self, path, pps=2000):
        """Replay a capture from the namespace end, paced so that no queue
        between the veth ends can overflow."""
        sh("ip", "netns", "exec", self.ns, "tcpreplay", "-q", "--pps=%d" % pps, "-i", self.peer, path,
           timeout=300)

    def send(self, frames, name="frames.pcap"):
        from scapy.utils import wrpcap
        path = os.path.join(self.tmp, name)
        wrpcap(path, frames)
        self.send_pcap(path)
        return len(frames)

    def pin_dir(self):
        """BPFFS/rocemeter/NETNS/IFINDEX (keyed by namespace and ifindex, found while the link exists)."""
        if not hasattr(self, "_pin_dir"):
            self._pin_dir = rt.pin_dir(self.iface)
        return self._pin_dir

    def run_file(self, suffix):
        """RUN_DIR/NETNS-IFINDEX.SUFFIX, beside the pins' key."""
        ino, ifindex = self.pin_dir().split("/")[-2:]
        return os.path.join(RUN_DIR, "%s-%s.%s" % (ino, ifindex, suffix))

    def status(self):
        p = sh(ROCEMETER, "status", self.iface, "--json")
        doc = json.loads(p.stdout)
        assert len(doc) == 1 and doc[0]["interface"] == self.iface
        return doc[0]

    def wait_frames(self, n):
        """Wait until the meter has seen n frames (exactly: nothing else is sent)."""
        def seen():
            m = self.status()["meter"]
            assert m is not None, "meter not attached"
            assert m["frames"] <= n, "more frames than sent: %r" % m
            return m["frames"] == n
        wait_for(seen, "the meter to see %d frames" % n)

    def xdp_attached(self):
        return " xdp" in sh("ip", "link", "show", "dev", self.iface).stdout

    def cleanup(self):
        for d in self.daemons:
            d.kill()
        pd = self.pin_dir() if hasattr(self, "_pin_dir") else None
        sh("ip", "link", "del", self.iface, check=False)
        sh("ip", "netns", "del", self.ns, check=False)
        if pd and os.path.isdir(pd):
            for name in os.listdir(pd):
                os.unlink(os.path.join(pd, name))
            os.rmdir(pd)
        for suffix in ("pid", "stats"):
            p = self.run_file(suffix) if pd else None
            if p and os.path.exists(p):
                os.unlink(p)


@pytest.fixture
def link(request, tmp_path):
    if not os.path.exists(ROCEMETER):
        pytest.fail("%s missing: run make" % ROCEMETER)
    lk = Link(tmp_path)
    request.addfinalizer(lk.cleanup)  # before anything exists: cleans up a half-made setup too
    lk.setup()
    return lk


# ---- frames ------------------------------------------------------------------

def send_only(qp, psn, src=SRC, dst=DST, sport=49152):
    """RC SEND Only (opcode 0x04) built with scapy's BTH layer."""
    from scapy.contrib.roce import BTH
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    return (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src=src, dst=dst) /
            UDP(sport=sport, dport=4791) / BTH(opcode=0x04, pkey=0xFFFF, dqpn=qp, psn=psn) / Raw(b"\x5a" * 8))


def not_roce(i):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    return (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src=SRC, dst=DST) /
            UDP(sport=40000 + i, dport=9) / Raw(b"marker%d" % i))


# [SEQOBS] "Verification Examples", W = 4: QP 0x000100 + N -> (PSNs, expected counters of the open
# epoch) of example N.
SEED_EXAMPLES = {0x000100 + n: ex for n, ex in EXAMPLES.items()}

STATUS_NAMES = dict(requests="requestPacketTotalCount", skipped="skippedPsnTotalCount",
                    filled="filledPsnTotalCount", expired="expiredPsnTotalCount",
                    pending="pendingPsnCount", repeated="repeatedPsnTotalCount",
                    late="unclassifiedLatePacketTotalCount")
REPORT_NAMES = dict(STATUS_NAMES, abandoned="abandonedPsnTotalCount")
BTF_NAMES = dict(requests="requests", filled="filled", pending="pending", repeated="repeated", late="late")


def btf_counters(seq):
    """The counters of a context's engine state as bpftool shows it (BTF
    field names); skipped and expired are derived as docs/meter.md "Memory"
    and include/rocemeter/seqobs.h state: requests - 1 = forward advances +
    filled + repeated + late, H - S = skipped + forward advances."""
    c = {name: seq[name] for name in BTF_NAMES.values()}
    s = seq["s_flags"] & 0xFFFFFF
    c["skipped"] = seq["high"] - s - (seq["requests"] - 1 - seq["filled"] - seq["repeated"] - seq["late"])
    c["expired"] = c["skipped"] - seq["filled"] - seq["pending"]
    c["abandoned"] = 0  # while active
    return c


def seed_frames():
    frames = []
    for qp, (psns, _) in SEED_EXAMPLES.items():
        frames += [send_only(qp, p) for p in psns]
    return frames


def check_seed_status(lk):
    st = lk.status()
    ctx = {c["rdmaDestinationQP"]: c for c in st["contexts"]}
    assert sorted(ctx) == sorted(SEED_EXAMPLES)
    for qp, (_, exp) in SEED_EXAMPLES.items():
        c = ctx[qp]
        assert (c["sourceIPv4Address"], c["destinationIPv4Address"], c["rdmaPartitionKey"]) == (SRC, DST, 0xFFFF)
        assert c["state"] == "open" and c["rdmaSequenceWindow"] == 4 and c["epoch_generation"] == 1
        for k, name in STATUS_NAMES.items():
            assert c[name] == exp[k], (qp, name, c)
    return st


def check_seed_finals(reports):
    finals = [r for r in reports if r["rdmaSequenceFlags"] & FINAL]
    by_qp = {r["rdmaDestinationQP"]: r for r in finals}
    assert len(finals) == len(by_qp) == len(SEED_EXAMPLES), finals
    for qp, (_, exp) in SEED_EXAMPLES.items():
        r = by_qp[qp]
        # Stop is an ordinary closure: finalEpoch (+ generationUnverified), no reason bit.
        assert r["rdmaSequenceFlags"] == FINAL | GENERATION_UNVERIFIED, r
        # The final snapshot abandons all pending positions.
        want = dict(exp, abandoned=exp["pending"], pending=0)
        for k, name in REPORT_NAMES.items():
            assert r[name] == want[k], (qp, name, r)
        assert r["rdmaSequenceWindow"] == 4
        assert (r["sourceIPv4Address"], r["destinationIPv4Address"]) == (SRC, DST)
        s, f, e, a, p = (r[n] for n in ("skippedPsnTotalCount", "filledPsnTotalCount", "expiredPsnTotalCount",
                                        "abandonedPsnTotalCount", "pendingPsnCount"))
        assert s == f + e + a + p


def bpftool_dump(path):
    return json.loads(sh("bpftool", "-j", "map", "dump", "pinned", path).stdout)


def check_gone(lk):
    assert not lk.xdp_attached(), sh("ip", "link", "show", "dev", lk.iface).stdout
    net = json.loads(sh("bpftool", "-j", "net", "show", "dev", lk.iface).stdout)
    assert all(not e.get("xdp") for e in net), net
    assert not os.path.exists(lk.pin_dir()), os.listdir(lk.pin_dir())
    assert not os.path.exists(lk.run_file("pid"))


# ---- tests ---------------------------------------------------------------------

def test_seed_examples_live_status_bpftool_and_final(link):
    """attach --provision-all --window 4: [SEQOBS]'s examples sent over the veth
    show [SEQOBS]'s counters in `status --json` and, field by field with BTF
    names, in `bpftool map dump pinned`; SIGTERM gives final reports (pending
    moved to abandoned), exit 0, no XDP program, no pins, no PID file."""
    d = link.attach("--provision-all", "--window", "4", "--json")
    assert link.xdp_attached()
    net = json.loads(sh("bpftool", "-j", "net", "show", "dev", link.iface).stdout)
    assert [x["mode"] for e in net for x in e.get("xdp", [])] == ["driver"], net
    with open(link.run_file("pid")) as f:
        assert int(f.read().split()[0]) == d.proc.pid

    t0 = time.time()
    n = link.send(seed_frames() + [not_roce(1)])
    link.wait_frames(n)
    st = check_seed_status(link)
    meter = st["meter"]
    assert meter["eligible_requests"] == n - 1
    assert meter["not_rocev2"] == 1 and meter["epochs_started"] == len(SEED_EXAMPLES)
    assert st["daemon"]["pid"] == d.proc.pid

    # bpftool: the contexts with their BTF field names.
    dump = bpftool_dump(os.path.join(link.pin_dir(), "contexts"))
    assert len(dump) == len(SEED_EXAMPLES)
    for e in dump:
        k, v = e["formatted"]["key"], e["formatted"]["value"]
        assert k["src"][:4] == [192, 0, 2, 1] and k["dst"][:4] == [198, 51, 100, 2] and k["family"] == 4
        assert k["pkey"] == 0xFFFF
        exp = SEED_EXAMPLES[k["dest_qp"]][1]
        c = btf_counters(v["seq"])
        for key in exp:
            assert c[BTF_NAMES.get(key, key)] == exp[key], (hex(k["dest_qp"]), key, c)
        flags = v["seq"]["s_flags"]
        assert v["seq"]["window"] == 4 and flags & 0x1000000 and not flags & 0x4000000  # active, not disabled
    # bpftool: the per-CPU statistics, summed, equal status's named ones.
    names = stat_names()
    stats = bpftool_dump(os.path.join(link.pin_dir(), "stats"))
    sums = [sum(cpu["value"]["v"][i] for cpu in stats[0]["formatted"]["values"]) for i in range(len(names))]
    assert sums[names.index("RM_STAT_FRAMES")] == n
    assert sums[names.index("RM_STAT_ELIGIBLE")] == n - 1
    assert sums == list(meter.values())

    rc = d.stop(signal.SIGTERM)
    assert rc == 0, d.stderr()
    t1 = time.time()
    check_seed_finals(d.reports())
    assert "stopping" in d.stderr()
    # Arrival times are exported as UNIX milliseconds (docs/architecture.md "Time"), not
    # boot-relative; the default observationPointId is derived from the host and the interface
    # (computed here independently: rocetest.derived_observation_point).
    obs = rt.derived_observation_point(link.iface)
    for r in d.reports():
        assert t0 * 1000 - 2000 <= r["flowStartMilliseconds"] <= r["flowEndMilliseconds"] <= t1 * 1000 + 2000, r
        assert r["observationPointId"] == obs
    check_gone(link)
    # status on a detached interface: meter null, exit 3 (not attached: docs/man/rocemeter-status.8).
    p = subprocess.run([ROCEMETER, "status", link.iface, "--json"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, p
    assert json.loads(p.stdout)[0]["meter"] is None


def test_detach_command_stops_daemon(link):
    """`rocemeter detach IFACE` SIGTERMs the daemon and waits: final reports,
    exit 0, everything removed; a second detach has nothing to do, says so and
    exits 0 (idempotent, as `ip link set dev IFACE xdp off`: docs/man/rocemeter-detach.8)."""
    d = link.attach("--provision-all", "--window", "4", "--json")
    n = link.send(seed_frames())
    link.wait_frames(n)
    p = sh(ROCEMETER, "detach", link.iface)
    assert "stopped the meter on %s (process %d)" % (link.iface, d.proc.pid) in p.stdout
    assert d.proc.poll() == 0, d.stderr()  # detach returned after the daemon had gone
    check_seed_finals(d.reports())
    check_gone(link)
    p = sh(ROCEMETER, "detach", link.iface, check=False)
    assert p.returncode == 0, p
    assert p.stdout == "rocemeter is not attached to %s: nothing to detach\n" % link.iface, p


def test_status_of_a_daemon_whose_pins_were_removed(link):
    """Pins removed under a running daemon (rm -r of its pin directory): the
    daemon keeps metering, and `status IFACE` says so (before: "meter: not
    attached", exit 3): running without its pins, the daemon's PID, the XDP
    program the kernel shows on the interface, how to mend it; exit 6
    (docs/man/rocemeter-status.8). `detach IFACE`, the mend it names, stops it."""
    d = link.attach("--provision-all", "--window", "4", "--json")
    n = link.send(seed_frames())
    link.wait_frames(n)
    shutil.rmtree(link.pin_dir())
    net = json.loads(sh("bpftool", "-j", "net", "show", "dev", link.iface).stdout)
    xdp = [x for e in net for x in e.get("xdp", [])]
    assert len(xdp) == 1, net
    prog = json.loads(sh("bpftool", "-j", "prog", "show", "id", str(xdp[0]["id"])).stdout)
    assert prog["name"].startswith("rocemeter_xdp"), prog  # still metering
    p = sh(ROCEMETER, "status", link.iface, check=False)
    assert p.returncode == 6, p
    assert ("meter: RUNNING WITHOUT ITS PINS: daemon process %d meters %s (XDP program id %d attached)"
            % (d.proc.pid, link.iface, xdp[0]["id"])) in p.stdout, p.stdout
    assert "systemctl restart\n    rocemeter@%s (or rocemeter detach %s" % (link.iface, link.iface) in p.stdout
    assert "meter: not attached" not in p.stdout
    p = sh(ROCEMETER, "status", link.iface, "--json", check=False)
    assert p.returncode == 6, p
    doc = json.loads(p.stdout)[0]
    assert (doc["meter"], doc["state"], doc["daemon_pid"], doc["xdp_prog_id"]) == \
        (None, "unpinned", d.proc.pid, xdp[0]["id"]), doc
    p = sh(ROCEMETER, "detach", link.iface)
    assert "stopped the meter on %s (process %d)" % (link.iface, d.proc.pid) in p.stdout
    assert d.proc.poll() == 0, d.stderr()
    check_seed_finals(d.reports())  # its final reports, although its maps were unpinned
    assert not link.xdp_attached()
    assert sh(ROCEMETER, "status", link.iface, check=False).returncode == 3


def test_second_attach_refused_and_stale_pins(link):
    """A second attach names the running daemon's PID; pins kept after a SIGKILL
    (--keep-pins) are reported as stale by attach and removed by detach."""
    d = link.attach("--provision-all", "--keep-pins")
    second = link.attach("--provision-all", ready=False)
    assert second.proc.wait(timeout=60) != 0
    assert "already metered by process %d" % d.proc.pid in second.stderr()
    assert d.proc.poll() is None  # the first one is untouched
    assert link.xdp_attached()

    d.stop(signal.SIGKILL)
    # The XDP link belonged to the process: gone with it. The pins stay.
    wait_for(lambda: not link.xdp_attached(), "the XDP program to go with its process")
    assert os.path.exists(os.path.join(link.pin_dir(), "contexts"))

    stale = link.attach("--provision-all", ready=False)
    assert stale.proc.wait(timeout=60) != 0
    err = stale.stderr()
    assert "stale pins for %s in %s" % (link.iface, link.pin_dir()) in err, err
    assert "rocemeter detach %s" % link.iface in err
    assert not link.xdp_attached()

    p = sh(ROCEMETER, "detach", link.iface)
    assert "removed stale meter pins of %s" % link.iface in p.stdout
    assert not os.path.exists(link.pin_dir())
    # The killed daemon's PID and stats files went with the stale pins.
    for suffix in ("pid", "stats"):
        assert not os.path.exists(link.run_file(suffix)), suffix

    # Usable again.
    again = link.attach("--provision-all", "--window", "4", "--json")
    n = link.send(seed_frames())
    link.wait_frames(n)
    check_seed_status(link)
    assert again.stop() == 0
    check_seed_finals(again.reports())
    check_gone(link)


def tshark_requests(pcap):
    """SEND/WRITE requests (BTH opcodes 0x00-0x0B) per connection
    (source, destination, dest QP, P_Key), counted by tshark."""
    p = sh("tshark", "-r", pcap, "-Y", "udp.dstport == 4791 && infiniband.bth.opcode <= 11", "-T", "fields",
           "-e", "ip.src", "-e", "ip.dst", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.p_key")
    c = Counter()
    for line in p.stdout.splitlines():
        src, dst, qp, pkey = line.split("\t")
        c[(src, dst, int(qp, 0), int(pkey, 0))] += 1
    return c


def key_of(r):
    return (r["sourceIPv4Address"], r["destinationIPv4Address"], r["rdmaDestinationQP"], r["rdmaPartitionKey"])


COUNTERS = ("requestPacketTotalCount", "skippedPsnTotalCount", "filledPsnTotalCount", "expiredPsnTotalCount",
            "abandonedPsnTotalCount", "pendingPsnCount", "repeatedPsnTotalCount",
            "unclassifiedLatePacketTotalCount", "rdmaSequenceWindow", "rdmaSequenceFlags")


def test_nccl_capture_live_equals_replay_and_tshark(link):
    """The real NCCL capture sent with tcpreplay through the veth: on SIGTERM,
    one final report per connection, with requests equal to tshark's count of
    SEND/WRITE frames and every counter equal to `rocemeter replay`'s."""
    expected = tshark_requests(NCCL_PCAP)
    assert len(expected) >= 2 and sum(expected.values()) > 0
    nframes = int(sh("tshark", "-r", NCCL_PCAP, "-T", "fields", "-e", "frame.number").stdout.split()[-1])

    p = sh(ROCEMETER, "replay", "--provision-all", "--json", NCCL_PCAP)
    replay = defaultdict(list)
    for line in p.stdout.splitlines():
        r = json.loads(line)
        if r["rdmaSequenceFlags"] & FINAL:
            replay[key_of(r)].append(r)

    d = link.attach("--provision-all", "--json")
    link.send_pcap(NCCL_PCAP)
    link.wait_frames(nframes)
    meter = link.status()["meter"]
    assert meter["eligible_requests"] == sum(expected.values())
    assert d.stop() == 0, d.stderr()
    live = defaultdict(list)
    for r in d.reports():
        if r["rdmaSequenceFlags"] & FINAL:
            live[key_of(r)].append(r)

    assert set(live) == set(expected), (sorted(live), sorted(expected))
    assert set(replay) == set(expected)
    for k, n in expected.items():
        assert len(live[k]) == 1, live[k]
        assert live[k][0]["requestPacketTotalCount"] == n, (k, live[k][0])
        assert [live[k][0][c] for c in COUNTERS] == [replay[k][0][c] for c in COUNTERS], (k, live[k], replay[k])
    check_gone(link)


def packet_socket(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL
    s.bind((iface, 0))
    s.setblocking(False)
    return s


def received(sock, until_marker=None, timeout=30.0):
    """Payloads of frames the stack received on the socket's interface
    (not the ones it sent), read until `until_marker` is among them."""
    got = []
    end = time.monotonic() + timeout
    while True:
        r, _, _ = select.select([sock], [], [], 0.1)
        if r:
            data, addr = sock.recvfrom(65535)
            if addr[2] != socket.PACKET_OUTGOING:
                got.append(data)
                if until_marker and until_marker in data:
                    return got
        elif until_marker is None:
            return got
        if time.monotonic() > end:
            pytest.fail("timed out waiting for frame %r" % until_marker)


def test_mirror_drops_after_metering(link):
    """--mirror: frames are metered, then dropped before the stack (a packet
    socket on the metered interface sees none of them). Without --mirror the
    same frames reach the socket (the check can fail). Ordering is shown with a
    marker frame sent after the XDP program is gone."""
    frames = [send_only(0x222, 1000 + i) for i in range(20)] + [not_roce(i) for i in range(5)]

    # Control: no mirror, every frame reaches the stack.
    sock = packet_socket(link.iface)
    d = link.attach("--provision-all", "--json")
    link.send(frames, "a.pcap")
    link.wait_frames(len(frames))
    assert d.stop() == 0
    link.send([not_roce(99)], "marker1.pcap")
    got = received(sock, until_marker=b"marker99")
    assert len(got) == len(frames) + 1
    sock.close()

    sock = packet_socket(link.iface)
    d = link.attach("--provision-all", "--json", "--mirror")
    assert "mirror" in d.stderr()
    link.send(frames, "b.pcap")
    link.wait_frames(len(frames))
    assert d.stop() == 0
    finals = [r for r in d.reports() if r["rdmaSequenceFlags"] & FINAL]
    assert [(r["rdmaDestinationQP"], r["requestPacketTotalCount"]) for r in finals] == [(0x222, 20)]
    link.send([not_roce(98)], "marker2.pcap")
    got = received(sock, until_marker=b"marker98")
    assert len(got) == 1, "frames passed to the stack in mirror mode: %d" % (len(got) - 1)
    sock.close()


def test_generic_mode(link):
    """--mode generic: the program is attached as generic XDP and meters the same."""
    d = link.attach("--provision-all", "--window", "4", "--json", "--mode", "generic")
    assert "xdpgeneric" in sh("ip", "link", "show", "dev", link.iface).stdout
    net = json.loads(sh("bpftool", "-j", "net", "show", "dev", link.iface).stdout)
    assert [x["mode"] for e in net for x in e.get("xdp", [])] == ["generic"], net
    n = link.send(seed_frames())
    link.wait_frames(n)
    check_seed_status(link)
    assert d.stop(signal.SIGINT) == 0, d.stderr()
    check_seed_finals(d.reports())
    check_gone(link)


def test_attach_usage_errors(link):
    """Clear errors, nothing attached."""
    for args, msg in ((["--mode", "turbo"], "not native or generic"),
                      (["--window", "0"], "--window"),
                      (["--window", "4194305"], "--window")):
        d = link.attach(*args, ready=False)
        assert d.proc.wait(timeout=60) == 2, d.stderr()
        assert msg in d.stderr()
    p = sh(ROCEMETER, "attach", "rmnosuchif0", check=False)
    assert p.returncode == 2 and "no interface 'rmnosuchif0'" in p.stderr
    assert not link.xdp_attached()
    assert not os.path.exists(link.pin_dir())


def test_idle_expiry_closes_silent_epochs(link, tmp_path):
    """[meter] idle_timeout_ms: a silent epoch is closed by the daemon's sweep
    with finalEpoch alone (pending abandoned) without any signal; a later
    request starts a new epoch with a larger epoch ID, counted there once."""
    cfg = tmp_path / "idle.ini"
    cfg.write_text("[meter]\nwindow = 4\nprovision_all = yes\nidle_timeout_ms = 300\n")
    d = link.attach("--config", str(cfg), "--json")
    n = link.send(seed_frames())
    link.wait_frames(n)
    wait_for(lambda: len([r for r in d.reports() if r["rdmaSequenceFlags"] & FINAL]) == len(SEED_EXAMPLES),
             "idle expiry of every epoch")
    assert d.proc.poll() is None
    check_seed_finals(d.reports())
    first = {r["rdmaDestinationQP"]: r["rdmaSequenceEpochId"] for r in d.reports()}

    link.send([send_only(0x000103, 107)], "later.pcap")
    link.wait_frames(n + 1)
    assert d.stop() == 0
    later = [r for r in d.reports()[len(SEED_EXAMPLES):] if r["rdmaSequenceFlags"] & FINAL]
    assert len(later) == 1, d.reports()
    r = later[0]
    assert r["rdmaDestinationQP"] == 0x000103 and r["requestPacketTotalCount"] == 1
    assert r["skippedPsnTotalCount"] == 0 and r["abandonedPsnTotalCount"] == 0
    assert r["rdmaSequenceEpochId"] > max(first.values())
    assert r["rdmaSequenceReportId"] == 1


def test_periodic_reports_then_final(link):
    """Without [export], the daemon prints non-final reports of open epochs
    every report_interval_ms (default 10000): same epoch, report IDs 1, 2, ...,
    pending kept and abandoned zero; the final report on SIGTERM continues the
    report IDs of its epoch."""
    d = link.attach("--provision-all", "--window", "4", "--json")
    n = link.send(seed_frames())
    link.wait_frames(n)

    def nonfinal():
        rs = [r for r in d.reports() if not r["rdmaSequenceFlags"] & FINAL]
        return rs if len(rs) >= len(SEED_EXAMPLES) else None
    rs = wait_for(nonfinal, "the first periodic reports", timeout=60)
    assert d.stop() == 0
    reports = d.reports()
    for qp, (_, exp) in SEED_EXAMPLES.items():
        mine = [r for r in reports if r["rdmaDestinationQP"] == qp]
        assert len({r["rdmaSequenceEpochId"] for r in mine}) == 1
        assert [r["rdmaSequenceReportId"] for r in mine] == list(range(1, len(mine) + 1))
        assert [r["rdmaSequenceFlags"] for r in mine] == [GENERATION_UNVERIFIED] * (len(mine) - 1) + \
            [FINAL | GENERATION_UNVERIFIED]
        for r in mine[:-1]:
            for k, name in REPORT_NAMES.items():
                assert r[name] == exp[k], (qp, name, r)
    assert rs
    check_seed_finals(reports)


def test_wall_clock_step_keeps_flow_start(link, tmp_path, monkeypatch):
    """The wall clock steps one day forward in the middle of an epoch
    (ROCEMETER_TEST_WALLCLOCK_STEP_FILE adds it to the daemon's wall clock,
    the host's stays as it is). Every report of that epoch keeps its
    flowStartMilliseconds ([SEQOBS] "Collector Processing": immutable within
    the epoch) and its flowEnd stays on the epoch's time base (less than a
    day after the start); an epoch that starts after the step carries the
    new wall time (docs/architecture.md "Time")."""
    day_ms = 86400 * 1000
    step = tmp_path / "wallclock-step"
    step.write_text("0\n")
    monkeypatch.setenv("ROCEMETER_TEST_WALLCLOCK_STEP_FILE", str(step))
    d = link.attach("--provision-all", "--json", "--report-interval", "100")
    qa, qb = 0x000201, 0x000202
    link.send([send_only(qa, 1), send_only(qa, 2)], "before.pcap")
    link.wait_frames(2)
    first = wait_for(lambda: [r for r in d.reports() if r["rdmaDestinationQP"] == qa],
                     "a periodic report of the first epoch")[0]
    start = first["flowStartMilliseconds"]
    step.write_text("%d\n" % day_ms)
    link.send([send_only(qa, 3), send_only(qb, 1)], "after.pcap")
    link.wait_frames(4)
    wait_for(lambda: any(r["rdmaDestinationQP"] == qa and r["requestPacketTotalCount"] == 3 for r in d.reports()),
             "a report of the first epoch after the step")
    assert d.stop() == 0
    latest_ms = time.time() * 1000 + day_ms
    reports = d.reports()
    ra = [r for r in reports if r["rdmaDestinationQP"] == qa]
    rb = [r for r in reports if r["rdmaDestinationQP"] == qb]
    assert len({r["rdmaSequenceEpochId"] for r in ra}) == 1, ra
    assert ra[-1]["rdmaSequenceFlags"] & FINAL and ra[-1]["requestPacketTotalCount"] == 3
    for r in ra:
        assert r["flowStartMilliseconds"] == start, r
        assert start <= r["flowEndMilliseconds"] < start + day_ms, r
    assert len(rb) >= 1 and rb[-1]["rdmaSequenceFlags"] & FINAL
    for r in rb:
        assert start + day_ms <= r["flowStartMilliseconds"] <= r["flowEndMilliseconds"] <= latest_ms, r


# ---- VLAN namespace: inline tags and tags in the packet metadata ------------

VLAN_PUSH = os.path.join(BUILD, "selftests", "progs", "vlan_push.bpf.o")


def tagged_send(qp, psn, tci, inline=()):
    """RC SEND Only whose source MAC ends in the TCI that the peer's tc
    program (selftests/progs/vlan_push.bpf.c) pushes as metadata; inline: 802.1Q
    tags written in the frame itself, outer first."""
    from scapy.contrib.roce import BTH
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.packet import Raw
    pkt = Ether(src="02:00:00:00:%02x:%02x" % (tci >> 8, tci & 0xFF), dst="02:00:00:00:00:02")
    for v in inline:
        pkt = pkt / Dot1Q(vlan=v)
    return (pkt / IP(src=SRC, dst=DST) / UDP(sport=49152, dport=4791)
            / BTH(opcode=0x04, pkey=0xFFFF, dqpn=qp, psn=psn) / Raw(b"\x5a" * 8))


def test_vlan_namespace_metadata_and_inline_tags(link, tmp_path):
    """namespace = vlan: the same tag gives the same key whether it arrives
    in the packet metadata (NIC or veth receive VLAN offload; read with the
    bpf_xdp_metadata_rx_vlan_tag kfunc by a device-bound program) or inline
    in the frame. The peer's tc program pushes each frame's tag as metadata;
    with the peer's tx-vlan-offload on, veth hands it over as metadata
    (vlan_tag_metadata counts it), with it off the kernel writes it inline.
    A: VLAN 100; B: VLAN 100 outside an inline VLAN 7 (100, 7); C: a
    priority tag (PCP 3, VLAN ID 0), which names no VLAN, and D untagged:
    one key (0, 0). Each connection is one epoch across both forms."""
    if not os.path.exists(VLAN_PUSH):
        pytest.fail("%s missing: run 'make %s'" % (VLAN_PUSH, os.path.relpath(VLAN_PUSH, ROOT)))
    conf = tmp_path / "vlan.conf"
    conf.write_text("[meter]\nnamespace = vlan\nprovision_all = yes\n")
    ns = ("ip", "netns", "exec", link.ns)
    sh(*ns, "tc", "qdisc", "add", "dev", link.peer, "clsact")
    sh(*ns, "tc", "filter", "add", "dev", link.peer, "egress", "bpf", "da", "obj", VLAN_PUSH, "sec", "tc")
    d = link.attach("--config", str(conf), "--json")

    def phase(k, name):
        return link.send([tagged_send(0xA, 1 + 2 * k, 100), tagged_send(0xA, 2 + 2 * k, 100),
                          tagged_send(0xB, 1 + k, 100, inline=(7,)), tagged_send(0xC, 1 + k, 0x6000)], name)

    sh(*ns, "ethtool", "-K", link.peer, "txvlan", "on")
    n = phase(0, "metadata.pcap")
    link.wait_frames(n)
    assert link.status()["meter"]["vlan_tag_metadata"] == n
    sh(*ns, "ethtool", "-K", link.peer, "txvlan", "off")
    n += phase(1, "inline.pcap")
    n += link.send([tagged_send(0xC, 3, 0)], "untagged.pcap")
    link.wait_frames(n)
    meter = link.status()["meter"]
    assert meter["vlan_tag_metadata"] == 4 and meter["eligible_requests"] == n
    assert d.stop() == 0, d.stderr()
    finals = sorted((r["rdmaDestinationQP"], r["vlanId"], r["dot1qCustomerVlanId"], r["requestPacketTotalCount"],
                     r["skippedPsnTotalCount"]) for r in d.reports() if r["rdmaSequenceFlags"] & FINAL)
    assert finals == [(0xA, 100, 0, 4, 0), (0xB, 100, 7, 2, 0), (0xC, 0, 0, 3, 0)], finals
