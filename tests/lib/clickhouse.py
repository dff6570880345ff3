# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""ClickHouse servers for the tests: clickhouse-server started as a plain
process (never the system service) with its configuration, users, data,
temporary and log folders under a temporary folder, on free loopback ports.

    from clickhouse import server, cluster, skip_reason
    pytestmark = pytest.mark.skipif(skip_reason(), reason=skip_reason() or "")

    def test_x(tmp_path):
        with server(tmp_path / "ch") as ch:        # one server
            ch.query("SELECT 1")                   # through its HTTP interface
            ch.url                                 # clickhouse:http://127.0.0.1:PORT/?database=rocemeter
            ch.credentials                         # file for --store-credentials (user, password)
        with server(tmp_path / "ch", https=True) as ch:  # also HTTPS: ch.https_url, its CA ch.ca
        with cluster(tmp_path / "cl") as (a, b):   # two shards; remote_servers names both
            a.cluster                              # "rocemeter_test" on both servers

Every server has a user "rocemeter" with a password (the credentials file
holds "user=rocemeter" and "password=..."), and the database "rocemeter"
created. Servers stop (SIGTERM, then SIGKILL) when the context ends.
"""
import base64
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

BINARY = shutil.which("clickhouse-server") or "/usr/sbin/clickhouse-server"
CLUSTER = "rocemeter_test"
DATABASE = "rocemeter"
USER = "rocemeter"
START_WAIT = 60.0  # bound for a server to answer; never a timing assertion


def skip_reason():
    """Why ClickHouse tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (clickhouse-server as a plain process with its own folders)"
    if not os.access(BINARY, os.X_OK):
        return "clickhouse-server is not installed (make deps)"
    return None


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (held together while chosen)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _remote_servers(shards):
    if not shards:
        return ""
    body = "".join(f"<shard><replica><host>127.0.0.1</host><port>{tcp}</port>"
                   f"<user>{USER}</user><password>{pw}</password></replica></shard>"
                   for tcp, pw in shards)
    return f"<remote_servers><{CLUSTER}>{body}</{CLUSTER}></remote_servers>"


