# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The connection census live, at the tc ingress of a veth end (root):
`rocemeter connections --live IFACE`, `attach --census` with `status
--connections`, the census beside the flow-label program, and the clean-up
(`detach` removes a census whose process was killed).

Each test makes its own namespace and veth pair (test_live_meter.Link, names
with the process ID); tcpreplay sends the bundled NCCL capture or a scapy
capture from the namespace end. Expected values come from tshark's decode
of the capture sent, classed by [IBPKT]'s opcode table
(selftests/bpf/test_connections.py). No timing is asserted: the tests wait
for the census to have counted every frame sent (its statistics read with
bpftool), then stop it with SIGINT.
"""
import importlib.util
import json
import os
import re
import signal
import subprocess

import pytest

import rocetest as t
import test_live_meter as live

ROCEMETER = live.ROCEMETER
NCCL = live.NCCL_PCAP
link = live.link
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (tc, BPF, namespaces)")

_spec = importlib.util.spec_from_file_location(
    "census_expect", os.path.join(t.ROOT, "selftests", "bpf", "test_connections.py"))
expect = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(expect)


def tc_filter(iface):
    """The census's tc filter at iface's ingress: its program ID, or None."""
    out = live.sh("tc", "filter", "show", "dev", iface, "ingress", check=False).stdout
    m = re.search(r"handle 0x524e .* id (\d+)", out)
    return int(m.group(1)) if m else None


def census_frames(prog_id):
    """frames counted so far by the census program prog_id (map census_stats, summed over CPUs)."""
    prog = json.loads(live.sh("bpftool", "-j", "prog", "show", "id", str(prog_id)).stdout)
    for map_id in prog.get("map_ids", []):
        m = json.loads(live.sh("bpftool", "-j", "map", "show", "id", str(map_id)).stdout)
        if m["name"] != "census_stats":
            continue
        dump = json.loads(live.sh("bpftool", "-j", "map", "dump", "id", str(map_id)).stdout)
        total = 0
        for per_cpu in dump[0]["values"]:
            raw = bytes(int(b, 16) for b in per_cpu["value"][:8])  # v[RM_CENSUS_STAT_FRAMES]
            total += int.from_bytes(raw, "little")
        return total
    raise AssertionError("no census_stats map in program %d" % prog_id)


def frames_in(path):
    return len(t.tshark_frames(path))


def assert_census_of(doc, path):
    """doc (connections --json, or one interface of status --connections --json) = tshark's decode of path."""
    frames = t.tshark_frames(path)
    want = expect.expected_from_tshark(frames)
    recs = sum(1 for f in frames if f["rec"])
    assert doc["frames"] == len(frames) and doc["bth_frames"] == recs
    assert doc["not_counted_table_full"] == 0
    got = {expect.entry_key(e): e for e in doc["connections"]}
    assert set(got) == set(want)
    for k, w in want.items():
        assert got[k]["packets"] == {c: w["packets"][c] for c in expect.CLASSES}, k
        assert got[k]["opcodes"] == sorted(w["opcodes"]), k
        why = expect.exclusions(w["packets"])
        assert got[k]["excluded"] == why, k
        assert got[k]["first_seen_ms"] <= got[k]["last_seen_ms"]
    eligible = sorted(k for k, w in want.items() if not expect.exclusions(w["packets"]))
    assert eligible
    assert doc["provision"] == ["connection = %s %s 0x%06x 0x%04x" % (k[1], k[2], k[3], k[4]) for k in eligible]


