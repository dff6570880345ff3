# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter collect` and `rocemeter report` end to end ([SEQOBS],
"Collector Processing", "Export Profile and Template", "Security
Considerations").

IPFIX Messages are hand-written here with struct.pack from RFC 7011 and the
profile table of [SEQOBS] (never with rocemeter's encoder); libfixbuf's
ipfixDump checks that these vectors are well-formed IPFIX. They are sent
over real TLS 1.3 sessions (Python's ssl module, certificates from
scripts/gen-certs) to the collector on loopback, and what it stored is read
back with the sqlite3 module. Expected values come from [SEQOBS]'s rules and
its verification examples.
"""
import csv
import functools
import io
import ipaddress
import json
import os
import random
import re
import signal
import socket
import sqlite3
import ssl
import struct
import subprocess
import time

import pytest

from procs import rocemeter_report  # tests/lib
import seqobs_examples  # tests/lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("ROCEMETER_BIN", os.path.join(ROOT, "build", "rocemeter"))
GEN_CERTS = os.path.join(ROOT, "scripts", "gen-certs")
IE_FILE = os.path.join(ROOT, "docs", "rocemeter-ie.xml")
PEN = 32473
EXPORTER = "exporter.rocemeter.test"
COLLECTOR = "collector.rocemeter.test"
WAIT = 20.0  # bound for one step to happen; never a timing assertion

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built")

# ------------------------------------------------------------ IPFIX by hand

# [SEQOBS] "Profile Fields in Example Order", IPv4: (name, enterprise, IE, octets).
# Standard IEs keep their IANA numbers; the others are enterprise-specific
# under the PEN with the numbers of docs/rocemeter-ie.xml.
V4 = [("obs", 0, 138, 8), ("src", 0, 8, 4), ("dst", 0, 12, 4), ("qp", 1, 1, 4), ("pkey", 1, 2, 2),
      ("start", 0, 152, 8), ("end", 0, 153, 8), ("epoch", 1, 3, 8), ("report", 1, 4, 8),
      ("window", 1, 5, 4), ("flags", 1, 6, 2), ("skipped", 1, 7, 8), ("filled", 1, 8, 8),
      ("expired", 1, 9, 8), ("abandoned", 1, 10, 8), ("pending", 1, 11, 4), ("repeated", 1, 12, 8),
      ("requests", 1, 13, 8), ("late", 1, 14, 8)]
V6 = [("obs", 0, 138, 8), ("src", 0, 27, 16), ("dst", 0, 28, 16)] + V4[3:]
KEYS = {"obs", "src", "dst", "qp", "pkey", "epoch"}
FINAL, GEN_UNVERIFIED, SERIAL = 0x0001, 0x0020, 0x0010


def spec(ent, ie, ln, pen=PEN):
    return struct.pack(">HHI", 0x8000 | ie, ln, pen) if ent else struct.pack(">HH", ie, ln)


def template_record(tid, fields, pen=PEN):
    return struct.pack(">HH", tid, len(fields)) + b"".join(spec(e, i, n, pen) for _, e, i, n in fields)


def ipfix_set(sid, body):
    return struct.pack(">HH", sid, 4 + len(body)) + body


def message(*sets, domain=0, seq=0, version=10):
    body = b"".join(sets)
    return struct.pack(">HHIII", version, 16 + len(body), 1700000000, seq, domain) + body


def flow_keys(tid, fields):
    bits = sum(1 << n for n, f in enumerate(fields) if f[0] in KEYS)
    otmpl = struct.pack(">HHH", 260, 2, 1) + spec(0, 145, 2) + spec(0, 173, 8)
    return ipfix_set(3, otmpl), ipfix_set(260, struct.pack(">HQ", tid, bits))


def templates_msg(fields=V4, tid=256, domain=0):
    oset, odata = flow_keys(tid, fields)
    return message(ipfix_set(2, template_record(tid, fields)), oset, odata, domain=domain)


# A report whose counters are [SEQOBS] "Verification Examples", example 1 (W=4, PSNs 100,102,101,103,102):
# requests=5, skipped=1, filled=1, repeated=1, the rest 0.
def report(epoch=1, rid=1, **kw):
    r = dict(obs=7, src=bytes([192, 0, 2, 1]), dst=bytes([192, 0, 2, 2]), qp=0x000123, pkey=0xFFFF,
             start=1700000000000, end=1700000000500, epoch=epoch, report=rid, window=seqobs_examples.WINDOW,
             flags=GEN_UNVERIFIED, **seqobs_examples.EXAMPLES[1][1])
    r.update(kw)
    return r


def later(r, rid, final=False):
    """The same epoch at report rid: two more requests, one more skipped-and-filled position."""
    n = rid - r["report"]
    r = dict(r, report=rid, requests=r["requests"] + 2 * n, skipped=r["skipped"] + n,
             filled=r["filled"] + n, end=r["end"] + 100 * n)
    if final:
        r.update(flags=r["flags"] | FINAL, abandoned=r["abandoned"] + r["pending"], pending=0)
    return r


def record(r, fields=V4):
    out = b""
    for name, _, _, ln in fields:
        v = r[name]
        out += v if isinstance(v, bytes) else v.to_bytes(ln, "big")
    return out


def data_msg(*reports, tid=256, fields=V4, domain=0, seq=1):
    return message(ipfix_set(tid, b"".join(record(r, fields) for r in reports)), domain=domain, seq=seq)


# ------------------------------------------------------------ harness

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run([GEN_CERTS, str(d)], check=True, capture_output=True)
    return str(d)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collector:
    def __init__(self, tmp, pki, *extra, plain=False, port=None):
        self.port = port or free_port()
        self.db = os.path.join(str(tmp), "c.db")
        self.errpath = os.path.join(str(tmp), "collector.log")
        self.pki = pki
        args = [BIN, "collect", "--listen", f"127.0.0.1:{self.port}", "--db", self.db]
        if plain:
            args.append("--plain-tcp")
        else:
            args += ["--cert", f"{pki}/collector.pem", "--key", f"{pki}/collector.key",
                     "--ca", f"{pki}/ca.pem", "--peer-name", EXPORTER]
        args += list(extra)
        self.err = open(self.errpath, "w")
        self.proc = subprocess.Popen(args, stderr=self.err)
        self.wait_for(lambda: "listening on" in self.log(), "collector start")

    def log(self):
        with open(self.errpath) as f:
            return f.read()

    def wait_for(self, cond, what):
        end = time.monotonic() + WAIT
        while time.monotonic() < end:
            if cond():
                return
            assert self.proc.poll() is None, f"collector exited ({self.proc.returncode}):\n{self.log()}"
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}\n{self.log()}")

    def query(self, sql, *args):
        con = sqlite3.connect(self.db)
        con.row_factory = sqlite3.Row
        try:
            return con.execute(sql, args).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            con.close()

    def wait_ended(self, n):
        self.wait_for(lambda: len(self.query("SELECT id FROM sessions WHERE ended_ms IS NOT NULL")) >= n,
                      f"{n} ended sessions")
        return self.query("SELECT * FROM sessions ORDER BY id")

    def connect(self, cert="exporter"):
        if cert is None or self.pki is None or cert == "plain":
            s = socket.create_connection(("127.0.0.1", self.port))
            if cert != "plain":
                return self.tls(s, None)
            return s
        return self.tls(socket.create_connection(("127.0.0.1", self.port)), cert)

    def tls(self, sock, cert):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.load_verify_locations(f"{self.pki}/ca.pem")
        if cert:
            ctx.load_cert_chain(f"{self.pki}/{cert}.pem", f"{self.pki}/{cert}.key")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return ctx.wrap_socket(sock, server_hostname=COLLECTOR)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=WAIT)
        self.err.close()
        return self.proc.returncode


@pytest.fixture
def collector(tmp_path, pki, request):
    extra = getattr(request, "param", ())
    c = Collector(tmp_path, pki, *extra)
    yield c
    c.stop()


def close_tls(s):
    try:
        s.unwrap()
    except (ssl.SSLError, OSError):
        pass
    s.close()


def send_session(c, *msgs, cert="exporter"):
    s = c.connect(cert)
    for m in msgs:
        s.sendall(m)
    close_tls(s)


def epochs(c, where="1", *args):
    return c.query(f"SELECT * FROM epochs WHERE {where} ORDER BY id", *args)


def raw(c):
    return c.query("SELECT * FROM raw_records ORDER BY id")


# ------------------------------------------------------------ the vectors themselves

def test_vectors_decode_with_ipfixdump(tmp_path):
    """The hand-written messages are valid IPFIX for an independent decoder (libfixbuf)."""
    r = report(epoch=5, rid=1)
    path = tmp_path / "v.ipfix"
    path.write_bytes(templates_msg() + data_msg(r))
    p = subprocess.run(["ipfixDump", "--in", str(path), "--element-file", IE_FILE],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "rdmaSequenceWindow" in out and "requestPacketTotalCount" in out
    # flow keys 0x9f (fields 1-5 and 8 of the Template, seed order)
    vals = {}
    for line in out.splitlines():
        if " : " in line:
            k, v = line.split(" : ", 1)
            vals[k.split()[-1].split(")")[-1]] = v.strip()
    assert vals["flowKeyIndicator"] == str(0x9F)  # fields 1-5 and 8 of the Template (seed order)
    assert "Data Records (length: 120)" in out   # [SEQOBS]: 120 octets per IPv4 Data Record
    for name, val in [("rdmaSequenceEpochId", 5), ("requestPacketTotalCount", 5), ("rdmaDestinationQP", 0x123),
                      ("repeatedPsnTotalCount", 1), ("rdmaSequenceWindow", 4), ("rdmaSequenceFlags", 0x20),
                      ("sourceIPv4Address", "192.0.2.1"), ("observationPointId", 7)]:
        assert vals[name] == str(val), name


# ------------------------------------------------------------ accepted epochs

def test_complete_epoch_stored(collector):
    r1 = report(epoch=3, rid=1)
    r2 = later(r1, 2)
    r3 = later(r1, 3, final=True)
    send_session(collector, templates_msg(), data_msg(r1, r2), data_msg(r3))
    sess = collector.wait_ended(1)
    assert sess[0]["end_reason"] == "peer closed the session"
    assert sess[0]["accepted"] == 3 and sess[0]["records"] == 3
    assert sess[0]["peer_subject"] and EXPORTER in sess[0]["peer_subject"]
    (e,) = epochs(collector)
    assert e["outcome"] == "complete" and e["state"] == "final"
    assert (e["src"], e["dst"], e["dest_qp"], e["pkey"], e["observation_point_id"]) == \
        ("192.0.2.1", "192.0.2.2", 0x123, 0xFFFF, 7)
    assert (e["first_report_id"], e["last_report_id"], e["missing_reports"], e["gaps"]) == (1, 3, 0, 0)
    assert (e["requests"], e["skipped"], e["filled"], e["repeated"], e["window"]) == (9, 3, 3, 1, 4)
    assert e["flags_seen"] == FINAL | GEN_UNVERIFIED
    assert e["retired_ms"] is not None
    assert raw(collector) == []

    # report: JSON and text, [SEQOBS]'s wording
    p = subprocess.run([BIN, "report", "--db", collector.db, "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout.splitlines()[0])
    assert j["outcome"] == "complete" and j["rdmaSequenceEpochId"] == 3
    assert j["observed"]["expiredPsnTotalCount"] == 0 and j["observed"]["repeatedPsnTotalCount"] == 1
    assert j["observed"]["filledPsnTotalCount"] == 3
    assert j["qualifications"]["rdmaSequenceFlags"] == FINAL | GEN_UNVERIFIED
    assert j["qualifications"]["flag_names"] == ["finalEpoch", "generationUnverified"]
    assert j["coverage"]["missing_reports"] == 0
    t = subprocess.run([BIN, "report", "--db", collector.db, "--verbose"], capture_output=True, text=True).stdout
    assert "complete" in t and "repeated PSNs" in t and "expired" in t
    for banned in ("lost", "retransmi", "reorder"):
        assert banned not in t.lower().replace("not proof of", "")
    # the default table: the outcome beside the sequence health (3 positions filled, 1 repeated PSN)
    t = subprocess.run([BIN, "report", "--db", collector.db], capture_output=True, text=True).stdout.splitlines()
    assert t[0].split() == ["FLOW", "END", "SESSION", "EPOCH", "OUTCOME", "OP", "CONNECTION", "REQUESTS",
                            "SEQUENCE"]
    assert t[1].split()[1:] == ["1", "3", "complete", "7", "192.0.2.1,192.0.2.2,0x123", "9", "seen", "late", "3,",
                                "repeated", "1"]


def openssl_subject(pki, cert):
    """The certificate's subject in OpenSSL's one-line form and its SANs, from openssl x509."""
    path = f"{pki}/{cert}.pem"
    subj = subprocess.run(["openssl", "x509", "-in", path, "-noout", "-subject", "-nameopt", "compat"],
                          capture_output=True, text=True, check=True).stdout.strip().split("=", 1)[1]
    sans = subprocess.run(["openssl", "x509", "-in", path, "-noout", "-ext", "subjectAltName"],
                          capture_output=True, text=True, check=True).stdout.splitlines()[1:]
    return subj, [x.strip() for x in ",".join(sans).split(",") if x.strip()]


def san_text(san):
    """openssl x509's "IP Address:0:0:0:0:0:0:0:1" as inet_ntop writes it ("IP:::1")."""
    if san.startswith("IP Address:"):
        return "IP:" + str(ipaddress.ip_address(san[len("IP Address:"):]))
    return san


@pytest.mark.parametrize("collector", [("--peer-name", "127.0.0.1")], indirect=True)
def test_report_names_the_exporter(collector, pki):
    """Each epoch names its Transport Session's exporter (sessions: peer, peer_subject, peer_name;
    report JSON, CSV, --verbose): the address and port the exporter's socket has (getsockname), the
    subject openssl x509 reads from its certificate, and which authorised peer name it matched:
    exporter.pem by its DNS SAN, wrongname.pem (intruder.rocemeter.test) by its IP SAN 127.0.0.1."""
    ports = []
    for i, cert in enumerate(("exporter", "wrongname")):
        s = collector.connect(cert)
        ports.append(s.getsockname()[1])
        s.sendall(templates_msg() + data_msg(report(epoch=10 + i, rid=1, flags=FINAL | GEN_UNVERIFIED)))
        close_tls(s)
        collector.wait_ended(i + 1)
    sess = collector.wait_ended(2)
    assert [x["peer_name"] for x in sess] == [EXPORTER, "127.0.0.1"]
    p = subprocess.run([BIN, "report", "--db", collector.db, "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    got = [json.loads(x)["exporter"] for x in p.stdout.splitlines()]
    for x, cert, port, name in zip(got, ("exporter", "wrongname"), ports, (EXPORTER, "127.0.0.1")):
        subj, sans = openssl_subject(pki, cert)
        assert x["peer"] == f"127.0.0.1:{port}" and x["peer_name"] == name, x
        assert x["peer_subject"].startswith(subj + " SAN "), x
        assert x["peer_subject"][len(subj) + 5:].split(",") == [san_text(a) for a in sans], x
    rows = list(csv.DictReader(io.StringIO(subprocess.run(
        [BIN, "report", "--db", collector.db, "--format", "csv"], capture_output=True, text=True).stdout)))
    assert [(r["peer"], r["peer_name"], r["peer_subject"]) for r in rows] == \
        [(x["peer"], x["peer_name"], x["peer_subject"]) for x in got]
    t = subprocess.run([BIN, "report", "--db", collector.db, "--verbose"], capture_output=True, text=True).stdout
    assert t.splitlines()[0].endswith(f" | exporter: {EXPORTER} at 127.0.0.1:{ports[0]} (certificate "
                                      f"{got[0]['peer_subject']})"), t


def test_report_names_a_plain_tcp_exporter(tmp_path):
    c = Collector(tmp_path, None, plain=True)
    try:
        s = c.connect("plain")
        port = s.getsockname()[1]
        s.sendall(templates_msg() + data_msg(report(epoch=1, rid=1, flags=FINAL | GEN_UNVERIFIED)))
        s.close()
        c.wait_ended(1)
        p = subprocess.run([BIN, "report", "--db", c.db, "--json"], capture_output=True, text=True)
        (j,) = [json.loads(x) for x in p.stdout.splitlines()]
        assert j["exporter"] == {"peer": f"127.0.0.1:{port}", "peer_name": None, "peer_subject": None}
        t = subprocess.run([BIN, "report", "--db", c.db, "--verbose"], capture_output=True, text=True).stdout
        assert t.rstrip().endswith(f" | exporter: 127.0.0.1:{port} (plain TCP, unauthenticated)"), t
    finally:
        c.stop()
def reliability_msg(claims, seq=0):
    """rocemeter's Reliability Options Template 261 and its records, written here from
    docs/ipfix-mapping.md ("What an earlier Transport Session delivered"): scope exporterIPv6Address
    (131) and exporterTransportPort (217); flowStart/EndMilliseconds (152, 153),
    exportedMessageTotalCount (41), exportedFlowRecordTotalCount (42), exportedOctetTotalCount (40).
    claims: (port, messages, records, octets) of an exporter at 127.0.0.1 (IPv4-mapped), the session
    reported having ended now."""
    fields = [(131, 16), (217, 2), (152, 8), (153, 8), (41, 8), (42, 8), (40, 8)]
    otmpl = struct.pack(">HHH", 261, len(fields), 2) + b"".join(spec(0, i, n) for i, n in fields)
    addr, now = ipaddress.IPv6Address("::ffff:127.0.0.1").packed, int(time.time() * 1000)
    recs = b"".join(addr + struct.pack(">HQQQQQ", port, now - 1000, now, m, r, o)
                    for port, m, r, o in claims)
    return message(ipfix_set(3, otmpl), ipfix_set(261, recs), seq=seq)


def test_forged_reliability_claims_rejected(tmp_path):
    """A forged Reliability record (2^64 - 1 records was once stored as
    resource_drops = -1; another forged one: 1000 Messages, 2147483647 records, 10^11 octets was counted,
    'unread-at-crash' 2147483639): a count the record's own octets cannot hold, or octets its
    Messages cannot hold (65535 each, RFC 7011 section 3.1), is rejected by the decoder; a claim of
    more records never read than this host's TCP receive buffer (net.ipv4.tcp_rmem's maximum), the
    session's 131071-octet buffer and one TLS record could hold (a record at least one octet) by the
    store; all are bad records of the reporting session, never a count. A plausible claim afterwards
    is still counted: claim - read records 'unread-at-crash'."""
    rmem_max = int(open("/proc/sys/net/ipv4/tcp_rmem").read().split()[2])
    bound = rmem_max + 131071 + 16384 + 256 + 5  # octets, one a record
    c = Collector(tmp_path, None, plain=True)
    try:
        s = c.connect("plain")
        port = s.getsockname()[1]
        s.sendall(templates_msg() + data_msg(report(epoch=1, rid=1, flags=FINAL | GEN_UNVERIFIED)))
        s.close()
        (first,) = c.wait_ended(1)
        read = first["records"] + first["rejected"]
        beyond = read + bound + 1
        msgs = beyond // 60000 + 2  # enough Messages for the octets: only the buffer bound refuses it
        s = c.connect("plain")
        s.sendall(reliability_msg([(port, 1, 2**64 - 1, 2**64 - 1),  # above 2^63 - 1
                                   (port, 1000, 2**31 - 1, 10**11),  # 10^11 octets in 1000 Messages
                                   (port, msgs, beyond, beyond + 16 * msgs),  # beyond the buffers
                                   (port, msgs, read + bound, read + bound + 16 * msgs),  # at the bound
                                   (port, 10, read + 5, 100000)]))   # 5 never read
        s.close()
        sessions = c.wait_ended(2)
        log = c.log()
    finally:
        c.stop()
    # the claim at the bound is possible: it is counted (once: the later claim finds it reported)
    assert sessions[0]["resource_drops"] == bound, dict(sessions[0])
    assert sessions[1]["rejected"] == 3, dict(sessions[1])
    drops = c.query("SELECT kind, count FROM drops WHERE session_id = ?", sessions[0]["id"])
    assert [(d["kind"], d["count"]) for d in drops] == [("unread-at-crash", bound)]
    assert ("rejected: Reliability record of Template 261 claims 1 Messages, %d Data Records in %d octets: "
            "a count above 2^63 - 1" % (2**64 - 1, 2**64 - 1)) in log, log
    assert ("rejected: Reliability record of Template 261 claims 1000 Messages, 2147483647 Data Records in "
            "100000000000 octets: more octets than its Messages can hold (65535 per Message)") in log, log
    assert ("delivered %d records, %d read: it claims more records never read than the collector's receive "
            "buffers can hold" % (beyond, read)) in log, log


def points_msg(points, domain=0, seq=1):
    """An observation point names Options Template (262: scope observationPointId 138/8, interfaceName 82/64,
    RFC 7011 section 3.4.2.2) and one record per (ID, name bytes), NUL-padded (docs/ipfix-mapping.md)."""
    otmpl = struct.pack(">HHH", 262, 2, 1) + spec(0, 138, 8) + spec(0, 82, 64)
    recs = b"".join(struct.pack(">Q", i) + n.ljust(64, b"\0") for i, n in points)
    return message(ipfix_set(3, otmpl), ipfix_set(262, recs), domain=domain, seq=seq)


def test_observation_point_names_stored_and_reported(collector):
    """The exporter's names of its observation points (Options Template 262)
    are stored per domain and printed by report beside the ID: the table,
    --verbose, JSON and CSV; a point without a name has none; a name with a
    control character is rejected, never stored. The records count in the
    Sequence Numbers: no gap."""
    pts = [(7, b"leaf-a"), (8, b"leaf-b"), (9, b"bad\x01name")]
    reps = [dict(report(epoch=o, rid=1, obs=o), flags=GEN_UNVERIFIED | FINAL) for o in (7, 8, 10)]
    send_session(collector, templates_msg(), points_msg(pts, seq=1), data_msg(*reps, seq=1 + len(pts)))
    sess = collector.wait_ended(1)
    assert sess[0]["seq_gaps"] == 0 and sess[0]["rejected"] == 1
    stored = collector.query("SELECT domain, observation_point_id, name FROM observation_points ORDER BY 2")
    assert [dict(r) for r in stored] == [
        {"domain": 0, "observation_point_id": 7, "name": "leaf-a"},
        {"domain": 0, "observation_point_id": 8, "name": "leaf-b"}]
    want = {7: "leaf-a", 8: "leaf-b", 10: None}

    rep = functools.partial(rocemeter_report, collector.db, binary=BIN)  # rep(*args): report's output
    js = [json.loads(x) for x in rep("--json").splitlines()]
    assert {j["key"]["observationPointId"]: j["observation_point_name"] for j in js} == want
    rows = list(csv.DictReader(io.StringIO(rep("--format", "csv"))))
    assert {int(r["observationPointId"]): r["observation_point_name"] or None for r in rows} == want
    verbose = rep("--verbose")
    assert "observation point 7 (leaf-a)," in verbose and "observation point 8 (leaf-b)," in verbose
    assert "observation point 10," in verbose
    table = rep().splitlines()[1:]
    assert sorted(line.split()[4:6] for line in table) == [["10", "192.0.2.1,192.0.2.2,0x123"],
                                                           ["7", "leaf-a"], ["8", "leaf-b"]]


@pytest.mark.parametrize("collector", [("--peer-name", "127.0.0.1")], indirect=True)
def test_observation_point_name_bound_to_its_exporter(collector):
    """A name is bound to the exporter that sent it. Exporter A (exporter.pem, authorised
    as exporter.rocemeter.test) names point 7 "leaf-a"; exporter B (wrongname.pem, authorised by its
    IP SAN 127.0.0.1) then names point 7 of the same Observation Domain "evil". A's epoch keeps
    "leaf-a" in the table, --verbose, JSON and CSV; B's epoch shows B's own name; both rows stored,
    each with its session's peer_name and peer_subject."""
    send_session(collector, templates_msg(), points_msg([(7, b"leaf-a")], seq=1),
                 data_msg(dict(report(epoch=1, rid=1), flags=GEN_UNVERIFIED | FINAL), seq=2), cert="exporter")
    collector.wait_ended(1)
    send_session(collector, templates_msg(), points_msg([(7, b"evil")], seq=1),
                 data_msg(dict(report(epoch=2, rid=1, qp=0x456), flags=GEN_UNVERIFIED | FINAL), seq=2),
                 cert="wrongname")
    sess = collector.wait_ended(2)
    assert [s["peer_name"] for s in sess] == [EXPORTER, "127.0.0.1"]
    want = {1: "leaf-a", 2: "evil"}  # rdmaSequenceEpochId -> the name its own exporter gave point 7

    rep = functools.partial(rocemeter_report, collector.db, binary=BIN)  # rep(*args): report's output
    js = [json.loads(x) for x in rep("--json").splitlines()]
    assert {j["rdmaSequenceEpochId"]: j["observation_point_name"] for j in js} == want
    assert {j["rdmaSequenceEpochId"]: j["exporter"]["peer_name"] for j in js} == {1: EXPORTER, 2: "127.0.0.1"}
    rows = list(csv.DictReader(io.StringIO(rep("--format", "csv"))))
    assert {int(r["rdmaSequenceEpochId"]): r["observation_point_name"] for r in rows} == want
    verbose = rep("--verbose").splitlines()
    assert len(verbose) == 2
    for line in verbose:
        epoch = 1 if f"exporter: {EXPORTER} at" in line else 2
        assert f"observation point 7 ({want[epoch]})," in line, line
    table = rep().splitlines()[1:]
    # FLOW END, SESSION (each exporter's own), EPOCH, OUTCOME, OP and its name
    assert sorted(line.split()[1:5] for line in table) == [["1", "1", "complete", "7"], ["2", "2", "complete", "7"]]
    assert {line.split()[2]: line.split()[5] for line in table} == {"1": "leaf-a", "2": "evil"}
    stored = collector.query("SELECT peer_name, peer_subject, domain, observation_point_id, name"
                             " FROM observation_points ORDER BY name DESC")
    assert [tuple(r) for r in stored] == [
        (EXPORTER, sess[0]["peer_subject"], 0, 7, "leaf-a"),
        ("127.0.0.1", sess[1]["peer_subject"], 0, 7, "evil")]


@pytest.mark.parametrize("collector", [("--peer-name", "127.0.0.1")], indirect=True)
def test_summary_and_html_keep_exporters_apart(collector, tmp_path):
    """Trial finding: two exporters (exporter.pem, wrongname.pem) report the same observation point 7
    and the same connection under their own names. report --summary (text, JSON, CSV) and the HTML
    page's observation points and connections keep one row per exporter with its own name and
    requests; they were merged (EPOCHS 2, A's name over A's and B's requests)."""
    send_session(collector, templates_msg(), points_msg([(7, b"leaf-a")], seq=1),
                 data_msg(dict(report(epoch=1, rid=1), flags=GEN_UNVERIFIED | FINAL), seq=2), cert="exporter")
    collector.wait_ended(1)
    send_session(collector, templates_msg(), points_msg([(7, b"leaf-b")], seq=1),
                 data_msg(dict(report(epoch=2, rid=1, requests=9), flags=GEN_UNVERIFIED | FINAL), seq=2),
                 cert="wrongname")
    collector.wait_ended(2)
    want = {EXPORTER: (1, 5, "leaf-a"), "127.0.0.1": (1, 9, "leaf-b")}  # peer_name -> epochs, requests, name

    rep = functools.partial(rocemeter_report, collector.db, binary=BIN)  # rep(*args): report's output
    js = [json.loads(x) for x in rep("--summary", "--json").splitlines()]
    assert {j["exporter"]["peer_name"]: (j["epochs"], j["totals"]["requestPacketTotalCount"],
                                         j["observation_point_name"]) for j in js} == want
    assert all(j["exporter"]["peer_subject"] for j in js)
    rows = list(csv.DictReader(io.StringIO(rep("--summary", "--format", "csv"))))
    assert {r["peer_name"]: (int(r["epochs"]), int(r["requestPacketTotalCount"]), r["observation_point_name"])
            for r in rows} == want
    text = rep("--summary").splitlines()
    assert text[0].split()[:3] == ["EXPORTER", "OP", "CONNECTION"], text[0]
    # EXPORTER OP (the point, then the name its exporter gave it) CONNECTION EPOCHS REQUESTS ...
    assert {line.split()[0]: (line.split()[2], int(line.split()[4]), int(line.split()[5])) for line in text[1:]} == {
        k: (v[2],) + v[:2] for k, v in want.items()}, text
    assert len(text) == 3, text
    out = str(tmp_path / "r.html")
    p = subprocess.run([BIN, "report", "--db", collector.db, "--format", "html", "--output", out],
                       capture_output=True, text=True, timeout=120)
    if p.returncode and "D3" in p.stderr:
        pytest.skip(p.stderr)
    assert p.returncode == 0, p.stderr
    page = open(out).read()
    data = json.loads(re.search(r'<script type="application/json" id="rocemeter-data">(.*?)</script>', page,
                                re.S).group(1))
    assert data["exporters"] == 2
    for part in ("observation_points", "connections"):
        got = {r["peer_name"]: (r["epochs"], r["requests"], r["observation_point_name"])
               for r in data[part]["rows"]}
        assert got == want, (part, got)
        assert all(r["observationPointId"] == 7 for r in data[part]["rows"])


def test_observation_points_of_an_earlier_layout(tmp_path, pki):
    """A database whose observation_points table is keyed by domain and ID only (the earlier
    layout: names bound to no exporter) still opens: report shows no name from it, and the first
    read-write open (collect) drops that table for the new one; the exporter's next session names
    its points again."""
    c = Collector(tmp_path, pki)
    send_session(c, templates_msg(), data_msg(dict(report(epoch=1, rid=1), flags=GEN_UNVERIFIED | FINAL)))
    c.wait_ended(1)
    assert c.stop() == 0
    con = sqlite3.connect(c.db)
    con.executescript("DROP TABLE observation_points;"
                      "CREATE TABLE observation_points (domain INTEGER, observation_point_id INTEGER,"
                      " name TEXT NOT NULL, updated_ms INTEGER, PRIMARY KEY(domain, observation_point_id));"
                      "INSERT INTO observation_points VALUES (0, 7, 'forged', 1);")
    con.close()

    def names():
        p = subprocess.run([BIN, "report", "--db", c.db, "--json"], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return [json.loads(x)["observation_point_name"] for x in p.stdout.splitlines()]
    assert names() == [None]
    c = Collector(tmp_path, pki)
    try:
        cols = [r["name"] for r in c.query("PRAGMA table_info(observation_points)")]
        assert "peer_subject" in cols and "peer_name" in cols
        assert c.query("SELECT * FROM observation_points") == []
        send_session(c, templates_msg(), points_msg([(7, b"leaf-a")], seq=1),
                     data_msg(dict(report(epoch=2, rid=1), flags=GEN_UNVERIFIED | FINAL), seq=2))
        c.wait_ended(2)
    finally:
        assert c.stop() == 0
    # the exporter's identity is the same in both sessions: its name is shown for both its epochs
    assert names() == ["leaf-a", "leaf-a"]


def test_ipv6_template_and_two_domains(collector):
    r = report(epoch=1, rid=1, src=bytes.fromhex("20010db8000000000000000000000001"),
               dst=bytes.fromhex("20010db8000000000000000000000002"))
    send_session(collector, templates_msg(V6, 300, domain=1), templates_msg(V4, 256, domain=2),
                 data_msg(r, tid=300, fields=V6, domain=1),
                 data_msg(report(epoch=1, rid=1, flags=GEN_UNVERIFIED), domain=2))
    collector.wait_ended(1)
    es = epochs(collector)
    assert [(e["domain"], e["src"]) for e in es] == [(1, "2001:db8::1"), (2, "192.0.2.1")]
    assert all(e["outcome"] == "incomplete" for e in es)  # no final record
    assert all("without a final report" in e["reason"] for e in es)


def test_gap_and_missing_initial(collector):
    r3 = report(epoch=4, rid=3)
    r6 = later(r3, 6, final=True)
    send_session(collector, templates_msg(), data_msg(r3), data_msg(r6))
    collector.wait_ended(1)
    (e,) = epochs(collector)
    assert e["outcome"] == "incomplete"
    assert (e["missing_initial"], e["missing_reports"], e["gaps"]) == (2, 4, 2)
    # the total is report 6's own value; nothing is attributed to reports 4 and 5
    assert e["requests"] == r6["requests"]
    assert "missing initial reports 1..2" in e["reason"]


def test_unsigned64_above_2_63_reported(collector):
    """unsigned64 IEs ([SEQOBS]: epoch ID, report ID, observationPointId, total counters) keep
    their value in `rocemeter report` above 2^63 (SQLite integers are signed)."""
    big = 2**64 - 2
    r1 = report(epoch=big, rid=2**63 + 1, obs=2**63 + 7, requests=2**63 + 5)
    send_session(collector, templates_msg(), data_msg(r1, later(r1, 2**63 + 2, final=True)))
    collector.wait_ended(1)
    p = subprocess.run([BIN, "report", "--db", collector.db, "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout.splitlines()[0])
    assert j["rdmaSequenceEpochId"] == big
    assert j["key"]["observationPointId"] == 2**63 + 7
    assert j["observed"]["requestPacketTotalCount"] == 2**63 + 5 + 2
    assert (j["coverage"]["first_report_id"], j["coverage"]["last_report_id"]) == (2**63 + 1, 2**63 + 2)
    assert j["coverage"]["missing_initial"] == 2**63
    t = subprocess.run([BIN, "report", "--db", collector.db, "--verbose"], capture_output=True, text=True).stdout
    assert f"epoch {big}:" in t and f"observation point {2**63 + 7}," in t
    assert f"{2**63 + 7} requests" in t
    t = subprocess.run([BIN, "report", "--db", collector.db], capture_output=True, text=True).stdout.splitlines()
    # first report 2^63 + 1: reports 1..2^63 missing, so incomplete
    assert t[1].split()[2:7] == [str(big), "incomplete", str(2**63 + 7), "192.0.2.1,192.0.2.2,0x123", str(2**63 + 7)]


def test_split_across_reads(collector):
    """One Message in 7-octet TLS records, sent one after the other."""
    r1 = report(epoch=2, rid=1)
    stream = templates_msg() + data_msg(r1) + data_msg(later(r1, 2, final=True))
    s = collector.connect()
    for i in range(0, len(stream), 7):
        s.sendall(stream[i:i + 7])
        time.sleep(0.001)
    close_tls(s)
    collector.wait_ended(1)
    (e,) = epochs(collector)
    assert e["outcome"] == "complete" and e["last_report_id"] == 2


# ------------------------------------------------------------ structural errors

def test_bad_version_ends_session(collector):
    send_session(collector, templates_msg(), message(ipfix_set(256, record(report())), version=9))
    (s,) = collector.wait_ended(1)
    assert "version 9" in s["end_reason"]
    assert epochs(collector) == []


def test_set_past_message_rejected(collector):
    good = data_msg(report(epoch=1, rid=1))
    bad = bytearray(data_msg(report(epoch=2, rid=1)))
    struct.pack_into(">H", bad, 18, len(bad) - 16 + 4)  # set length 4 octets beyond the message
    send_session(collector, templates_msg(), bytes(bad), good)
    (s,) = collector.wait_ended(1)
    assert s["end_reason"] == "peer closed the session"  # the message is rejected, the session goes on
    (r,) = raw(collector)
    assert "runs past its message" in r["reason"] and r["verdict"] == "undecodable"
    assert bytes(r["record"]) == bytes(bad)
    assert [e["epoch_id"] for e in epochs(collector)] == [1]  # epoch 2 never decoded


def test_unknown_template(collector):
    send_session(collector, templates_msg(), data_msg(report(), tid=300))
    collector.wait_ended(1)
    (r,) = raw(collector)
    assert "unknown Template 300" in r["reason"]
    assert epochs(collector) == []


def test_trailing_octets_not_padding(collector):
    r1 = report(epoch=1)
    send_session(collector, templates_msg(),
                 message(ipfix_set(256, record(r1) + b"\x00\x00\x07")),   # 3 octets, not zero padding
                 message(ipfix_set(256, record(later(r1, 2)) + b"\x00\x00\x00")))  # zero padding: fine
    collector.wait_ended(1)
    (r,) = raw(collector)
    assert "3 trailing octets" in r["reason"]
    (e,) = epochs(collector)
    assert e["last_report_id"] == 2 and e["reports_accepted"] == 2


def test_missing_field(collector):
    fields = [f for f in V4 if f[0] != "window"]
    send_session(collector, message(ipfix_set(2, template_record(256, fields))),
                 data_msg(report(), fields=fields))
    collector.wait_ended(1)
    (r,) = raw(collector)
    assert "lacks rdmaSequenceWindow" in r["reason"]
    assert len(bytes(r["record"])) == 120 - 4
    assert epochs(collector) == []


def test_wrong_pen_is_not_the_profile(collector):
    """Binding is by (PEN, element number): the same numbers under another PEN are other IEs."""
    send_session(collector, message(ipfix_set(2, template_record(256, V4, pen=9999))), data_msg(report()))
    collector.wait_ended(1)
    (r,) = raw(collector)
    assert "lacks rdmaDestinationQP" in r["reason"]


def test_flow_keys_disagree(collector):
    bad_keys = ipfix_set(260, struct.pack(">HQ", 256, 0x9F | (1 << 8)))  # report ID flagged as key
    otmpl = ipfix_set(3, struct.pack(">HHH", 260, 2, 1) + spec(0, 145, 2) + spec(0, 173, 8))
    send_session(collector, message(ipfix_set(2, template_record(256, V4)), otmpl, bad_keys),
                 data_msg(report()))
    collector.wait_ended(1)
    (r,) = raw(collector)
    assert "Flow Keys" in r["reason"]
    assert epochs(collector) == []


@pytest.mark.parametrize("field,value,why", [
    ("qp", 0x01000123, "upper 8 bits"),
    ("window", 0, "rdmaSequenceWindow 0 outside"),
    ("window", 4194305, "rdmaSequenceWindow 4194305 outside"),
])
def test_field_ranges_invalidate(collector, field, value, why):
    send_session(collector, templates_msg(), data_msg(report(epoch=1, **{field: value})))
    collector.wait_ended(1)
    (e,) = epochs(collector)
    assert e["outcome"] == "invalid" and why in e["reason"]
    (r,) = raw(collector)
    assert r["verdict"] == "invalid" and why in r["reason"]
    assert bytes(r["template"])[:4] == struct.pack(">HH", 256, 19)


def test_window_upper_bound_valid(collector):
    send_session(collector, templates_msg(),
                 data_msg(report(epoch=1, window=4194304), later(report(epoch=1, window=4194304), 2, final=True)))
    collector.wait_ended(1)
    (e,) = epochs(collector)
    assert e["outcome"] == "complete" and e["window"] == 4194304


def test_unknown_flag_bits_kept_raw(collector):
    r1 = report(epoch=1, rid=1, flags=GEN_UNVERIFIED | 0x0040)
    send_session(collector, templates_msg(), data_msg(r1))
    collector.wait_ended(1)
    (r,) = raw(collector)
    assert r["verdict"] == "unsupported" and r["flags"] == GEN_UNVERIFIED | 0x0040
    assert bytes(r["record"]) == record(r1)
    (e,) = epochs(collector)
    assert e["unsupported"] == 1 and e["requests"] is None  # no measurement derived
    assert e["outcome"] == "incomplete"


def test_arithmetic_and_ordering_rules(collector):
    a1 = report(epoch=1, rid=1)
    a2 = dict(later(a1, 2), skipped=9)                 # skipped != filled + expired + abandoned + pending
    b1 = report(epoch=2, rid=1)
    b2 = dict(b1, report=2, requests=4)                # counter decreased, otherwise valid
    c1 = report(epoch=3, rid=1)
    c1x = dict(c1, end=c1["end"] + 1)                  # same report ID, other content
    d1 = report(epoch=4, rid=1, flags=GEN_UNVERIFIED | SERIAL)  # closure reason in a non-final record
    e2 = later(report(epoch=5, rid=1), 2)
    e1 = report(epoch=5, rid=1)                        # stale after 2: ignored
    send_session(collector, templates_msg(), data_msg(a1, a2, b1, b2, c1, c1x, d1, e2, e1),
                 data_msg(report(epoch=3, rid=1)))
    collector.wait_ended(1)
    got = {e["epoch_id"]: e for e in epochs(collector)}
    assert "skipped 9 != filled" in got[1]["reason"] and got[1]["outcome"] == "invalid"
    assert "requestPacketTotalCount decreased" in got[2]["reason"]
    assert "different content" in got[3]["reason"]
    assert "closure-reason flags" in got[4]["reason"]
    assert got[5]["stale"] == 1 and got[5]["last_report_id"] == 2 and got[5]["requests"] == e2["requests"]
    assert got[5]["outcome"] == "incomplete"
    # the invalidating records were kept raw
    assert sorted(r["epoch_id"] for r in raw(collector) if r["verdict"] == "invalid") == [1, 2, 3, 4]


def test_orphan_and_key_conflict(collector):
    e5 = report(epoch=5, rid=1)
    e3 = report(epoch=3, rid=1)                        # below the high-water 5: orphan
    e5other = dict(later(e5, 2), qp=0x000999)          # epoch 5 with another key
    send_session(collector, templates_msg(), data_msg(e5, e3, e5other))
    (s,) = collector.wait_ended(1)
    assert s["orphans"] == 1 and s["key_conflicts"] == 1
    (e,) = epochs(collector)
    assert e["epoch_id"] == 5 and e["outcome"] == "invalid" and "different record key" in e["reason"]


def test_new_session_clears_high_water(collector):
    send_session(collector, templates_msg(), data_msg(report(epoch=9, rid=1)))
    send_session(collector, templates_msg(), data_msg(report(epoch=2, rid=1)))
    collector.wait_ended(2)
    assert [(e["session_id"], e["epoch_id"]) for e in epochs(collector)] == [(1, 9), (2, 2)]


# ------------------------------------------------------------ robustness

def test_truncated_message_at_eof(collector):
    r1 = report(epoch=1, rid=1)
    half = data_msg(later(r1, 2))[:70]
    send_session(collector, templates_msg(), data_msg(r1), half)
    (s,) = collector.wait_ended(1)
    assert "truncated IPFIX message" in s["end_reason"] and "70 of 140" in s["end_reason"]
    (e,) = epochs(collector)
    assert e["outcome"] == "incomplete" and "truncated" in e["reason"] and e["last_report_id"] == 1


def test_random_input_ends_only_that_session(collector):
    good = collector.connect()
    r1 = report(epoch=1, rid=1)
    good.sendall(templates_msg() + data_msg(r1))
    rnd = random.Random(6)
    bad = collector.connect()
    bad.sendall(b"\x00\x09" + bytes(rnd.getrandbits(8) for _ in range(3000)))
    close_tls(bad)
    ended = collector.wait_ended(1)
    assert "version 9" in ended[1]["end_reason"] and ended[0]["ended_ms"] is None
    # the other session still works
    good.sendall(data_msg(later(r1, 2, final=True)))
    close_tls(good)
    collector.wait_ended(2)
    (e,) = epochs(collector)
    assert e["outcome"] == "complete"
    assert collector.proc.poll() is None


def test_fuzzed_sessions(collector):
    """Mutated and truncated valid streams, one session each: every session ends, the collector lives."""
    rnd = random.Random(1234)
    base = templates_msg() + data_msg(report(epoch=1, rid=1), later(report(epoch=1, rid=1), 2))
    n = 40
    for i in range(n):
        b = bytearray(base)
        for _ in range(rnd.randint(1, 8)):
            b[rnd.randrange(len(b))] = rnd.getrandbits(8)
        if i % 3 == 0:
            b = b[:rnd.randrange(len(b))]
        s = collector.connect()
        s.sendall(bytes(b))
        close_tls(s)
    sess = collector.wait_ended(n)
    assert all(x["end_reason"] for x in sess)
    assert collector.proc.poll() is None
    send_session(collector, templates_msg(), data_msg(report(epoch=1), later(report(epoch=1), 2, final=True)))
    sess = collector.wait_ended(n + 1)
    assert sess[-1]["end_reason"] == "peer closed the session"
    assert epochs(collector, "session_id = ?", sess[-1]["id"])[0]["outcome"] == "complete"


@pytest.mark.parametrize("cert", [None, "wrongname", "untrusted"])
def test_unauthorised_peer_refused(collector, cert):
    try:
        s = collector.connect(cert)
        s.sendall(templates_msg() + data_msg(report()))
        with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
            # TLS 1.3: the client's handshake ends before the server judges its certificate;
            # the refusal arrives as an alert on the next read.
            if s.recv(1) == b"":
                raise ConnectionResetError("closed")
        s.close()
    except ssl.SSLError:
        pass  # refused during the handshake itself
    # never a Transport Session: no sessions row, counted per source and minute (docs/collector.md)
    collector.wait_for(lambda: collector.query("SELECT * FROM connections"), "the refused connection counted")
    (conn,) = collector.query("SELECT * FROM connections")
    assert conn["outcome"] in ("handshake-failed", "not-authorised") and conn["count"] == 1
    assert "TLS handshake failed" in conn["last_detail"] or "not authorised" in conn["last_detail"]
    assert collector.query("SELECT * FROM sessions") == []
    assert epochs(collector) == []


# ------------------------------------------------------------ batched commits

def burst(n_msgs, n_epochs):
    """n_msgs Data Messages; Message k carries report k of epochs 1..n_epochs and one record
    with epoch ID 0 and report ID k (bound to no epoch, so kept raw: one raw row per Message)."""
    base = [report(epoch=e, qp=e) for e in range(1, n_epochs + 1)]
    return [data_msg(*[later(b, k) for b in base], report(epoch=0, rid=k), seq=k) for k in range(1, n_msgs + 1)]


def assert_whole_messages(c, n_committed, n_epochs):
    """The database holds Messages 1..n_committed entirely and nothing of any later Message."""
    assert [r["report_id"] for r in raw(c)] == list(range(1, n_committed + 1))
    assert all(r["verdict"] == "unbound" for r in raw(c))
    es = epochs(c)
    assert [e["epoch_id"] for e in es] == list(range(1, n_epochs + 1))
    for e in es:
        want = later(report(epoch=e["epoch_id"]), n_committed)
        assert (e["first_report_id"], e["last_report_id"], e["reports_accepted"]) == (1, n_committed, n_committed)
        assert (e["requests"], e["skipped"], e["filled"], e["flow_end_ms"]) == \
            (want["requests"], want["skipped"], want["filled"], want["end"])
        assert (e["missing_reports"], e["gaps"]) == (0, 0)


def test_burst_then_framing_error_keeps_every_message(collector):
    """Many Messages in one write, then a bad header: the session ends mid-stream, and every
    Message before the bad one is stored whole (with the session end, in the same commit)."""
    n, ne = 150, 20
    s = collector.connect()
    s.sendall(templates_msg() + b"".join(burst(n, ne)) + message(ipfix_set(256, record(report())), version=9))
    close_tls(s)
    (sess,) = collector.wait_ended(1)
    assert "version 9" in sess["end_reason"]
    assert (sess["messages"], sess["records"], sess["accepted"], sess["unbound"]) == \
        (n + 1, n * (ne + 1), n * ne, n)
    assert_whole_messages(collector, n, ne)
    assert all(e["outcome"] == "incomplete" and "version 9" in e["reason"] for e in epochs(collector))


def test_killed_collector_keeps_whole_messages(collector):
    """SIGKILL while a burst is being ingested: whatever was committed is a whole number of
    Messages (every report of them, epoch rows and raw rows alike), never part of one."""
    import threading

    n, ne = 1500, 50
    data = templates_msg() + b"".join(burst(n, ne))
    s = collector.connect()
    errors = []

    def send():
        try:
            s.sendall(data)
        except (OSError, ssl.SSLError) as ex:  # the collector is gone
            errors.append(ex)

    t = threading.Thread(target=send)
    t.start()
    try:
        collector.wait_for(lambda: collector.query("SELECT count(*) AS n FROM raw_records")[0]["n"] > 0,
                           "first committed Messages")
        collector.proc.kill()
        collector.proc.wait(timeout=WAIT)
    finally:
        t.join(timeout=WAIT)
        s.close()
    committed = collector.query("SELECT count(*) AS n FROM raw_records")[0]["n"]
    assert 1 <= committed <= n
    assert_whole_messages(collector, committed, ne)
    (sess,) = collector.query("SELECT * FROM sessions")
    assert sess["ended_ms"] is None  # killed: the session end was never written
    assert all(e["state"] == "open" and e["retired_ms"] is None for e in epochs(collector))


# ------------------------------------------------------------ limits, shutdown, plain TCP

@pytest.mark.parametrize("collector", [("--max-epochs", "1", "--max-sessions", "1")], indirect=True)
def test_limits(collector):
    s1 = collector.connect()
    s1.sendall(templates_msg() + data_msg(report(epoch=1), report(epoch=2), later(report(epoch=2), 2)))
    collector.wait_for(lambda: collector.query("SELECT * FROM drops WHERE kind='epoch-admission'"),
                       "epoch admission drop")
    try:  # second session: over max_sessions, closed after its handshake
        s2 = collector.connect()
        s2.sendall(templates_msg())
        s2.recv(1)
        s2.close()
    except (ssl.SSLError, OSError):
        pass
    collector.wait_for(lambda: collector.query("SELECT * FROM connections"), "the refused connection counted")
    close_tls(s1)
    collector.wait_ended(1)
    drops = {d["kind"]: d for d in collector.query("SELECT * FROM drops")}
    assert drops["epoch-admission"]["count"] == 1  # epoch 2 refused; its report 2 is then an orphan
    assert drops["session-limit"]["count"] == 1 and drops["session-limit"]["session_id"] == 0
    (sess,) = collector.query("SELECT * FROM sessions ORDER BY id")  # the refused one is no session
    assert sess["resource_drops"] == 1 and sess["orphans"] == 1
    (conn,) = collector.query("SELECT * FROM connections")
    assert conn["outcome"] == "session-limit" and "max_sessions" in conn["last_detail"]
    assert [e["epoch_id"] for e in epochs(collector)] == [1]
    assert "max_sessions 1" in collector.log() and "max_epochs 1" in collector.log()
    p = subprocess.run([BIN, "report", "--db", collector.db, "--limits"], capture_output=True, text=True)
    assert p.returncode == 0
    assert "max_sessions          1" in p.stdout and "max_epochs            1" in p.stdout
    assert "epoch-admission       1" in p.stdout and "not network loss" in p.stdout
    j = json.loads(subprocess.run([BIN, "report", "--db", collector.db, "--limits", "--json"],
                                  capture_output=True, text=True).stdout)
    assert j["limits"]["max_epochs_per_session"] == 1 and j["drops"]["session-limit"] == 1


def test_sigterm_retires_open_epochs(collector):
    s = collector.connect()
    s.sendall(templates_msg() + data_msg(report(epoch=1)))
    collector.wait_for(lambda: epochs(collector), "epoch stored")
    assert epochs(collector)[0]["outcome"] == "open"
    assert collector.stop() == 0
    s.close()
    (e,) = epochs(collector)
    assert e["outcome"] == "incomplete" and "collector shutdown" in e["reason"]
    (sess,) = collector.query("SELECT * FROM sessions")
    assert sess["end_reason"] == "collector shutdown"
    p = subprocess.run([BIN, "report", "--db", collector.db, "--outcome", "incomplete", "--verbose"],
                       capture_output=True, text=True)
    assert p.stdout.count("\n") == 1 and "collector shutdown" in p.stdout
    p = subprocess.run([BIN, "report", "--db", collector.db, "--outcome", "incomplete"],
                       capture_output=True, text=True)
    assert p.stdout.count("\n") == 2 and p.stdout.splitlines()[1].split()[3] == "incomplete"  # a header, one row
    p = subprocess.run([BIN, "report", "--db", collector.db, "--outcome", "complete"],
                       capture_output=True, text=True)
    assert p.stdout == ""


def test_plain_tcp_warns(tmp_path):
    c = Collector(tmp_path, None, plain=True)
    try:
        assert "WARNING: plain TCP" in c.log()
        s = c.connect("plain")
        s.sendall(templates_msg() + data_msg(report(epoch=1), later(report(epoch=1), 2, final=True)))
        s.close()
        c.wait_ended(1)
        (e,) = epochs(c)
        assert e["outcome"] == "complete"
        assert c.query("SELECT transport FROM sessions")[0]["transport"] == "tcp"
    finally:
        c.stop()


def test_usage_errors(tmp_path):
    p = subprocess.run([BIN, "collect", "--listen", "127.0.0.1:1"], capture_output=True, text=True)
    assert p.returncode == 2 and "--db" in p.stderr
    p = subprocess.run([BIN, "collect", "--db", str(tmp_path / "x.db")], capture_output=True, text=True)
    assert p.returncode == 2 and "--peer-name" in p.stderr
    p = subprocess.run([BIN, "report", "--db", str(tmp_path / "x.db"), "--outcome", "lost"],
                       capture_output=True, text=True)
    assert p.returncode == 2


@pytest.mark.parametrize("collector", [("--inactivity-timeout-ms", "200", "--max-raw-records", "1")],
                         indirect=True)
def test_inactivity_timeout_and_raw_limit(collector):
    s = collector.connect()
    s.sendall(templates_msg() + data_msg(report(epoch=1), report(epoch=2, window=0), report(epoch=3, window=0)))
    # silence is not a final report: the epoch is retired incomplete by the timeout, session still open
    collector.wait_for(lambda: epochs(collector, "epoch_id = 1 AND retired_ms IS NOT NULL"), "inactivity retirement")
    (e,) = epochs(collector, "epoch_id = 1")
    assert e["outcome"] == "incomplete" and "inactivity timeout" in e["reason"]
    assert collector.query("SELECT ended_ms FROM sessions")[0]["ended_ms"] is None
    # one raw record kept (epoch 2's), the second refused by max_raw_records: a collector drop
    assert [r["epoch_id"] for r in raw(collector)] == [2]
    (d,) = collector.query("SELECT * FROM drops")
    assert d["kind"] == "raw-record-limit" and d["count"] == 1
    # the high-water stays: epoch 1 again is an orphan
    s.sendall(data_msg(later(report(epoch=1), 2)))
    close_tls(s)
    (sess,) = collector.wait_ended(1)
    assert sess["orphans"] == 1


def test_config_file_and_overrides(tmp_path, pki):
    port = free_port()
    cfg = tmp_path / "r.ini"
    cfg.write_text(f"[collect]\nlisten = 127.0.0.1:{port}\ndb = {tmp_path}/cfg.db\nca = {pki}/ca.pem\n"
                   f"cert = {pki}/collector.pem\nkey = {pki}/collector.key\npeer_name = {EXPORTER}\n"
                   "max_epochs = 7\nmax_sessions = 3\n")
    log = open(tmp_path / "log", "w")
    p = subprocess.Popen([BIN, "collect", "--config", str(cfg), "--max-sessions", "2"], stderr=log)
    try:
        end = time.monotonic() + WAIT
        while "listening on" not in (tmp_path / "log").read_text() and time.monotonic() < end:
            assert p.poll() is None, (tmp_path / "log").read_text()
            time.sleep(0.02)
        text = (tmp_path / "log").read_text()
        assert f"127.0.0.1:{port} (TLS 1.3" in text and "max_sessions 2," in text and "max_epochs 7 " in text
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=WAIT)
        log.close()
    assert p.returncode == 0


def test_template_limit_per_session(collector):
    """A session may define at most 256 Templates (a finite limit, [SEQOBS]);
    the 257th is rejected, so Data Records for it are those of an unknown
    Template, while the first Template keeps working."""
    many = b"".join(template_record(256 + i, V4) for i in range(256))
    extra = template_record(1000, V4)
    oset, odata = flow_keys(256, V4)
    send_session(collector, message(ipfix_set(2, many), oset, odata), message(ipfix_set(2, extra)),
                 data_msg(report(epoch=1), tid=1000), data_msg(report(epoch=2), tid=256, seq=1))
    collector.wait_ended(1)
    assert "already has 256 Templates" in collector.log()
    assert any("unknown Template 1000" in r["reason"] for r in raw(collector))
    assert [e["epoch_id"] for e in epochs(collector)] == [2]
