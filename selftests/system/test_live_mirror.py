# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The kernel's own mirroring into a live meter (root): frames a namespace
sends on a veth are copied by `tc ... u32 match u32 0 0 action mirred egress
mirror` to the metered link, as they are (local SPAN, plain frames) or into
a vxlan device whose underlay is the metered link (a remote mirror,
VXLAN-encapsulated by the kernel). The meter attached with `[capture]`
reports the same counters as `rocemeter replay` over the plain frames, at
the observation point of the VXLAN session; `status` shows the session.

The metered end stays in the root namespace (pins); the sender, the mirror
filter and the vxlan device are in the test's namespace (test_live_meter.py's
Link). This kernel has no GRE module: ERSPAN is tested through captures
(selftests/bpf/test_meter_mirror.py).
"""
import json
import os
import re
import urllib.request

import pytest

import rocetest as rt
import test_export_e2e as e2e
import test_live_meter as live
from test_live_meter import ROCEMETER, sh, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (XDP, tc, namespaces)")
link = live.link
pki = e2e.pki

VNI = 5001
UNDER_LOCAL, UNDER_REMOTE = "10.77.0.2", "10.77.0.1"


def sender(link):
    """A veth pair inside the namespace: the sender transmits on src0; its
    egress is mirrored. Returns src0's name."""
    a, b = "rms" + link.iface[3:], "rmt" + link.iface[3:]
    sh("ip", "-n", link.ns, "link", "add", a, "type", "veth", "peer", "name", b)
    for dev in (a, b):
        sh("ip", "-n", link.ns, "link", "set", dev, "mtu", "9000", "up")
    sh("ip", "netns", "exec", link.ns, "tc", "qdisc", "add", "dev", a, "clsact")
    return a


def mirror_to(link, dev, target):
    sh("ip", "netns", "exec", link.ns, "tc", "filter", "add", "dev", dev, "egress", "protocol", "all", "u32",
       "match", "u32", "0", "0", "action", "mirred", "egress", "mirror", "dev", target)


def frames():
    s, d = live.SRC, live.DST
    psns = [10, 11, 13, 12, 14, 14, 15, 17, 18]
    out = [live.send_only(0xA1, p) for p in psns] + [live.send_only(0xB2, 100 + i) for i in range(5)]
    return out


def replay_reports(tmp_path, fr):
    from scapy.utils import wrpcap
    path = os.path.join(str(tmp_path), "plain.pcap")
    wrpcap(path, fr)
    p = sh(ROCEMETER, "replay", "--provision-all", "--window", "1024", "--json", path)
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def counters(reports):
    return sorted((rt.report_key(r),) + tuple(r[f] for f in rt.COUNTER_FIELDS
                                              if f not in ("flowStartMilliseconds", "flowEndMilliseconds"))
                  for r in reports)


def send_from(link, dev, fr, tmp_path):
    from scapy.utils import wrpcap
    path = os.path.join(str(tmp_path), "send.pcap")
    wrpcap(path, fr)
    sh("ip", "netns", "exec", link.ns, "tcpreplay", "-q", "--pps=2000", "-i", dev, path, timeout=120)


def served_port(text):
    m = re.search(r"metrics: serving /metrics on \S+ \(port (\d+)\)", text)
    return int(m.group(1)) if m else None


def scrape(port):
    """{(metric, frozenset(labels)): value} of one /metrics exposition."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            m = re.fullmatch(r'(\w+)(?:\{(.*)\})? (\d+)', line)
            assert m, line
            out[(m.group(1), frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))] = int(m.group(3))
    return out


def test_local_span_with_mirred(link, tmp_path):
    """tc mirred copies the sender's frames to the metered link: plain
    frames, metered as on a TAP."""
    src = sender(link)
    mirror_to(link, src, link.peer)
    d = link.attach("--provision-all", "--window", "1024", "--json")
    fr = frames()
    send_from(link, src, fr, tmp_path)
    link.wait_frames(len(fr))
    assert d.stop() == 0
    assert counters(d.reports()) == counters(replay_reports(tmp_path, fr))


def vxlan_mirror(link):
    """tc mirred of the sender's egress into a vxlan device (VNI 5001) whose underlay is the metered link."""
    src = sender(link)
    vx = "rmv" + link.iface[3:]
    sh("ip", "-n", link.ns, "addr", "add", UNDER_LOCAL + "/24", "dev", link.peer)
    mac = json.loads(sh("ip", "-j", "link", "show", "dev", link.iface).stdout)[0]["address"]
    sh("ip", "-n", link.ns, "neigh", "add", UNDER_REMOTE, "lladdr", mac, "dev", link.peer)
    sh("ip", "-n", link.ns, "link", "add", vx, "type", "vxlan", "id", str(VNI), "local", UNDER_LOCAL,
       "remote", UNDER_REMOTE, "dstport", "4789", "dev", link.peer)
    sh("ip", "-n", link.ns, "link", "set", vx, "mtu", "8900", "up")
    mirror_to(link, src, vx)
    return src


