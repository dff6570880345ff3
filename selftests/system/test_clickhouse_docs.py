# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""docs/fleet.md "Running ClickHouse for rocemeter", run as written: the
config.d and users.d files are read from the page and given to a real
clickhouse-server process (tests/lib/clickhouse.py: a plain process with its
own folders, never the system service); only what a test machine must change
is changed (the ports and listen address, the placeholders of the password
hashes, computed here with hashlib). Then each user does its job and no more:
the admin runs --store-init, the writer runs collect (INSERT and SELECT) but
no DDL, the reader runs report --limits but no INSERT."""
import hashlib
import os
import re
import secrets
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import base64

import pytest

import clickhouse
from clickhouse import Server, free_ports, skip_reason

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("ROCEMETER_BIN", os.path.join(ROOT, "build", "rocemeter"))
WAIT = 60.0  # bound for the collector's first rows to arrive; never a timing assertion

pytestmark = [pytest.mark.skipif(not os.path.exists(BIN), reason="build/rocemeter not built"),
              pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")]


def doc_files():
    """The XML files of the section, by their path on a server."""
    with open(os.path.join(ROOT, "docs", "fleet.md")) as f:
        text = f.read()
    section = text.split("## Running ClickHouse for rocemeter", 1)[1].split("\n## ", 1)[0]
    files = dict(re.findall(r"`(/etc/clickhouse-server/[a-z.]+/rocemeter\.xml)`(?:(?!```).)*```xml\n(.*?)```", section,
                            re.S))
    assert set(files) == {"/etc/clickhouse-server/config.d/rocemeter.xml",
                          "/etc/clickhouse-server/users.d/rocemeter.xml"}, files.keys()
    return files


def rocemeter(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def credentials(path, user, password):
    with open(path, "w") as f:
        f.write(f"user={user}\npassword={password}\n")
    os.chmod(path, 0o600)
    return str(path)


def query_as(ch, user, password, sql):
    """sql through the HTTP interface as user; (HTTP status, body)."""
    req = urllib.request.Request(ch.http_url, data=sql.encode(), method="POST")
    req.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def test_documented_users_and_privileges(tmp_path, monkeypatch):
    files = doc_files()
    ch = Server(tmp_path / "ch")
    ch.write_config()  # the package's config.xml and users.xml stand-ins: folders, ports, the tests' user
    # the tests' own user (ch.query) is renamed: the page defines the user "rocemeter"
    monkeypatch.setattr(clickhouse, "USER", "tester")
    with open(os.path.join(ch.root, "users.xml")) as f:
        base = f.read()
    with open(os.path.join(ch.root, "users.xml"), "w") as f:
        f.write(base.replace("<rocemeter>", "<tester>").replace("</rocemeter>", "</tester>"))
    server_xml = files["/etc/clickhouse-server/config.d/rocemeter.xml"]
    assert "<http_port>8123</http_port>" in server_xml
    server_xml = server_xml.replace("<http_port>8123</http_port>", f"<http_port>{ch.http}</http_port>")
    server_xml = re.sub(r"<listen_host>[^<]*</listen_host>", "<listen_host>127.0.0.1</listen_host>", server_xml)
    os.makedirs(os.path.join(ch.root, "config.d"))
    with open(os.path.join(ch.root, "config.d", "rocemeter.xml"), "w") as f:
        f.write(server_xml)
    passwords = {role: secrets.token_hex(12) for role in ("ADMIN", "WRITER", "REPORT")}
    users_xml = files["/etc/clickhouse-server/users.d/rocemeter.xml"]
    for role, pw in passwords.items():
        placeholder = f"{role}_PASSWORD_SHA256"
        assert placeholder in users_xml
        users_xml = users_xml.replace(placeholder, hashlib.sha256(pw.encode()).hexdigest())
    os.makedirs(os.path.join(ch.root, "users.d"))
    with open(os.path.join(ch.root, "users.d", "rocemeter.xml"), "w") as f:
        f.write(users_xml)
    admin = credentials(tmp_path / "admin.cred", "rocemeter_admin", passwords["ADMIN"])
    writer = credentials(tmp_path / "writer.cred", "rocemeter", passwords["WRITER"])
    reader = credentials(tmp_path / "report.cred", "rocemeter_report", passwords["REPORT"])
    url = f"clickhouse:http://127.0.0.1:{ch.http}/?database=rocemeter"
    try:
        ch.start()
        ch.query("DROP DATABASE IF EXISTS rocemeter")  # the admin creates it
        # the writer may not create the schema
        r = rocemeter("collect", "--store-init", "--store", url, "--store-credentials", writer)
        assert r.returncode == 1 and "Code: 392" in r.stderr, r.stderr
        # the admin may, on one server and checking a cluster
        r = rocemeter("collect", "--store-init", "--store", url, "--store-credentials", admin)
        assert r.returncode == 0, r.stderr
        assert ("runs",) in ch.rows("SHOW TABLES", database="rocemeter")
        r = rocemeter("collect", "--store-init", "--store", url, "--store-credentials", admin, "--cluster", "nosuch")
        assert r.returncode == 1 and "no such cluster in system.clusters" in r.stderr, r.stderr
        # the writer runs a collector: it reads its IDs and inserts its run
        (port,) = free_ports(1)
        err = open(tmp_path / "collect.log", "w+")
        proc = subprocess.Popen([BIN, "collect", "--plain-tcp", "--listen", f"127.0.0.1:{port}", "--store", url,
                                 "--store-credentials", writer, "--collector-id", "doc-test"], stderr=err)
        try:
            deadline = time.monotonic() + WAIT
            while ch.rows("SELECT count() FROM runs WHERE collector_id = 'doc-test'",
                          database="rocemeter") in ([], [("0",)]):
                assert proc.poll() is None, open(tmp_path / "collect.log").read()
                assert time.monotonic() < deadline, open(tmp_path / "collect.log").read()
                time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=60)
        log = open(tmp_path / "collect.log").read()
        assert rc == 0, log
        assert "HTTP" not in log, log  # no request of the writer was refused
        # the reader reads, and only reads
        r = rocemeter("report", "--store", url, "--store-credentials", reader, "--limits")
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("collector run 1 (tcp on 127.0.0.1:%d, " % port), r.stdout
        status, body = query_as(ch, "rocemeter_report", passwords["REPORT"],
                                "INSERT INTO rocemeter.drops (collector_id) VALUES ('x')")
        assert status != 200 and "Code: 164" in body, body
        status, body = query_as(ch, "rocemeter", passwords["WRITER"], "CREATE TABLE rocemeter.x (a UInt8) "
                                "ENGINE = Memory")
        assert status != 200 and "Code: 392" in body, body
    finally:
        ch.stop()
