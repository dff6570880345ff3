"""End to end: what the meter reports is what independent decoders and the
collector see.

1. replay --ipfix-out decoded by libfixbuf's ipfixDump equals replay --json,
   field by field (times included).
2. A live attach on a veth pair exports over TLS 1.3 to a socat
   OPENSSL-LISTEN peer (TLS 1.3 only, client certificate required); the
   received stream, decoded by ipfixDump, carries the same records as
   replay --json of the same capture (all fields but the times, which are
   arrival times on the wire here).
3. The same live export into `rocemeter collect` gives one complete epoch per
   connection whose counters equal the replay JSON.
"""
import ipaddress
import json
import os
import signal
import socket
import subprocess
import time

import pytest

import test_ipfix_decoders as dec
import test_live_meter as live

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROCEMETER = os.path.join(ROOT, "build", "rocemeter")
CAPTURE = os.path.join(ROOT, "data", "pcaps", "linlinw5_nccl_nccl_node0.pcap")
ADDR_KEYS = ("sourceIPv4Address", "destinationIPv4Address", "sourceIPv6Address", "destinationIPv6Address")
TIME_KEYS = ("flowStartMilliseconds", "flowEndMilliseconds")
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (BPF: replay and XDP on a veth)")


def replay_json(*args):
    p = subprocess.run([ROCEMETER, "replay", "--provision-all", "--json", *args, CAPTURE],
                       capture_output=True, text=True, check=True)
    return [json.loads(line) for line in p.stdout.splitlines()]


def decoded_records(path):
    """ipfixDump's Data Records of the profile's Templates, values as in replay's JSON."""
    out, _ = dec.run_ipfixdump(path)
    _, _, records = dec.parse_ipfixdump(out)
    got = []
    for tid, fields in records:
        if "rdmaSequenceEpochId" not in fields:
            continue  # the Flow Keys options records
        got.append({k: dec.dump_value(k, v) for k, v in fields.items()})
    return got


def normal(r, times=True):
    return {k: (str(ipaddress.ip_address(v)) if k in ADDR_KEYS else v)
            for k, v in r.items() if (times or k not in TIME_KEYS) and k != "flag_names"}


def test_replay_ipfix_file_equals_json(tmp_path):
    want = replay_json()
    assert len(want) == 4 and all(r["requestPacketTotalCount"] > 0 for r in want)
    ipfix = tmp_path / "out.ipfix"
    subprocess.run([ROCEMETER, "replay", "--provision-all", "--ipfix-out", str(ipfix), CAPTURE],
                   capture_output=True, check=True)
    got = decoded_records(ipfix)
    assert [normal(r) for r in got] == [normal(r) for r in want]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def pki(tmp_path):
    d = tmp_path / "pki"
    subprocess.run([os.path.join(ROOT, "scripts", "gen-certs"), str(d)], check=True, capture_output=True)
    return d


def export_config(tmp_path, pki, port):
    conf = tmp_path / "meter.conf"
    conf.write_text(f"""[meter]
provision_all = yes
idle_timeout_ms = 0
observation_point_id = 7

[export]
collector = 127.0.0.1
port = {port}
ca = {pki}/ca.pem
cert = {pki}/exporter.pem
key = {pki}/exporter.key
peer_name = collector.rocemeter.test
report_interval_ms = 0
""")
    return str(conf)


def wait_session(daemon):
    live.wait_for(lambda: "Transport Session 1 established" in daemon.stderr(), "the export session")


link = live.link  # the live tests' fixture: a veth pair, metered end in the root namespace


