# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Live: one QP whose requests arrive on two CPUs at once (docs/architecture.md
"Exact per context, whatever CPU sees the packet").

The metered veth end has two receive queues; in the namespace the sending
end has two transmit queues, and XPS maps transmit queue i to CPU i. A veth
runs its XDP program in the NAPI poll of the receive queue that the sending
queue feeds, on the CPU that sent (napi_schedule in veth_xmit), so two
senders pinned to CPU 0 and CPU 1 (taskset) have the meter run on both CPUs
at once, for the same context. The engine is exact across CPUs (the
context's bpf_spin_lock): the counters must equal those of [SEQOBS]'s engine
(tests/lib/rocetest.SeqEpoch, an independent Python model) for every
interleaving of the two streams; the streams are chosen so that every
interleaving gives the same counters (checked on the model for several), so
the live figures are exact whatever order the two CPUs took.

The meter's per-CPU statistics (bpftool, the pinned `stats` map) show that
both CPUs metered frames. The second test sends at full speed from both
CPUs and prints packets/s per core (a figure for docs/benchmarks.md, never
asserted).
"""
import os
import random
import shutil
import subprocess
import time

import pytest

import rocetest as rt
import test_live_meter as live

QP = 0x000201
N = 20000  # PSNs 1..N sent by each CPU (each PSN twice), after PSN 0 alone

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (XDP, bpffs, namespaces)"),
    pytest.mark.skipif(os.cpu_count() < 2 or not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1"),
    pytest.mark.skipif(shutil.which("tcpreplay") is None, reason="needs tcpreplay"),
]


class TwoQueueLink(live.Link):
    """A veth pair with two queues each way; transmit queue i of the peer on CPU i (XPS)."""

    def setup(self):
        sh = live.sh
        sh("ip", "netns", "add", self.ns)
        sh("ip", "netns", "exec", self.ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1")
        sh("ip", "link", "add", self.iface, "numtxqueues", "2", "numrxqueues", "2", "type", "veth", "peer", "name",
           self.peer, "numtxqueues", "2", "numrxqueues", "2", "netns", self.ns)
        with open("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % self.iface, "w") as f:
            f.write("1")
        sh("ip", "link", "set", self.iface, "up")
        sh("ip", "-n", self.ns, "link", "set", self.peer, "up")
        for q, mask in ((0, "1"), (1, "2")):
            sh("ip", "netns", "exec", self.ns, "sh", "-c",
               "echo %s > /sys/class/net/%s/queues/tx-%d/xps_cpus" % (mask, self.peer, q))
        self.pin_dir()

    def start_sender(self, path, cpu, *opts):
        """tcpreplay of path from the namespace end, pinned to cpu (not waited for)."""
        return subprocess.Popen(["ip", "netns", "exec", self.ns, "taskset", "-c", str(cpu), "tcpreplay", "-q",
                                 *opts, "-i", self.peer, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)


@pytest.fixture
def link2(request, tmp_path):
    if not os.path.exists(live.ROCEMETER):
        pytest.fail("%s missing: run make" % live.ROCEMETER)
    lk = TwoQueueLink(tmp_path)
    request.addfinalizer(lk.cleanup)
    lk.setup()
    return lk


def write_psns(lk, name, reqs, sport):
    """A capture of RC SEND Only requests, reqs: (DestQP, PSN) pairs. One
    scapy frame (test_live_meter.send_only), its 24-bit DestQP and PSN (BTH
    bytes 5-7 and 9-11) set per frame (scapy builds some 500 frames/s on a
    loaded machine; the ICRC scapy appended stays that of the first frame:
    the meter does not check it)."""
    tmpl = bytearray(bytes(live.send_only(QP, 0, sport=sport)))
    bth = 14 + 20 + 8  # Ethernet, IPv4 without options, UDP
    assert tmpl[bth] == 0x04 and int.from_bytes(tmpl[bth + 5:bth + 8], "big") == QP  # SEND Only, DestQP
    frames = []
    for i, (qp, psn) in enumerate(reqs):
        tmpl[bth + 5:bth + 8] = qp.to_bytes(3, "big")
        tmpl[bth + 9:bth + 12] = psn.to_bytes(3, "big")
        frames.append(rt.Frame(tmpl, rt.T0 + i))
    path = os.path.join(lk.tmp, name)
    rt.write_pcap(path, frames)
    return path


def wait_senders(procs):
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, (out, err)


def per_cpu_frames(lk):
    """RM_STAT_FRAMES of each CPU, from the pinned per-CPU `stats` map (bpftool)."""
    i = live.stat_names().index("RM_STAT_FRAMES")
    stats = live.bpftool_dump(os.path.join(lk.pin_dir(), "stats"))
    return {cpu["cpu"]: cpu["value"]["v"][i] for cpu in stats[0]["formatted"]["values"]}


def model_counters(order, window):
    """[SEQOBS]'s counters of one epoch (rocetest.SeqEpoch) after the PSNs in order."""
    ep = rt.SeqEpoch(window, order[0], 0)
    for psn in order[1:]:
        assert ep.observe(psn, 0)
    return ep.snapshot()


def interleave(a, b, rng):
    """One random interleaving of the two streams, each in its own order."""
    out, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        if j == len(b) or (i < len(a) and rng.random() < 0.5):
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out


NAMES = ("requestPacketTotalCount", "repeatedPsnTotalCount", "skippedPsnTotalCount", "filledPsnTotalCount",
         "expiredPsnTotalCount", "pendingPsnCount", "unclassifiedLatePacketTotalCount")


def order_free(a, b, names, rng):
    """The counters (names) of the model after PSN 0 and then streams a and b
    interleaved: the same for a after b, b after a, and three random
    interleavings (else the live figures could not be exact)."""
    orders = [[0] + a + b, [0] + b + a] + [[0] + interleave(a, b, rng) for _ in range(3)]
    got = [{k: model_counters(o, 1 << 22)[k] for k in names} for o in orders]  # the default W
    assert all(g == got[0] for g in got), got
    return got[0]


def test_one_qp_on_two_cpus_exact(link2):
    """PSN 0 of two QPs alone, then from CPU 0 and, at the same time, CPU 1:
    QP A PSNs 1..N from each (every PSN twice), QP B the even PSNs of 1..2N
    from CPU 0 and the odd ones from CPU 1 (one CPU's gaps filled by the
    other). The meter saw frames on both CPUs; A's counters are the model's
    (requests 2N + 1, repeated N, nothing skipped, pending, expired or
    late) whatever the interleaving, B's the model's in what does not
    depend on it (requests 2N + 1; nothing repeated, pending, expired or
    late; skipped = filled)."""
    qa, qb = QP, QP + 1
    rng = random.Random(29)
    stream = list(range(1, N + 1))
    evens, odds = list(range(2, 2 * N + 1, 2)), list(range(1, 2 * N, 2))
    want_a = order_free(stream, stream, NAMES, rng)
    assert want_a["requestPacketTotalCount"] == 2 * N + 1 and want_a["repeatedPsnTotalCount"] == N
    # B on the model with 500 PSNs a CPU (its gaps make the model quadratic):
    # the counters that do not depend on the order, and what they are.
    free_b = [k for k in NAMES if k not in ("skippedPsnTotalCount", "filledPsnTotalCount")]
    m = 500
    small = order_free(list(range(2, 2 * m + 1, 2)), list(range(1, 2 * m, 2)), free_b, rng)
    assert small == dict({k: 0 for k in free_b}, requestPacketTotalCount=2 * m + 1), small
    want_b = dict(small, requestPacketTotalCount=2 * N + 1)

    # Distinct UDP source ports, as two paths of one QP would have; the key ignores them.
    first = write_psns(link2, "first.pcap", [(qa, 0), (qb, 0)], 49152)
    a = write_psns(link2, "cpu0.pcap", [r for i in range(N) for r in ((qa, stream[i]), (qb, evens[i]))], 49152)
    b = write_psns(link2, "cpu1.pcap", [r for i in range(N) for r in ((qa, stream[i]), (qb, odds[i]))], 49153)
    link2.attach("--provision-all", "--json")
    wait_senders([link2.start_sender(first, 0)])
    link2.wait_frames(2)
    wait_senders([link2.start_sender(a, 0, "--topspeed"), link2.start_sender(b, 1, "--topspeed")])
    total = 4 * N + 2
    link2.wait_frames(total)

    cpus = per_cpu_frames(link2)
    print("frames per CPU:", cpus)
    assert cpus.get(0, 0) > 0 and cpus.get(1, 0) > 0, cpus  # the premise: both CPUs metered
    assert sum(cpus.values()) == total
    st = link2.status()
    assert st["meter"]["eligible_requests"] == total
    ctx = {c["rdmaDestinationQP"]: c for c in st["contexts"]}
    assert sorted(ctx) == [qa, qb] and all(c["state"] == "open" for c in ctx.values())
    assert {k: ctx[qa][k] for k in NAMES} == want_a, ctx[qa]
    assert {k: ctx[qb][k] for k in free_b} == want_b, ctx[qb]
    assert ctx[qb]["skippedPsnTotalCount"] == ctx[qb]["filledPsnTotalCount"], ctx[qb]
    print("QP B: skipped = filled =", ctx[qb]["skippedPsnTotalCount"])


def rx_packets(iface):
    with open("/sys/class/net/%s/statistics/rx_packets" % iface) as f:
        return int(f.read())


def softirq_s():
    """Softirq time of CPU 0 and CPU 1 so far, s (/proc/stat; the veth's NAPI poll and XDP run there)."""
    hz = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        rows = {ln.split()[0]: ln.split() for ln in f if ln.startswith("cpu")}
    return sum(int(rows["cpu%d" % c][7]) for c in (0, 1)) / hz


def send_both(lk, a, b):
    """Both captures at full speed, CPU 0 and CPU 1 at once; the wall time and
    the two CPUs' softirq time meanwhile, s."""
    t0, s0 = time.monotonic(), softirq_s()
    wait_senders([lk.start_sender(a, 0, "--topspeed"), lk.start_sender(b, 1, "--topspeed")])
    return time.monotonic() - t0, softirq_s() - s0


@pytest.mark.skipif(shutil.which("xdp-loader") is None, reason="needs xdp-loader (the parse-only reference)")
def test_two_cpus_packets_per_second(link2):
    """Both CPUs at full speed on one QP: packets/s per core with the meter
    and, in the same run, with the parse-only XDP program of the benchmarks
    (selftests/progs/baseline.bpf.c rm_base_xdp, attached by xdp-loader): the veth's
    XDP path and the sender are in both, their difference is the meter's.
    Printed (a measurement, not asserted); with the meter the counts stay
    exact for what arrived."""
    per = 100000
    a = write_psns(link2, "fast0.pcap", [(QP, p) for p in range(per)], 49152)
    b = write_psns(link2, "fast1.pcap", [(QP, p) for p in range(per)], 49153)
    live.sh("xdp-loader", "load", "-m", "native", "-n", "rm_base_xdp", link2.iface,
            os.path.join(live.BUILD, "selftests", "progs", "baseline.bpf.o"))
    try:
        rx0 = rx_packets(link2.iface)
        wall0, soft0 = send_both(link2, a, b)
        time.sleep(0.5)
        got0 = rx_packets(link2.iface) - rx0
    finally:
        live.sh("xdp-loader", "unload", "-a", link2.iface)
    link2.attach("--provision-all", "--json")
    wall, soft = send_both(link2, a, b)
    time.sleep(0.5)
    cpus = per_cpu_frames(link2)
    st = link2.status()
    total = sum(cpus.values())
    assert st["meter"]["frames"] == total <= 2 * per
    base, rate = got0 / 2 / wall0, total / 2 / wall
    print("\nparse-only XDP: %d frames in %.2f s, %.0f packets/s per core; softirq %.0f ns per packet" %
          (got0, wall0, base, soft0 * 1e9 / max(got0, 1)))
    print("meter: %d frames in %.2f s (CPU 0 %d, CPU 1 %d), %.0f packets/s per core; softirq %.0f ns per packet" %
          (total, wall, cpus.get(0, 0), cpus.get(1, 0), rate, soft * 1e9 / max(total, 1)))
    (ctx,) = st["contexts"]
    assert ctx["requestPacketTotalCount"] == total