def test_live_census(link, tmp_path):
    """connections --live: attached while it counts, SIGINT prints what it
    counted and removes the filter; a second census on the interface is refused."""
    n = frames_in(NCCL)
    proc = subprocess.Popen([ROCEMETER, "connections", "--live", link.iface, "--seconds", "3600", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        prog = live.wait_for(lambda: proc.poll() is None and tc_filter(link.iface), "the census filter")
        p = subprocess.run([ROCEMETER, "connections", "--live", link.iface, "--seconds", "1"], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 1 and "a census is already attached to %s" % link.iface in p.stderr
        link.send_pcap(NCCL)
        live.wait_for(lambda: census_frames(prog) == n, "the census to count %d frames" % n)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert "frames_read" not in doc
    assert_census_of(doc, NCCL)
    assert tc_filter(link.iface) is None


def test_attach_census_and_status(link, tmp_path):
    """attach --census: status --connections shows the census (JSON and the
    [provision] lines); stopping the daemon removes the filter and its pins."""
    n = frames_in(NCCL)
    d = link.attach("--provision-all", "--census", "--json")
    pins = [os.path.join(link.pin_dir(), name) for name in ("census", "census_stats")]
    assert all(os.path.exists(p) for p in pins)
    prog = tc_filter(link.iface)
    assert prog
    link.send_pcap(NCCL)
    link.wait_frames(n)
    live.wait_for(lambda: census_frames(prog) == n, "the census to count %d frames" % n)
    st = json.loads(live.sh(ROCEMETER, "status", link.iface, "--connections", "--json").stdout)
    assert len(st) == 1 and st[0]["interface"] == link.iface and st[0]["census_attached"] is True
    assert_census_of(st[0], NCCL)
    text = live.sh(ROCEMETER, "status", link.iface, "--connections").stdout
    assert text.startswith(link.iface + ":\n")
    assert text.endswith("\n".join(["[provision]"] + st[0]["provision"]) + "\n")
    assert d.stop() == 0
    assert tc_filter(link.iface) is None
    assert not any(os.path.exists(p) for p in pins)
    # No census any more: exit 3 (not attached), as for the meter.
    p = subprocess.run([ROCEMETER, "status", link.iface, "--connections", "--json"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 3, p
    assert json.loads(p.stdout) == [{"interface": link.iface, "census_attached": False}]


def test_census_with_mirror_refused(link, tmp_path):
    conf = tmp_path / "census.conf"
    conf.write_text("[meter]\ncensus = yes\n")
    for args in (["--census"], ["--config", str(conf)]):
        p = subprocess.run([ROCEMETER, "attach", link.iface, "--mirror", *args], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 2 and "counts at tc ingress, after XDP: with --mirror" in p.stderr, args
        assert tc_filter(link.iface) is None


def test_census_from_the_configuration(link, tmp_path):
    """[meter] census = yes does what --census does (docs/configuration.md)."""
    conf = tmp_path / "census.conf"
    conf.write_text("[meter]\nprovision_all = yes\ncensus = yes\n")
    d = link.attach("--config", str(conf))
    prog = tc_filter(link.iface)
    assert prog
    n = link.send(t_frames := [live.send_only(0x11, psn) for psn in range(5)])
    live.wait_for(lambda: census_frames(prog) == n, "the census to count the frames")
    st = json.loads(live.sh(ROCEMETER, "status", link.iface, "--connections", "--json").stdout)[0]
    assert st["census_attached"] is True
    assert [(e["rdmaDestinationQP"], e["packets"]["send_write"]) for e in st["connections"]] == [(0x11, len(t_frames))]
    assert st["provision"] == ["connection = %s %s 0x000011 0xffff" % (live.SRC, live.DST)]
    assert d.stop() == 0
    assert tc_filter(link.iface) is None


def test_census_before_the_flowlabel_program(link, tmp_path):
    """The census passes every frame on: the flow-label program at the same
    ingress still sees and labels each one."""
    frames = [t.Frame(t.roce_frame("2001:db8::1", "2001:db8::2", 0x1c, psn), t.T0 + psn * 10**6)
              for psn in range(20)]
    path = str(tmp_path / "v6.pcap")
    t.write_pcap(path, frames)
    d = link.attach("--provision-all", "--census", "--flowlabel", "ingress")
    prog = tc_filter(link.iface)
    link.send_pcap(path)
    live.wait_for(lambda: census_frames(prog) == len(frames), "the census to count the frames")
    live.wait_for(lambda: (link.status()["flowlabel"] or {}).get("frames") == len(frames),
                  "the flow-label program to see every frame")
    assert link.status()["flowlabel"]["stats"]["rewritten"] == len(frames)
    st = json.loads(live.sh(ROCEMETER, "status", link.iface, "--connections", "--json").stdout)[0]
    assert [e["packets"]["send_write"] for e in st["connections"]] == [len(frames)]
    assert st["provision"] == ["connection = 2001:db8::1 2001:db8::2 0x00001c 0xffff"]
    assert d.stop() == 0


def test_detach_removes_a_killed_census(link):
    """A census whose process was killed stays attached (a tc filter outlives
    its process); detach removes it."""
    proc = subprocess.Popen([ROCEMETER, "connections", "--live", link.iface, "--seconds", "3600"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    live.wait_for(lambda: tc_filter(link.iface), "the census filter")
    proc.kill()
    proc.wait()
    assert tc_filter(link.iface)
    p = live.sh(ROCEMETER, "detach", link.iface)
    assert "removed the connection census from %s" % link.iface in p.stdout
    assert tc_filter(link.iface) is None