def test_vxlan_device_as_mirror_target(link, tmp_path):
    """tc mirred into a vxlan device: the kernel sends VXLAN copies (VNI
    5001) over the metered link; the meter takes them off and reports them
    at the session's observation point."""
    src = vxlan_mirror(link)
    cfg = os.path.join(str(tmp_path), "vx.conf")
    with open(cfg, "w") as f:
        f.write("[capture]\nencapsulation = vxlan\nobservation_point = 301 vtep-ns vxlan %d\n" % VNI)
    d = link.attach("--provision-all", "--window", "1024", "--json", "--config", cfg)
    fr = frames()
    send_from(link, src, fr, tmp_path)

    def mirrored():
        m = link.status()["meter"]
        return m["mirror_frames"] >= len(fr) and m
    m = wait_for(mirrored, "the VXLAN copies")
    st = link.status()
    assert m["unknown_mirror_session"] == 0 and m["malformed_mirror"] == 0
    sessions = st["mirror"]["sessions"]
    assert [(s["kind"], s["session"], s["observationPointId"]) for s in sessions] == [("vxlan", VNI, 301)]
    assert sessions[0]["frames"] == len(fr)
    assert all(c.get("observation_point") == 1 for c in st["contexts"])
    assert d.stop() == 0
    reps = d.reports()
    assert {r["observationPointId"] for r in reps} == {301}
    assert counters(reps) == counters(replay_reports(tmp_path, fr))


def test_attach_census_takes_the_capture_section(link, tmp_path):
    """attach --census with [capture] (VXLAN, mirror_sessions = auto, no
    line): the census takes the VXLAN copies off as the meter does, and
    counts each connection at the derived observation point of VNI 5001."""
    src = vxlan_mirror(link)
    cfg = os.path.join(str(tmp_path), "vx.conf")
    with open(cfg, "w") as f:
        f.write("[capture]\nencapsulation = vxlan\nmirror_sessions = auto\n")
    d = link.attach("--provision-all", "--window", "1024", "--json", "--census", "--config", cfg)
    fr = frames()
    send_from(link, src, fr, tmp_path)

    def counted():
        st = json.loads(sh(ROCEMETER, "status", link.iface, "--connections", "--json").stdout)[0]
        return sum(sum(c["packets"].values()) for c in st["connections"]) >= len(fr) and st
    st = wait_for(counted, "the census to count the VXLAN copies")
    conns = sorted((c["rdmaDestinationQP"], c.get("observation_point"), sum(c["packets"].values()))
                   for c in st["connections"])
    assert conns == [(0xA1, 1, 9), (0xB2, 1, 5)]
    m = link.status()
    assert [(s["kind"], s["session"], s["observationPointId"], s["name"]) for s in m["mirror"]["sessions"]] == [
        ("vxlan", VNI, (2 << 56) | VNI, "")]
    assert d.stop() == 0
    assert {r["observationPointId"] for r in d.reports()} == {(2 << 56) | VNI}