class Server:
    """One clickhouse-server process. query() and insert() go through HTTP."""

    def __init__(self, root, name="ch", https=False, settings=None):
        self.root = os.path.abspath(str(root))
        self.settings = settings or {}  # extra settings of the default profile (name -> value)
        self.name = name
        self.http, self.tcp, self.interserver, self.https = free_ports(4)
        self.tls = https
        self.ca = os.path.join(self.root, "tls", "ca.pem")
        self.password = secrets.token_hex(12)
        self.proc = None
        self.cluster = None
        self.credentials = os.path.join(self.root, "credentials")

    @property
    def url(self):
        return f"clickhouse:http://127.0.0.1:{self.http}/?database={DATABASE}"

    @property
    def https_url(self):
        """The store URL over TLS (the server's certificate: IP 127.0.0.1, signed by self.ca)."""
        return f"clickhouse:https://127.0.0.1:{self.https}/?database={DATABASE}"

    @property
    def http_url(self):
        return f"http://127.0.0.1:{self.http}/"

    def write_tls(self):
        """A CA and a server certificate for IP 127.0.0.1, made with openssl."""
        d = os.path.join(self.root, "tls")
        os.makedirs(d, exist_ok=True)

        def ossl(*args):
            subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
        ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=rocemeter test ClickHouse CA")
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=127.0.0.1")
        with open(os.path.join(d, "ext.cnf"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")
        return f"""<https_port>{self.https}</https_port>
  <openSSL><server><certificateFile>{d}/server.pem</certificateFile><privateKeyFile>{d}/server.key</privateKeyFile>
    <verificationMode>none</verificationMode><loadDefaultCAFile>false</loadDefaultCAFile>
    <cacheSessions>true</cacheSessions><disableProtocols>sslv2,sslv3</disableProtocols>
    <preferServerCiphers>true</preferServerCiphers></server></openSSL>"""

    def write_config(self, shards=()):
        for d in ("data", "tmp", "log", "user_files", "format_schemas"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        r = self.root
        tls = self.write_tls() if self.tls else ""
        with open(os.path.join(r, "config.xml"), "w") as f:
            f.write(f"""<?xml version="1.0"?>
<yandex>
  <logger><level>information</level><log>{r}/log/server.log</log><errorlog>{r}/log/error.log</errorlog>
    <size>10M</size><count>2</count><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{self.http}</http_port>
  <tcp_port>{self.tcp}</tcp_port>
  <interserver_http_port>{self.interserver}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <path>{r}/data/</path>
  <tmp_path>{r}/tmp/</tmp_path>
  <user_files_path>{r}/user_files/</user_files_path>
  <format_schema_path>{r}/format_schemas/</format_schema_path>
  <users_config>{r}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  {tls}
  {_remote_servers(shards)}
</yandex>
""")
        profile = "".join(f"<{k}>{v}</{k}>" for k, v in self.settings.items())
        with open(os.path.join(r, "users.xml"), "w") as f:
            f.write(f"""<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage>{profile}</default></profiles>
  <users>
    <default><password>{secrets.token_hex(12)}</password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <{USER}><password>{self.password}</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile><quota>default</quota></{USER}>
  </users>
  <quotas><default></default></quotas>
</yandex>
""")
        with open(self.credentials, "w") as f:
            f.write(f"user={USER}\npassword={self.password}\n")
        os.chmod(self.credentials, 0o600)

    def start(self):
        self.log = open(os.path.join(self.root, "log", "stdout.log"), "ab")
        self.proc = subprocess.Popen([BINARY, f"--config-file={self.root}/config.xml"], cwd=self.root,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_WAIT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"clickhouse-server exited with {self.proc.returncode}: "
                                   f"{self.error_log()[-2000:]}")
            try:
                if self.query("SELECT 1").strip() == "1":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"clickhouse-server did not answer in {START_WAIT} s: "
                                   f"{self.error_log()[-2000:]}")
            time.sleep(0.2)
        self.query(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if getattr(self, "log", None):
            self.log.close()
            self.log = None

    def error_log(self):
        try:
            with open(os.path.join(self.root, "log", "error.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def query(self, sql, data=None, database=None, raw=False):
        """Run sql (with data as the body after it, e.g. an INSERT's rows); the result as text
        (raw: as bytes, e.g. FORMAT RowBinary). A ClickHouse error raises RuntimeError with the
        server's message."""
        params = {"query": sql} if data is not None else {}
        if database:
            params["database"] = database
        url = self.http_url + ("?" + urllib.parse.urlencode(params) if params else "")
        body = data if data is not None else sql
        if isinstance(body, str):
            body = body.encode()
        req = urllib.request.Request(url, data=body, method="POST")
        auth = base64.b64encode(f"{USER}:{self.password}".encode()).decode()
        req.add_header("Authorization", "Basic " + auth)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                out = r.read()
                return out if raw else out.decode()
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"ClickHouse {e.code}: {e.read().decode(errors='replace')}") from None

    def rows(self, sql, database=DATABASE):
        """sql's result as a list of tuples of strings (TabSeparated)."""
        out = self.query(sql + " FORMAT TabSeparated", database=database)
        return [tuple(line.split("\t")) for line in out.splitlines()]


@contextlib.contextmanager
def server(root, https=False):
    """One clickhouse-server under the folder root, stopped at the end; with https, also an HTTPS
    port (s.https_url, its CA in s.ca)."""
    s = Server(root, https=https)
    s.write_config()
    try:
        yield s.start()
    finally:
        s.stop()


@contextlib.contextmanager
def cluster(root, n=2, settings=None):
    """n servers as n shards of the cluster CLUSTER (one replica each), named in every server's
    remote_servers, so that a Distributed table on any of them reads and writes all shards;
    settings: extra settings of every server's default profile."""
    servers = [Server(os.path.join(str(root), f"shard{i + 1}"), f"shard{i + 1}", settings=settings)
               for i in range(n)]
    shards = [(s.tcp, s.password) for s in servers]
    try:
        for s in servers:
            s.cluster = CLUSTER
            s.write_config(shards)
            s.start()
        yield tuple(servers)
    finally:
        for s in servers:
            s.stop()