def test_live_export_to_openssl_peer(tmp_path, pki, link):
    port = free_port()
    conf = export_config(tmp_path, pki, port)
    want = replay_json("--config", conf)
    assert all(r["observationPointId"] == 7 for r in want)
    stream = tmp_path / "stream.ipfix"
    peer = subprocess.Popen(
        ["socat", "-u",
         f"OPENSSL-LISTEN:{port},bind=127.0.0.1,reuseaddr,cert={pki}/collector.pem,key={pki}/collector.key,"
         f"cafile={pki}/ca.pem,verify=1,openssl-min-proto-version=TLS1.3",
         f"CREATE:{stream}"], stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        d = link.attach("--config", conf)
        wait_session(d)
        link.send_pcap(CAPTURE)
        assert d.stop() == 0
        assert "0 queue full, 0 without session, 0 with a lost session" in d.stderr()
        peer.wait(timeout=30)
    finally:
        if peer.poll() is None:
            peer.kill()
    got = decoded_records(stream)
    # Finals only (report_interval_ms = 0), serialized in order of first arrival, as replay does.
    assert [normal(r, times=False) for r in got] == [normal(r, times=False) for r in want]
    for r in got:
        assert r["flowStartMilliseconds"] <= r["flowEndMilliseconds"]
        assert abs(r["flowStartMilliseconds"] / 1000 - time.time()) < 600  # UNIX time, not boot time


def test_live_export_to_collector(tmp_path, pki, link):
    want = replay_json()
    port = free_port()
    db = tmp_path / "collector.db"
    col = subprocess.Popen(
        [ROCEMETER, "collect", "--listen", f"127.0.0.1:{port}", "--db", str(db), "--cert", f"{pki}/collector.pem",
         "--key", f"{pki}/collector.key", "--ca", f"{pki}/ca.pem", "--peer-name", "exporter.rocemeter.test"],
        stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        d = link.attach("--config", export_config(tmp_path, pki, port))
        wait_session(d)
        link.send_pcap(CAPTURE)
        assert d.stop() == 0
        time.sleep(0.5)
    finally:
        col.send_signal(signal.SIGTERM)
        col.wait(timeout=30)
    p = subprocess.run([ROCEMETER, "report", "--db", str(db), "--json"], capture_output=True, text=True, check=True)
    epochs = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(epochs) == len(want)
    by_id = {e["rdmaSequenceEpochId"]: e for e in epochs}
    for w in want:
        e = by_id[w["rdmaSequenceEpochId"]]
        assert e["outcome"] == "complete", e
        # One vocabulary (docs/json.md): the stored epoch carries the report's IE names.
        for k in ("sourceIPv4Address", "destinationIPv4Address", "rdmaDestinationQP", "rdmaPartitionKey"):
            assert e["key"][k] == w[k], k
        for k in ("requestPacketTotalCount", "skippedPsnTotalCount", "filledPsnTotalCount", "expiredPsnTotalCount",
                  "abandonedPsnTotalCount", "pendingPsnCount", "repeatedPsnTotalCount",
                  "unclassifiedLatePacketTotalCount", "rdmaSequenceWindow"):
            assert e["observed"][k] == w[k], k
        assert e["observed"]["flowStartMilliseconds"] <= e["observed"]["flowEndMilliseconds"]  # live arrival times
        assert e["qualifications"]["rdmaSequenceFlags"] == w["rdmaSequenceFlags"]
        assert e["qualifications"]["flag_names"] == w["flag_names"]
        assert e["coverage"]["first_report_id"] == 1 and e["coverage"]["gaps"] == 0


def test_live_collector_killed_summary(tmp_path, pki, link):
    """The collector is killed with -9 while epochs are open: the session is lost, every
    open epoch closes because the Transport Session ended (its reports belong to no session
    any more), and the daemon says so in `status` (the stats file) and in its exit summary,
    next to the records lost in flight (sent, never acknowledged by the collector)."""
    port = free_port()
    col = subprocess.Popen(
        [ROCEMETER, "collect", "--listen", f"127.0.0.1:{port}", "--db", str(tmp_path / "c.db"),
         "--cert", f"{pki}/collector.pem", "--key", f"{pki}/collector.key", "--ca", f"{pki}/ca.pem",
         "--peer-name", "exporter.rocemeter.test"], stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        d = link.attach("--config", export_config(tmp_path, pki, port))
        wait_session(d)
        link.send_pcap(CAPTURE)
        live.wait_for(lambda: len(link.status()["contexts"]) > 0, "open epochs")
        n_open = len(link.status()["contexts"])
        col.send_signal(signal.SIGKILL)
        col.wait(timeout=30)
        live.wait_for(lambda: link.status()["daemon"]["closed_for_new_session"] == n_open,
                      "the epochs closed for the lost session in status")
        daemon = link.status()["daemon"]
        assert daemon["export"]["records_sent"] == 0  # report_interval_ms = 0: finals only, none made yet
        assert daemon["export"]["lost_in_flight"] == 0
        assert daemon["export"]["session"] == 0
        assert d.stop() == 0
    finally:
        if col.poll() is None:
            col.kill()
    err = d.stderr()
    assert "Transport Session 1 lost" in err
    assert "0 lost in flight" in err
    assert f"{n_open} epochs closed because a new Transport Session began" in err