def test_erspan_capture_sent_live(link, tmp_path):
    """ERSPAN II and III copies of two switches built with scapy and sent
    live with tcpreplay: the reports equal the plain frames' at each
    switch's observation point, and a GRE sequence gap of one switch closes
    only its epochs."""
    from scapy.contrib.erspan import ERSPAN_II, ERSPAN_III
    from scapy.layers.inet import IP
    from scapy.layers.l2 import GRE, Ether
    from scapy.packet import Raw

    def erspan(inner, switch, seq, kind):
        pkt = Ether(src="02:00:00:00:0a:01", dst="02:00:00:00:0a:02") / IP(src=switch, dst="192.0.2.100") / GRE(
            proto=0x88BE if kind == 2 else 0x22EB, seqnum_present=1, sequence_number=seq)
        pkt = pkt / (ERSPAN_II(ver=1, session_id=3) if kind == 2 else ERSPAN_III(ver=2, session_id=3))
        return pkt / Raw(bytes(inner))

    fr = frames()
    copies = []
    for i, f in enumerate(fr):
        copies.append(erspan(f, "192.0.2.11", 1 + i, 2))
        if i != 3:  # switch B's copy of the fourth frame is lost
            copies.append(erspan(f, "192.0.2.12", 1 + i, 3))
    cfg = os.path.join(str(tmp_path), "erspan.conf")
    with open(cfg, "w") as f:
        f.write("[meter]\nmetrics = 127.0.0.1:0\nmetrics_connections = 100\n"
                "[capture]\nencapsulation = erspan\nobservation_point = 11 leaf-a erspan 192.0.2.11 3\n"
                "observation_point = 12 leaf-b erspan 192.0.2.12 3\n")
    d = link.attach("--provision-all", "--window", "1024", "--json", "--config", cfg)
    link.send(copies, name="erspan.pcap")
    link.wait_frames(len(copies))
    st = link.status()
    assert st["meter"]["mirror_sequence_gaps"] == 1
    by_id = {s["observationPointId"]: s for s in st["mirror"]["sessions"]}
    assert by_id[11]["sequence_gaps"] == 0 and by_id[12]["sequence_gaps"] == 1 and by_id[12]["sequence_lost"] == 1
    # Each observation point by the NAME of its line: status (JSON and text) and /metrics.
    names = {11: "leaf-a", 12: "leaf-b"}
    assert {i: s["name"] for i, s in by_id.items()} == names
    assert len(st["contexts"]) == 4
    assert all(names[c["observationPointId"]] == c["observation_point_name"] for c in st["contexts"])
    text = sh(ROCEMETER, "status", link.iface).stdout
    for i, n in names.items():
        assert text.count("(%s, observationPointId %d)" % (n, i)) == 2, text
    port = wait_for(lambda: served_port(d.stderr()), "the meter's metrics server")
    conn = [(labels, v) for (m, labels), v in scrape(port).items() if m == "rocemeter_meter_connection_requests_total"]
    want = sorted((str(c["observationPointId"]), c["observation_point_name"], c["rdmaDestinationQP"],
                   c["requestPacketTotalCount"]) for c in st["contexts"])
    assert sorted((l["observation_point"], l["observation_point_name"], int(l["qp"], 16), v)
                  for l, v in ((dict(x), v) for x, v in conn)) == want
    assert d.stop() == 0
    reps = d.reports()
    assert counters([r for r in reps if r["observationPointId"] == 11]) == counters(replay_reports(tmp_path, fr))
    b = [r for r in reps if r["observationPointId"] == 12]
    assert any(r["rdmaSequenceFlags"] & rt.CAPTURE_DISCONTINUITY for r in b)
    assert not any(r["rdmaSequenceFlags"] & rt.CAPTURE_DISCONTINUITY for r in reps if r["observationPointId"] == 11)
    # replay over the capture that was sent gives the same reports
    p = sh(ROCEMETER, "replay", "--provision-all", "--window", "1024", "--json", "--config", cfg,
           os.path.join(link.tmp, "erspan.pcap"))
    assert counters(reps) == counters([json.loads(x) for x in p.stdout.splitlines() if x.strip()])


def test_names_reach_the_collector(link, tmp_path, pki):
    """attach with [capture] and [export]: after the Templates the exporter
    sends the lines' names (Options Template 262) at session start; the
    collector stores them and report prints each epoch's observation point
    by its NAME (JSON, table); the first Data message's Sequence Number
    counts the name records (no gap at the collector)."""
    import signal
    import subprocess
    import time
    from scapy.contrib.erspan import ERSPAN_II
    from scapy.layers.inet import IP
    from scapy.layers.l2 import GRE, Ether
    from scapy.packet import Raw

    def erspan(inner, switch, seq):
        return Ether(src="02:00:00:00:0a:01", dst="02:00:00:00:0a:02") / IP(src=switch, dst="192.0.2.100") / GRE(
            proto=0x88BE, seqnum_present=1, sequence_number=seq) / ERSPAN_II(ver=1, session_id=3) / Raw(bytes(inner))

    fr = frames()
    copies = [erspan(f, sw, 1 + i) for i, f in enumerate(fr) for sw in ("192.0.2.11", "192.0.2.12")]
    port = e2e.free_port()
    db = tmp_path / "collector.db"
    conf = e2e.export_config(tmp_path, pki, port)
    with open(conf, "a") as f:
        f.write("[capture]\nencapsulation = erspan\nobservation_point = 11 leaf-a erspan 192.0.2.11 3\n"
                "observation_point = 12 leaf-b erspan 192.0.2.12 3\n")
    col = subprocess.Popen(
        [ROCEMETER, "collect", "--listen", "127.0.0.1:%d" % port, "--db", str(db), "--cert", "%s/collector.pem" % pki,
         "--key", "%s/collector.key" % pki, "--ca", "%s/ca.pem" % pki, "--peer-name", "exporter.rocemeter.test"],
        stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        d = link.attach("--config", conf, "--window", "1024")
        e2e.wait_session(d)
        link.send(copies, name="erspan.pcap")
        link.wait_frames(len(copies))
        assert d.stop() == 0
        time.sleep(0.5)
    finally:
        col.send_signal(signal.SIGTERM)
        col.wait(timeout=30)
    p = sh(ROCEMETER, "report", "--db", str(db), "--json")
    epochs = [json.loads(x) for x in p.stdout.splitlines()]
    assert len(epochs) == 4
    assert sorted({(e["key"]["observationPointId"], e["observation_point_name"]) for e in epochs}) == [
        (11, "leaf-a"), (12, "leaf-b")]
    table = sh(ROCEMETER, "report", "--db", str(db)).stdout
    assert table.count(" 11 leaf-a ") == 2 and table.count(" 12 leaf-b ") == 2, table
    import sqlite3
    with sqlite3.connect(str(db)) as c:
        assert c.execute("SELECT seq_gaps, rejected FROM sessions").fetchall() == [(0, 0)]
