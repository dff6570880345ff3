# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Every key every command prints as JSON is in docs/json.md, in the section
of that command: replay --json and --stats-json, attach --json, status
--json (with the daemon's export counters), connections --json and status
--connections --json, report --json, --format csv, report --summary
(JSON, CSV) and report --limits --json. The commands run for real: replay over a bundled
capture, attach on a veth pair exporting over plain TCP to a collector."""
import csv
import io
import json
import os
import subprocess

import pytest

import rocetest as rt  # tests/lib: pin_dir()
import test_export_e2e as e2e
import test_live_meter as live
import importlib.util

_spec = importlib.util.spec_from_file_location(
    "test_json_schema", os.path.join(e2e.ROOT, "tests", "unit", "test_json_schema.py"))
schema = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(schema)

ROCEMETER = e2e.ROCEMETER
RPING = os.path.join(e2e.ROOT, "data", "pcaps", "linlinw5_rping.pcap")
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (BPF: replay, XDP on a veth)")
link = live.link


def keys(v):
    """Every object key at any depth."""
    if isinstance(v, dict):
        out = set(v)
        for x in v.values():
            out |= keys(x)
        return out
    if isinstance(v, list):
        out = set()
        for x in v:
            out |= keys(x)
        return out
    return set()


def assert_documented(section, docs):
    want = schema.documented()[section]
    got = set()
    for d in docs:
        got |= keys(d)
    assert got, section
    assert got - want == set(), "keys printed but not in docs/json.md \"%s\"" % section


def test_replay_keys(tmp_path):
    stats = tmp_path / "stats.json"
    p = subprocess.run([ROCEMETER, "replay", "-a", "--json", "--stats-json", str(stats), RPING],
                       capture_output=True, text=True, check=True)
    reports = [json.loads(line) for line in p.stdout.splitlines()]
    assert reports and reports[-1]["flag_names"][0] == "finalEpoch"
    assert_documented("reports", reports)
    assert_documented("replay statistics", [json.loads(stats.read_text())])


def test_attach_status_and_report_keys(tmp_path, link):
    # attach --json (printing, not exporting): its report lines.
    d = link.attach("--provision-all", "--json")
    link.send_pcap(RPING)
    link.wait_frames(65)
    assert_documented("status", [json.loads(subprocess.run([ROCEMETER, "status", link.iface, "--json"],
                                                            capture_output=True, text=True, check=True).stdout)])
    assert d.stop() == 0
    assert_documented("reports", d.reports())

    # Exporting (plain TCP) to a collector: status shows the export counters, then report.
    port = e2e.free_port()
    db = tmp_path / "c.db"
    col = subprocess.Popen([ROCEMETER, "collect", "--plain-tcp", "--listen", f"127.0.0.1:{port}", "--db", str(db)],
                           stderr=subprocess.DEVNULL)
    try:
        conf = tmp_path / "m.conf"
        conf.write_text(f"[meter]\nprovision_all = yes\n[export]\ncollector = 127.0.0.1\nport = {port}\n"
                        "transport = tcp\nreport_interval_ms = 0\n")
        d = link.attach("--config", str(conf))
        e2e.wait_session(d)
        link.send_pcap(RPING)
        live.wait_for(lambda: "export" in (link.status().get("daemon") or {}), "the stats file")
        st = link.status()
        assert "records_sent" in st["daemon"]["export"]
        assert_documented("status", [st])
        assert d.stop() == 0
        live.wait_for(lambda: subprocess.run([ROCEMETER, "report", "--db", str(db), "--json"], capture_output=True,
                                             text=True).stdout.strip(), "the stored epoch")
    finally:
        col.terminate()
        col.wait(timeout=30)
    p = subprocess.run([ROCEMETER, "report", "--db", str(db), "--json"], capture_output=True, text=True, check=True)
    epochs = [json.loads(line) for line in p.stdout.splitlines()]
    assert_documented("report", epochs)
    rows = list(csv.DictReader(io.StringIO(subprocess.run(
        [ROCEMETER, "report", "--db", str(db), "--format", "csv"], capture_output=True, text=True,
        check=True).stdout)))
    assert len(rows) == len(epochs)
    assert set(rows[0]) - schema.documented()["report"] == set()
    assert rows[0]["rdmaSequenceEpochId"] == str(epochs[0]["rdmaSequenceEpochId"])
    p = subprocess.run([ROCEMETER, "report", "--db", str(db), "--limits", "--json"], capture_output=True,
                       text=True, check=True)
    assert_documented("report limits", [json.loads(p.stdout)])
    p = subprocess.run([ROCEMETER, "report", "--db", str(db), "--summary", "--json"], capture_output=True,
                       text=True, check=True)
    summary = [json.loads(line) for line in p.stdout.splitlines()]
    assert_documented("report summary", summary)
    assert sum(s["epochs"] for s in summary) == len(epochs)
    rows = list(csv.DictReader(io.StringIO(subprocess.run(
        [ROCEMETER, "report", "--db", str(db), "--summary", "--format", "csv"], capture_output=True, text=True,
        check=True).stdout)))
    assert len(rows) == len(summary) and set(rows[0]) - schema.documented()["report summary"] == set()


def test_connections_keys(link):
    """connections --json over a capture; status --connections --json with and without a census."""
    p = subprocess.run([ROCEMETER, "connections", "--json", RPING], capture_output=True, text=True, check=True)
    doc = json.loads(p.stdout)
    assert doc["connections"] and doc["provision"]
    assert_documented("connections", [doc])
    p = subprocess.run([ROCEMETER, "status", link.iface, "--connections", "--json"], capture_output=True, text=True)
    assert p.returncode == 3, p  # no census: not attached
    st = json.loads(p.stdout)
    assert st == [{"interface": link.iface, "census_attached": False}]
    d = link.attach("--provision-all", "--census")
    link.send_pcap(RPING)
    link.wait_frames(65)
    live.wait_for(lambda: json.loads(subprocess.run(
        [ROCEMETER, "status", link.iface, "--connections", "--json"], capture_output=True, text=True,
        check=True).stdout)[0].get("bth_frames") == 65, "the census to count the capture")
    st = json.loads(subprocess.run([ROCEMETER, "status", link.iface, "--connections", "--json"], capture_output=True,
                                   text=True, check=True).stdout)
    assert st[0]["census_attached"] is True and st[0]["connections"]
    assert_documented("connections", st)
    assert d.stop() == 0


def test_status_reads_a_stats_map_of_another_build(tmp_path):
    """A stats map pinned by another build (more statistics: a larger value)
    is read by its own size: status shows the statistics it knows instead
    of overflowing its buffer (it aborted before). The pins are keyed by
    namespace and ifindex: a veth interface (nothing attached) gives them a key."""
    base = "/sys/fs/bpf/rmtest-%d" % os.getpid()
    subprocess.run(["ip", "link", "del", "rmfake0"], capture_output=True)
    subprocess.run(["ip", "link", "add", "rmfake0", "type", "veth", "peer", "name", "rmfake1"], check=True)
    pin_dir = rt.pin_dir("rmfake0", bpffs=base)
    os.makedirs(pin_dir)
    try:
        n_known = len(schema.re.findall(r'X\(\w+, "(\w+)",', schema.macro(schema.read("include", "rocemeter",
                                                                                    "meter.h"), "RM_STATS")))
        value = (n_known + 40) * 8
        subprocess.run(["bpftool", "map", "create", os.path.join(pin_dir, "stats"), "type", "percpu_array", "key",
                        "4", "value", str(value), "entries", "1", "name", "stats"], check=True, capture_output=True)
        # every CPU: statistic i = i + 1, the unknown ones too
        data = b"".join((i + 1).to_bytes(8, "little") for i in range(n_known + 40))
        subprocess.run(["bpftool", "map", "update", "pinned", os.path.join(pin_dir, "stats"), "key", "0", "0", "0",
                        "0", "value", *["0x%02x" % b for b in data]], check=True, capture_output=True)
        env = dict(os.environ, ROCEMETER_BPFFS=base, ROCEMETER_RUNDIR=str(tmp_path))
        p = subprocess.run([ROCEMETER, "status", "rmfake0", "--json"], capture_output=True, text=True, env=env)
        assert p.returncode == 5, p.stderr  # stale: no program uses the pins made here
        meter = json.loads(p.stdout)[0]["meter"]
        ncpu = len(json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "pinned", os.path.join(pin_dir, "stats")],
                                             capture_output=True, text=True, check=True).stdout)[0]["values"])
        assert list(meter.values()) == [(i + 1) * ncpu for i in range(n_known)]
    finally:
        subprocess.run(["rm", "-rf", base])
        subprocess.run(["ip", "link", "del", "rmfake0"], capture_output=True)
