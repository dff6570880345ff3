# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Export transport end to end (user/export/export.c, user/common/tls.c): IPFIX over
mutually authenticated TLS 1.3 ([SEQOBS] "Export Profile and Template",
"Security Considerations").

The peers are independent TLS implementations' command line tools (openssl
s_server / s_client, socat) or Python's ssl module; the received stream is
decoded by libfixbuf's ipfixDump with docs/rocemeter-ie.xml and by a small
decoder below written from RFC 7011, and compared with the synthetic
reports restated here from selftests/system/test_export.c (report_fill).

The exporter runs in build/selftests/system/test_export --drive, controlled through
stdin (see selftests/system/test_export.c). Everything listens on loopback only.
"""
import ipaddress
import os
import re
import select
import signal
import socket
import sqlite3
import ssl
import struct
import subprocess
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "build", "selftests", "system", "test_export")
GEN_CERTS = os.path.join(ROOT, "scripts", "gen-certs")
IE_FILE = os.path.join(ROOT, "docs", "rocemeter-ie.xml")
PEN = 32473
COLLECTOR_NAME = "collector.rocemeter.test"
EXPORTER_NAME = "exporter.rocemeter.test"
WAIT = 20.0  # seconds: generous bound for any single step, never asserted

pytestmark = pytest.mark.skipif(not os.path.exists(DRIVER), reason="build/selftests/system/test_export not built (make)")


# ---------------------------------------------------------------- helpers

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run([GEN_CERTS, str(d)], check=True, capture_output=True)
    return str(d)


def free_port(family=socket.AF_INET):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, host="127.0.0.1"):
    end = time.monotonic() + WAIT
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    while time.monotonic() < end:
        # /proc/net/tcp{,6}: a socket in state 0A (LISTEN) on the port; no probe connection.
        for f in ("/proc/net/tcp", "/proc/net/tcp6") if fam == socket.AF_INET6 else ("/proc/net/tcp",):
            with open(f) as fh:
                for line in fh.readlines()[1:]:
                    cols = line.split()
                    if cols[3] == "0A" and int(cols[1].split(":")[1], 16) == port:
                        return
        time.sleep(0.02)
    raise AssertionError(f"nothing listens on port {port}")


def export_config(path, pki, port, collector="127.0.0.1", cert="exporter", peer=COLLECTOR_NAME,
                  transport=None, queue=1000, domain=7, omit=()):
    lines = ["[export]", f"collector = {collector}", f"port = {port}",
             f"observation_domain = {domain}", f"queue_records = {queue}"]
    if transport:
        lines.append(f"transport = {transport}")
    if "ca" not in omit:
        lines.append(f"ca = {pki}/ca.pem")
    if "cert" not in omit:
        lines.append(f"cert = {pki}/{cert}.pem")
    if "key" not in omit:
        lines.append(f"key = {pki}/{cert}.key")
    if peer and "peer_name" not in omit:
        lines.append(f"peer_name = {peer}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return str(path)


class Driver:
    """build/selftests/system/test_export --drive CONFIG, one command per line."""

    def __init__(self, config, errpath):
        self.err = open(errpath, "w+")
        self.errpath = errpath
        self.p = subprocess.Popen([DRIVER, "--drive", config], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, text=True, bufsize=1)
        self.first = self.readline()

    def readline(self, timeout=WAIT):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            raise AssertionError("driver did not answer; stderr:\n" + self.stderr())
        return self.p.stdout.readline().strip()

    def cmd(self, line, timeout=WAIT):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.readline(timeout)

    def stats(self, line="stats"):
        ans = self.cmd(line)
        tag, _, rest = ans.partition(" ")
        assert tag in ("stats", "final"), ans
        return {k: int(v) for k, v in (kv.split("=") for kv in rest.split())}

    def session(self, timeout_ms=10000):
        ans = self.cmd(f"wait-session {timeout_ms}", timeout=timeout_ms / 1000 + WAIT)
        return int(ans.split()[1])

    def submit(self, n, session=None):
        ans = self.cmd(f"submit {n}" if session is None else f"submit-session {session} {n}")
        _, ok, failed = ans.split()
        return int(ok), int(failed)

    def stop(self, flush_ms=2000):
        st = self.stats(f"stop {flush_ms}")
        self.p.wait(timeout=WAIT)
        return st

    def stderr(self):
        self.err.flush()
        with open(self.errpath) as f:
            return f.read()

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.err.close()


@pytest.fixture
def procs():
    """Processes to kill at the end of a test, also on failure."""
    lst = []
    yield lst
    for p in lst:
        if isinstance(p, Driver):
            p.close()
        elif p.poll() is None:
            p.kill()
            p.wait()


def s_server(port, out, pki, cert="collector", extra=(), host="127.0.0.1"):
    """openssl s_server requiring and verifying a client certificate; received bytes -> out."""
    args = ["openssl", "s_server", "-accept", f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
            "-Verify", "1", "-verify_return_error", "-CAfile", f"{pki}/ca.pem",
            "-cert", f"{pki}/{cert}.pem", "-key", f"{pki}/{cert}.key", "-quiet", "-naccept", "1"]
    args += list(extra) or ["-tls1_3"]
    f = open(out, "wb")
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=f, stderr=subprocess.PIPE)
    f.close()
    wait_listening(port, host)
    return p


def socat_sink(port, out, pki, cert="collector"):
    args = ["socat", "-u",
            f"OPENSSL-LISTEN:{port},bind=127.0.0.1,reuseaddr,cert={pki}/{cert}.pem,key={pki}/{cert}.key,"
            f"cafile={pki}/ca.pem,verify=1,openssl-min-proto-version=TLS1.3",
            f"OPEN:{out},creat,trunc"]
    p = subprocess.Popen(args, stderr=subprocess.PIPE)
    wait_listening(port)
    return p


# ------------------------------------------------ expected reports (report_fill)

def expected_report(k):
    fam = 6 if k % 3 == 2 else 4
    if fam == 4:
        src = ipaddress.IPv4Address(bytes([10, 0, (k >> 8) & 255, k & 255]))
        dst = ipaddress.IPv4Address(bytes([192, 0, 2, k % 250 + 1]))
    else:
        src = ipaddress.IPv6Address(bytes([0x20, 0x01, 0x0d, 0xb8] + [0] * 8) + (k & 0xffffffff).to_bytes(4, "big"))
        dst = ipaddress.IPv6Address("2001:db8:1::1")
    final = k % 4 == 0
    skipped, filled, expired = 10 + k % 10, k % 3, k % 2
    open_ = skipped - filled - expired
    start = 1700000000000 + k * 10
    return {
        "family": fam,
        "observationPointId": 1000 + k % 5,
        "src": str(src), "dst": str(dst),
        "rdmaDestinationQP": (k * 7919) & 0xffffff,
        "rdmaPartitionKey": 0x8000 | (k & 0x7fff),
        "flowStartMilliseconds": start, "flowEndMilliseconds": start + 5000,
        "rdmaSequenceEpochId": k + 1, "rdmaSequenceReportId": 1 + k % 3,
        "rdmaSequenceWindow": 1024, "rdmaSequenceFlags": 0x20 | (1 if final else 0),
        "skippedPsnTotalCount": skipped, "filledPsnTotalCount": filled, "expiredPsnTotalCount": expired,
        "abandonedPsnTotalCount": open_ if final else 0, "pendingPsnCount": 0 if final else open_,
        "repeatedPsnTotalCount": k % 4, "requestPacketTotalCount": 100 + k,
        "unclassifiedLatePacketTotalCount": k % 5,
    }


# --------------------------------------- an IPFIX stream decoder from RFC 7011

IANA = {138: "observationPointId", 8: "src", 12: "dst", 27: "src", 28: "dst",
        152: "flowStartMilliseconds", 153: "flowEndMilliseconds", 145: "templateId", 173: "flowKeyIndicator",
        40: "exportedOctetTotalCount", 41: "exportedMessageTotalCount", 42: "exportedFlowRecordTotalCount",
        131: "exporterIPv6Address", 217: "exporterTransportPort"}
ENTERPRISE = {1: "rdmaDestinationQP", 2: "rdmaPartitionKey", 3: "rdmaSequenceEpochId", 4: "rdmaSequenceReportId",
              5: "rdmaSequenceWindow", 6: "rdmaSequenceFlags", 7: "skippedPsnTotalCount", 8: "filledPsnTotalCount",
              9: "expiredPsnTotalCount", 10: "abandonedPsnTotalCount", 11: "pendingPsnCount",
              12: "repeatedPsnTotalCount", 13: "requestPacketTotalCount", 14: "unclassifiedLatePacketTotalCount"}


def decode_stream(data):
    """Messages: dicts with header fields, 'sets' (set IDs in order) and 'records' (dicts)."""
    msgs, templates, off = [], {}, 0
    while off < len(data):
        assert len(data) - off >= 16, f"truncated message header at {off}"
        ver, length, etime, seq, dom = struct.unpack_from("!HHIII", data, off)
        assert ver == 10, f"version {ver} at offset {off}"
        assert 16 <= length <= 65535 and off + length <= len(data), f"bad length {length} at {off}"
        msg = {"length": length, "export_time": etime, "sequence": seq, "domain": dom, "sets": [], "records": []}
        p, end = off + 16, off + length
        while p < end:
            sid, slen = struct.unpack_from("!HH", data, p)
            assert slen >= 4 and p + slen <= end, f"bad set length {slen}"
            msg["sets"].append(sid)
            q, send = p + 4, p + slen
            if sid in (2, 3):
                while send - q >= 4:
                    tid, count = struct.unpack_from("!HH", data, q)
                    q += 4
                    scope = 0
                    if sid == 3:
                        scope = struct.unpack_from("!H", data, q)[0]
                        q += 2
                    fields = []
                    for _ in range(count):
                        ie, flen = struct.unpack_from("!HH", data, q)
                        q += 4
                        pen = 0
                        if ie & 0x8000:
                            pen = struct.unpack_from("!I", data, q)[0]
                            q += 4
                        fields.append((pen, ie & 0x7fff, flen))
                    templates[tid] = fields
            else:
                fields = templates[sid]
                rlen = sum(f[2] for f in fields)
                while send - q >= rlen:
                    rec = {"tid": sid}
                    for pen, ie, flen in fields:
                        raw = data[q:q + flen]
                        q += flen
                        name = ENTERPRISE[ie] if pen else IANA[ie]
                        if pen:
                            assert pen == PEN, f"PEN {pen}"
                        if name in ("src", "dst", "exporterIPv6Address"):
                            rec[name] = str(ipaddress.ip_address(raw))
                        else:
                            rec[name] = int.from_bytes(raw, "big")
                    msg["records"].append(rec)
            p = send
        msgs.append(msg)
        off = end
    return msgs, templates


def check_session_stream(data, ks, domain=7, reliability=None):
    """A whole Transport Session: Templates first, then exactly reports ks in order, sequence numbers right.
    reliability: the number of Reliability records (rocemeter's extension, Options Template 261) the
    Message after the Templates carries, reporting earlier sessions that died (None: no such Message)."""
    msgs, templates = decode_stream(data)
    if reliability is not None:
        rel = msgs.pop(1)
        assert rel["sets"] == [3, 261] and rel["sequence"] == len(msgs[0]["records"]), rel
        assert [r["tid"] for r in rel["records"]] == [261] * reliability
        seq0 = len(msgs[0]["records"]) + reliability
        assert msgs[1]["sequence"] == seq0, "the Reliability records count in the Sequence Number"
        msgs[1]["sequence"] -= reliability
        for m in msgs[2:]:
            m["sequence"] -= reliability
    assert msgs, "no IPFIX message received"
    first = msgs[0]
    # Templates message first: Template Set, Options Template Set, the Flow Keys Options Data.
    assert first["sets"][:2] == [2, 3], first["sets"]
    assert all(r["tid"] not in (256, 257) for r in first["records"])
    assert first["sequence"] == 0
    assert {256, 257} <= set(templates)
    seq = len(first["records"])  # Options Data Records count as Data Records (RFC 7011, 3.1)
    got = []
    for m in msgs:
        assert m["domain"] == domain
        assert m["length"] <= 65535
        if m is not first:
            assert 2 not in m["sets"] and 3 not in m["sets"], "templates are sent once, at session start"
            assert m["sequence"] == seq, (m["sequence"], seq)
            seq += len(m["records"])
        now = time.time()
        assert now - 3600 < m["export_time"] <= now + 5, "Export Time is current UNIX seconds"
    for m in msgs[1:]:
        for r in m["records"]:
            fam = 4 if r["tid"] == 256 else 6
            got.append(dict(r, family=fam))
    exp = [expected_report(k) for k in ks]
    assert len(got) == len(exp), (len(got), len(exp))
    for g, e in zip(got, exp):
        g = {k: v for k, v in g.items() if k != "tid"}
        assert g == e
    return msgs


def ipfixdump_records(path):
    """(data record template IDs, epoch IDs, stderr) as ipfixDump decodes them."""
    r = subprocess.run(["ipfixDump", "--in", path, "--element-file", IE_FILE], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    tids = [int(t) for t in re.findall(r"--- data record \d+ ---\nheader:\n\s+count: \d+\s+tid:\s+(\d+)", r.stdout)]
    epochs = [int(e) for e in re.findall(r"rdmaSequenceEpochId : (\d+)", r.stdout)]
    qps = [int(e) for e in re.findall(r"rdmaDestinationQP : (\d+)", r.stdout)]
    return tids, epochs, qps, r.stderr


def check_with_ipfixdump(path, ks):
    tids, epochs, qps, err = ipfixdump_records(path)
    assert "out of sequence" not in err, err
    data_tids = [t for t in tids if t in (256, 257)]
    assert data_tids == [256 if expected_report(k)["family"] == 4 else 257 for k in ks]
    assert epochs == [k + 1 for k in ks]
    assert qps == [(k * 7919) & 0xffffff for k in ks]
    assert tids[:2] == [260, 260], "the Flow Keys Options Data Records come first"


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_export_to_s_server(tmp_path, pki, procs, host):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    port = free_port(fam)
    out = str(tmp_path / "stream.ipfix")
    srv = s_server(port, out, pki, host=host)
    procs.append(srv)
    d = Driver(export_config(tmp_path / "e.ini", pki, port, collector=host, queue=4096), str(tmp_path / "err"))
    procs.append(d)
    assert d.first == "started"
    assert d.session() == 1
    n = 1500
    assert d.submit(n) == (n, 0)
    assert d.cmd("flush 10000") == "flush 0"
    st = d.stop()
    assert st["sessions"] == 1 and st["records_sent"] == n
    assert st["dropped_queue_full"] + st["dropped_no_session"] + st["dropped_session_lost"] == 0
    srv.wait(timeout=WAIT)  # -naccept 1: ends when the exporter closed (close_notify)
    err = srv.stderr.read().decode()
    assert "depth=0 O = rocemeter test, CN = exporter.rocemeter.test" in err  # it verified our certificate
    data = open(out, "rb").read()
    assert len(data) == st["bytes_sent"]
    msgs = check_session_stream(data, range(n))
    assert st["messages_sent"] == len(msgs)
    check_with_ipfixdump(out, range(n))
    assert "TLSv1.3, mutually authenticated" in d.stderr()


def test_refused_collectors(tmp_path, pki, procs):
    """Wrong name, untrusted CA, TLS 1.2 only: no session, nothing sent, the reason logged."""
    cases = [
        ("wrongname", ["-tls1_3"], "hostname mismatch"),
        ("untrusted", ["-tls1_3"], "unable to get local issuer certificate"),
        ("collector", ["-tls1_2"], "protocol version"),
        # The collector does not trust the exporter's CA: refused after our side finished (TLS 1.3).
        ("collector", ["-tls1_3", "-CAfile", f"{pki}/untrusted-ca.pem"], "alert unknown ca"),
    ]
    for cert, extra, why in cases:
        port = free_port()
        out = str(tmp_path / f"{cert}{len(extra)}{extra[0]}.bin")
        srv = s_server(port, out, pki, cert=cert, extra=extra)
        procs.append(srv)
        d = Driver(export_config(tmp_path / "e.ini", pki, port), str(tmp_path / f"err-{cert}{len(extra)}{extra[0]}"))
        procs.append(d)
        assert d.first == "started"
        assert d.session(timeout_ms=1500) == 0
        assert d.submit(3) == (0, 3)
        st = d.stop()
        assert st["sessions"] == 0 and st["records_sent"] == 0 and st["connect_failures"] >= 1
        assert st["dropped_no_session"] == 3
        log = d.stderr()
        assert why in log, log
        assert "established" not in log
        srv.kill()
        srv.wait()
        assert os.path.getsize(out) == 0, "the refused collector received data"


def test_refuse_to_start_without_client_credentials(tmp_path, pki):
    for omit, needle in ((("cert",), "cert"), (("key",), "key"), (("ca",), "ca"), (("peer_name",), "peer_name")):
        cfg = export_config(tmp_path / "e.ini", pki, 4740, omit=omit)
        r = subprocess.run([DRIVER, "--drive", cfg], input="", capture_output=True, text=True, timeout=WAIT)
        assert r.returncode == 1 and r.stdout.strip() == "refused", (omit, r.stdout, r.stderr)
        assert needle in r.stderr and "TLS is on" in r.stderr, r.stderr
    cfg = export_config(tmp_path / "e.ini", pki, 4740, cert="missing")
    r = subprocess.run([DRIVER, "--drive", cfg], input="", capture_output=True, text=True, timeout=WAIT)
    assert r.returncode == 1 and f"{pki}/missing.pem" in r.stderr, r.stderr


def test_plain_tcp_only_when_explicit(tmp_path, pki, procs):
    port = free_port()
    out = str(tmp_path / "tcp.bin")
    sink = subprocess.Popen(["socat", "-u", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr", f"OPEN:{out},creat,trunc"])
    procs.append(sink)
    wait_listening(port)
    d = Driver(export_config(tmp_path / "e.ini", pki, port, transport="tcp", omit=("ca", "cert", "key", "peer_name")),
               str(tmp_path / "err"))
    procs.append(d)
    assert d.first == "started"
    assert "WARNING: transport = tcp" in d.stderr()
    assert d.session() == 1
    assert d.submit(20) == (20, 0)
    assert d.cmd("flush 10000") == "flush 0"
    d.stop()
    sink.wait(timeout=WAIT)
    check_session_stream(open(out, "rb").read(), range(20))


def readline(f, timeout=WAIT):
    r, _, _ = select.select([f], [], [], timeout)
    assert r, "no answer"
    return f.readline().strip()


def serve_helper(tmp_path, pki, peer=EXPORTER_NAME):
    port = free_port()
    cfg = tmp_path / "c.ini"
    cfg.write_text(f"[collect]\nca = {pki}/ca.pem\ncert = {pki}/collector.pem\nkey = {pki}/collector.key\n"
                   f"peer_name = {peer}\n")
    out = str(tmp_path / "served.bin")
    p = subprocess.Popen([DRIVER, "--serve", str(cfg), str(port), out], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert readline(p.stdout) == "listening"
    return p, port, out


@pytest.mark.parametrize("cert,extra,expect", [
    ("exporter", ["-tls1_3"], "authorised"),
    ("wrongname", ["-tls1_3"], "hostname mismatch"),
    ("untrusted", ["-tls1_3"], "refused"),
    (None, ["-tls1_3"], "refused"),
    ("exporter", ["-tls1_2"], "refused"),
    ("collector", ["-tls1_3"], "refused"),  # EKU serverAuth only: not a client certificate
])
def test_server_ctx_against_s_client(tmp_path, pki, procs, cert, extra, expect):
    srv, port, out = serve_helper(tmp_path, pki)
    procs.append(srv)
    args = ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile", f"{pki}/ca.pem",
            "-verify_return_error", "-verify_hostname", COLLECTOR_NAME, "-servername", COLLECTOR_NAME, "-quiet",
            "-no_ign_eof"]
    if cert:
        args += ["-cert", f"{pki}/{cert}.pem", "-key", f"{pki}/{cert}.key"]
    cli = subprocess.Popen(args + extra, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    procs.append(cli)
    try:
        cli.stdin.write(b"hello collector\n")
        cli.stdin.flush()
        cli.stdin.close()
    except BrokenPipeError:
        pass
    line = readline(srv.stdout)
    if expect == "authorised":
        assert line.startswith("authorised TLSv1.3") and "CN=exporter.rocemeter.test" in line, line
        assert readline(srv.stdout).startswith("closed")
        srv.wait(timeout=WAIT)
        assert open(out, "rb").read() == b"hello collector\n"
    else:
        assert line.startswith("refused"), line
        assert expect in line, line
        srv.wait(timeout=WAIT)
        assert not os.path.exists(out) or os.path.getsize(out) == 0
    cli.wait(timeout=WAIT)


def wait_file_size(path, size):
    """Until the receiver wrote everything the exporter handed to TCP."""
    end = time.monotonic() + WAIT
    while (not os.path.exists(path) or os.path.getsize(path) < size) and time.monotonic() < end:
        time.sleep(0.02)
    assert os.path.getsize(path) == size


def test_reconnect_new_session(tmp_path, pki, procs):
    port = free_port()
    out1, out2 = str(tmp_path / "s1.bin"), str(tmp_path / "s2.bin")
    a = socat_sink(port, out1, pki)
    procs.append(a)
    d = Driver(export_config(tmp_path / "e.ini", pki, port), str(tmp_path / "err"))
    procs.append(d)
    assert d.session() == 1
    assert d.submit(100) == (100, 0)
    assert d.cmd("flush 10000") == "flush 0"
    wait_file_size(out1, d.stats()["bytes_sent"])
    # The collector goes away.
    a.send_signal(signal.SIGTERM)
    a.wait(timeout=WAIT)
    assert d.cmd("wait-no-session 10000") == "no-session"
    # Reports with IDs of the broken session are refused and counted, never sent later.
    assert d.submit(5, session=1) == (0, 5)
    b = socat_sink(port, out2, pki)
    procs.append(b)
    assert d.session(timeout_ms=60000) == 2
    assert d.submit(50) == (50, 0)
    assert d.cmd("flush 10000") == "flush 0"
    st = d.stop()
    b.wait(timeout=WAIT)
    assert st["sessions"] == 2 and st["reconnects"] == 1 and st["sessions_lost"] == 1
    assert st["dropped_no_session"] + st["dropped_session_lost"] == 5
    assert st["records_sent"] == 150
    s1 = open(out1, "rb").read()
    check_session_stream(s1, range(100))
    # The new session starts with Templates and Sequence Number 0, then the Reliability record of
    # session 1 (it died: everything it sent was acknowledged, read above); reports 105..154.
    s2 = open(out2, "rb").read()
    check_session_stream(s2, range(105, 155), reliability=1)
    (rel,) = decode_stream(s2)[0][1]["records"]
    assert ipaddress.ip_address(rel["exporterIPv6Address"]).ipv4_mapped == ipaddress.ip_address("127.0.0.1") and rel["exporterTransportPort"] > 0
    assert rel["exportedFlowRecordTotalCount"] == 100
    assert rel["exportedMessageTotalCount"] == len(decode_stream(s1)[0])
    assert rel["exportedOctetTotalCount"] == len(s1)
    now_ms = time.time() * 1000
    assert now_ms - 60000 < rel["flowStartMilliseconds"] <= rel["flowEndMilliseconds"] <= now_ms
    check_with_ipfixdump(out2, range(105, 155))
    # ipfixDump (libfixbuf, IANA's registry) decodes the Options record the same way.
    r = subprocess.run(["ipfixDump", "--in", out2, "--element-file", IE_FILE], capture_output=True, text=True,
                       timeout=60)
    assert re.search(r"exportedFlowRecordTotalCount\s*:\s*100\b", r.stdout), r.stdout
    assert re.search(r"exportedOctetTotalCount\s*:\s*%d\b" % len(s1), r.stdout), r.stdout
    assert re.search(r"exporterTransportPort\s*:\s*%d\b" % rel["exporterTransportPort"], r.stdout)
    assert "Transport Session 1 lost" in d.stderr() and "100 records in" in d.stderr()


class StalledCollector:
    """A TLS 1.3 server (Python ssl) that requires a client certificate, then never reads."""

    def __init__(self, pki):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        self.ctx.load_cert_chain(f"{pki}/collector.pem", f"{pki}/collector.key")
        self.ctx.load_verify_locations(f"{pki}/ca.pem")
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(1)
        self.port = self.ls.getsockname()[1]
        self.conn = None
        self.peer = None
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        raw, _ = self.ls.accept()
        self.conn = self.ctx.wrap_socket(raw, server_side=True)
        self.peer = self.conn.getpeercert()

    def reset(self):
        """Abort the connection (RST)."""
        self.t.join(WAIT)
        self.conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.conn.close()
        self.ls.close()


def fill_until_stalled(d):
    """Submit until the queue stops draining (the kernel's socket buffers are full)."""
    ok = failed = 0
    for _ in range(2000):
        o, f = d.submit(1000)
        ok, failed = ok + o, failed + f
        if d.cmd("flush 20") == "flush -1":
            return ok, failed
    raise AssertionError("the queue never stalled")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_backpressure_bounded(tmp_path, pki, procs):
    srv = StalledCollector(pki)
    queue = 200
    d = Driver(export_config(tmp_path / "e.ini", pki, srv.port, queue=queue), str(tmp_path / "err"))
    procs.append(d)
    assert d.session() == 1
    srv.t.join(WAIT)
    assert dict(x[0] for x in srv.peer["subject"])["commonName"] == EXPORTER_NAME
    # The collector reads nothing: the kernel's socket buffers fill, then the queue.
    ok, failed = fill_until_stalled(d)
    rss1 = rss_kib(d.p.pid)
    o, f = d.submit(200000)
    ok, failed = ok + o, failed + f
    rss2 = rss_kib(d.p.pid)
    st = d.stats()
    assert f > 0 and failed > 0 and st["dropped_queue_full"] == failed
    assert 0 < st["queued"] <= queue and st["queue_capacity"] == queue
    assert ok == st["records_sent"] + st["queued"]
    # Memory stays bounded: 200,000 more submissions add (almost) nothing.
    assert rss2 - rss1 < 2048, (rss1, rss2)
    # The collector aborts: what was queued for the session is lost and counted.
    srv.reset()
    assert d.cmd("wait-no-session 60000", timeout=90) == "no-session"
    st2 = d.stats()
    assert st2["sessions_lost"] == 1 and st2["queued"] == 0
    assert st2["dropped_session_lost"] >= 1
    assert ok == st2["records_sent"] + st2["dropped_session_lost"]
    assert "Transport Session 1 lost" in d.stderr()
    st3 = d.stop(flush_ms=500)
    assert st3["sessions"] == 1


def test_stop_while_stalled(tmp_path, pki, procs):
    """Stop with a collector that reads nothing: bounded wait, the rest counted as dropped_at_stop."""
    srv = StalledCollector(pki)
    d = Driver(export_config(tmp_path / "e.ini", pki, srv.port, queue=300), str(tmp_path / "err"))
    procs.append(d)
    assert d.session() == 1
    ok, _ = fill_until_stalled(d)
    queued = d.stats()["queued"]
    assert queued > 0
    st = d.stop(flush_ms=300)
    assert st["dropped_at_stop"] == queued and st["queued"] == 0
    assert ok == st["records_sent"] + st["dropped_at_stop"]
    srv.reset()


# ------------------------------------------------ records in flight when the collector dies

# A stand-in collector as its own process, so that it can be killed with -9: plain TCP,
# a small receive buffer, accepts one connection, reads its first 200,000 octets, then
# reads nothing more. On "peek" (stdin) it writes to OUT the octets it read followed by
# every octet its kernel holds, and therefore acknowledged, without consuming any
# (MSG_PEEK: the window stays closed), and answers with the count.
STALLED_SINK = r"""
import socket, sys, time
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
ls.bind(("127.0.0.1", 0))
ls.listen(1)
print(ls.getsockname()[1], flush=True)
conn, _ = ls.accept()
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
got = b""
while len(got) < 200000:
    got += conn.recv(200000 - len(got))
for line in sys.stdin:
    prev = -1
    while True:
        data = conn.recv(1 << 22, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        if len(data) == prev:
            break
        prev = len(data)
        time.sleep(0.3)
    open(sys.argv[1], "wb").write(got + data)
    print(len(got + data), flush=True)
"""


def whole_messages(data):
    """The prefix of an IPFIX stream made of complete Messages."""
    off = 0
    while len(data) - off >= 4:
        length = struct.unpack_from("!H", data, off + 2)[0]
        if off + length > len(data):
            break
        off += length
    return data[:off]


def test_collector_killed_records_in_flight(tmp_path, procs):
    """The collector stops reading, then is killed with -9 (its kernel sends a RST). Records
    whose Messages its kernel had not acknowledged were sent (handed to TCP) but never
    delivered: lost_in_flight counts them exactly. The delivered ones are those of the
    complete Messages among the octets the collector's kernel held (peeked, plain TCP so
    the octets are IPFIX), decoded here from RFC 7011."""
    out = tmp_path / "received.ipfix"
    sink = subprocess.Popen([sys.executable, "-c", STALLED_SINK, str(out)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, bufsize=1)
    procs.append(sink)
    port = int(sink.stdout.readline())
    d = Driver(export_config(tmp_path / "e.ini", None, port, transport="tcp", queue=300,
                             omit=("ca", "cert", "key", "peer_name")), str(tmp_path / "err"))
    procs.append(d)
    assert d.session() == 1
    ok, _ = fill_until_stalled(d)
    sink.stdin.write("peek\n")
    sink.stdin.flush()
    held = int(sink.stdout.readline())
    st = d.stats()
    assert held > 0 and st["records_sent"] > 0
    sink.send_signal(signal.SIGKILL)
    sink.wait(timeout=WAIT)
    assert d.cmd("wait-no-session 60000", timeout=90) == "no-session"
    st2 = d.stats()
    msgs, _ = decode_stream(whole_messages(out.read_bytes()))
    delivered = sum(len(m["records"]) for m in msgs[1:])  # the first Message: Templates and Flow Keys
    assert st2["records_sent"] == st["records_sent"] > delivered > 0
    assert st2["lost_in_flight"] == st2["records_sent"] - delivered
    assert ok == st2["records_sent"] + st2["dropped_session_lost"]
    assert "not acknowledged" in d.stderr()
    d.stop(flush_ms=200)


def test_collector_killed_while_streaming_tls(tmp_path, pki, procs):
    """`rocemeter collect` killed with -9 while the exporter streams over TLS 1.3: what the
    collector stored is at most what its kernel acknowledged (records_sent - lost_in_flight),
    and lost_in_flight never exceeds records_sent."""
    port = free_port()
    db = tmp_path / "c.db"
    col = subprocess.Popen([os.path.join(ROOT, "build", "rocemeter"), "collect", "--listen", f"127.0.0.1:{port}",
                            "--db", str(db), "--cert", f"{pki}/collector.pem", "--key", f"{pki}/collector.key",
                            "--ca", f"{pki}/ca.pem", "--peer-name", EXPORTER_NAME], stderr=subprocess.DEVNULL)
    procs.append(col)
    wait_listening(port)
    d = Driver(export_config(tmp_path / "e.ini", pki, port, queue=20000), str(tmp_path / "err"))
    procs.append(d)
    assert d.session() == 1
    for _ in range(20):
        d.submit(5000)
    col.send_signal(signal.SIGKILL)
    col.wait(timeout=WAIT)
    assert d.cmd("wait-no-session 60000", timeout=90) == "no-session"
    st = d.stats()
    assert 0 <= st["lost_in_flight"] <= st["records_sent"]
    con = sqlite3.connect(str(db))
    try:
        stored = con.execute("SELECT coalesce(sum(reports_accepted), 0) FROM epochs").fetchone()[0]
    except sqlite3.OperationalError:
        stored = 0
    con.close()
    assert stored <= st["records_sent"] - st["lost_in_flight"]
    d.stop(flush_ms=200)
