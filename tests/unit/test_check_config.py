# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter check-config FILE` (user/common/cmd_check_config.c): exit 0 for a
file attach and collect would accept, 2 with one line naming the file, key and
value for one they would refuse, TLS files included. No root, no network: the
certificates come from scripts/gen-certs (openssl), the encrypted key from
`openssl pkey -aes256`."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROCEMETER = os.environ.get("ROCEMETER", os.path.join(ROOT, os.environ.get("BUILD", "build"), "rocemeter"))


def check(path, *opts):
    return subprocess.run([ROCEMETER, "check-config", *opts, str(path)], capture_output=True, text=True,
                          timeout=30, stdin=subprocess.PIPE)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run([os.path.join(ROOT, "scripts", "gen-certs"), str(d)], check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", str(d / "exporter.key"), "-aes256", "-passout", "pass:secret",
                    "-out", str(d / "encrypted.key")], check=True, capture_output=True)
    return d


def full(pki, **over):
    v = {"window": "010", "export_key": "exporter.key", "export_cert": "exporter.pem", "listen": "[::1]:4740",
         "db": "/var/lib/rocemeter/collector.db", "collect_ca": "ca.pem"}
    v.update(over)
    return ("[meter]\nwindow = {window}\nprovision_all = yes\n"
            "[provision]\nconnection = 192.0.2.1 192.0.2.2 0x12 any\n"
            "[export]\ncollector = 192.0.2.9\nca = {p}/ca.pem\ncert = {p}/{export_cert}\nkey = {p}/{export_key}\n"
            "peer_name = collector.rocemeter.test\n"
            "[collect]\nlisten = {listen}\ndb = {db}\nca = {p}/{collect_ca}\ncert = {p}/collector.pem\n"
            "key = {p}/collector.key\npeer_name = exporter.rocemeter.test\n").format(p=pki, **v)


def test_accepted(tmp_path, pki):
    f = tmp_path / "ok.conf"
    f.write_text(full(pki))
    p = check(f)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ("%s: accepted: [meter] window 10, max_contexts 65536, provision_all; 1 connection line; "
                        "[export] to 192.0.2.9 port 4740 over TLS 1.3; [collect] on [::1]:4740 into "
                        "/var/lib/rocemeter/collector.db over TLS 1.3\n" % f)
    assert check(f, "--quiet").stdout == ""


def test_collector_only_file(tmp_path, pki):
    """A file with only [collect] (a collector host) is summarised by what collect reads: no [meter] part."""
    f = tmp_path / "collector.conf"
    f.write_text("[collect]\nlisten = [::1]:4740\ndb = /var/lib/rocemeter/collector.db\nca = {p}/ca.pem\n"
                 "cert = {p}/collector.pem\nkey = {p}/collector.key\npeer_name = exporter.rocemeter.test\n"
                 .format(p=pki))
    p = check(f)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ("%s: accepted: [collect] on [::1]:4740 into /var/lib/rocemeter/collector.db over TLS 1.3\n"
                        % f)


@pytest.mark.parametrize("over,line,message", [
    ({"window": "0"}, 2, "window: '0' is not an integer in 1..4194304"),
    ({"listen": "127.0.0.1:70000"}, 13,
     "listen: '127.0.0.1:70000' is not ADDR:PORT, [IPV6]:PORT or :PORT with PORT in 1..65535"),
    ({"export_key": "encrypted.key"}, None, "[export] tls: key file {p}/encrypted.key is encrypted: rocemeter never "
                                            "asks for a pass phrase"),
    ({"export_key": "collector.key"}, None, "[export] tls: key file {p}/collector.key does not match cert file "
                                            "{p}/exporter.pem"),
    ({"export_cert": "missing.pem"}, None, "[export] tls: cert file {p}/missing.pem: No such file or directory"),
    ({"collect_ca": "nothing.pem"}, None, "[collect] tls: ca file {p}/nothing.pem: No such file or directory"),
])
def test_refused(tmp_path, pki, over, line, message):
    f = tmp_path / "bad.conf"
    f.write_text(full(pki, **over))
    p = check(f)
    assert p.returncode == 2, p.stdout
    where = "%s:%d: " % (f, line) if line else "%s: " % f
    assert p.stderr.startswith("rocemeter check-config: " + where + message.format(p=pki)), p.stderr
    assert p.stdout == ""


def test_collect_section_must_be_complete(tmp_path, pki):
    """[collect] as rocemeter-collect.service reads it: alone, so db and TLS must be there."""
    f = tmp_path / "c.conf"
    f.write_text("[collect]\nlisten = :4740\ncert = %s/collector.pem\n" % pki)
    p = check(f)
    assert p.returncode == 2 and "[collect] store: missing" in p.stderr, p.stderr
    f.write_text("[collect]\nlisten = :4740\ndb = x.db\ncert = %s/collector.pem\n" % pki)
    p = check(f)
    assert p.returncode == 2 and "no peer_name configured" in p.stderr, p.stderr
    f.write_text("[collect]\nlisten = :4740\ndb = x.db\ntransport = tcp\n")
    p = check(f)
    assert p.returncode == 0 and "neither authenticated nor confidential" in p.stderr, p.stderr


def test_collect_memory_budget_as_collect_refuses_it(tmp_path):
    """A [collect] memory budget below the handshake reservation and one session: refused as
    `collect` refuses it (exit 2), not accepted by check-config and then refused at start."""
    f = tmp_path / "m.conf"
    f.write_text("[collect]\nlisten = :4740\ndb = x.db\ntransport = tcp\nmax_handshakes = 100\n"
                 "max_memory_bytes = 6815743\n")
    p = check(f)
    assert p.returncode == 2, p.stdout
    assert p.stderr.startswith("rocemeter check-config: %s:6: max_memory_bytes 6815743 is below "
                               "max_handshakes 100 x 65536 bytes plus one session (262144 bytes): 6815744" % f), \
        p.stderr
    c = subprocess.run([ROCEMETER, "collect", "--config", str(f)], capture_output=True, text=True, timeout=30)
    assert c.returncode == 2 and ("%s:6: max_memory_bytes 6815743" % f) in c.stderr, c.stderr
    f.write_text("[collect]\nlisten = :4740\ndb = x.db\ntransport = tcp\nmax_handshakes = 100\n"
                 "max_memory_bytes = 6815744\n")
    assert check(f).returncode == 0


@pytest.mark.parametrize("body,line,need", [
    # the trial's file: the budget (line 5) below the default 16 handshakes (docs/configuration.md)
    # x 65536 bytes + one session of 262144 bytes
    ("listen = :4740\ndb = x.db\ntransport = tcp\nmax_memory_bytes = 1000000\n", 5, 16 * 65536 + 262144),
    # the later of the two keys the check depends on
    ("listen = :4740\nmax_memory_bytes = 1310720\ndb = x.db\nmax_handshakes = 17\ntransport = tcp\n", 5,
     17 * 65536 + 262144),
])
def test_collect_memory_budget_error_has_file_and_line(tmp_path, body, line, need):
    """Every configuration error carries FILE:LINE (docs/configuration.md "Syntax and errors"), also
    the memory budget that is too small for max_handshakes (before: "FILE: [collect] ...", no line)."""
    f = tmp_path / "m.conf"
    f.write_text("[collect]\n" + body)
    p = check(f)
    assert p.returncode == 2, p.stdout
    assert p.stderr.startswith("rocemeter check-config: %s:%d: max_memory_bytes " % (f, line)), p.stderr
    assert p.stderr.rstrip().endswith(": %d" % need), p.stderr


def test_line_length_limit_is_the_documented_one(tmp_path):
    """docs/configuration.md: a line may hold at most 198 characters. 198 are accepted, 199 refused at
    their line (before: 199 accepted although the message said 198)."""
    doc = open(os.path.join(ROOT, "docs", "configuration.md")).read()
    limit = int(re.search(r"A line may hold at most (\d+) characters", doc).group(1))
    assert limit == 198
    for n, ok in ((limit, True), (limit + 1, False)):
        f = tmp_path / ("l%d.conf" % n)
        comment = "#" + "x" * (n - 1)
        assert len(comment) == n
        f.write_text("[meter]\nwindow = 64\n%s\nmax_contexts = 5\n" % comment)
        p = check(f)
        if ok:
            assert p.returncode == 0, p.stderr
        else:
            assert p.returncode == 2 and p.stderr == "rocemeter check-config: %s:3: line longer than %d characters\n" \
                % (f, limit), p.stderr


def test_collect_memory_share_refused_at_its_line(tmp_path):
    """max_memory_bytes_per_session above max_memory_bytes or below 131072 (docs/configuration.md):
    check-config names FILE:LINE of the later of the two keys (exit 2), as collect --config does."""
    f = tmp_path / "s.conf"
    f.write_text("[collect]\nlisten = :4740\ndb = x.db\ntransport = tcp\nmax_memory_bytes = 8388608\n"
                 "max_memory_bytes_per_session = 8388609\n")
    p = check(f)
    assert p.returncode == 2, p.stdout
    assert ("%s:6: max_memory_bytes_per_session 8388609 is above max_memory_bytes 8388608" % f) in p.stderr, p.stderr
    c = subprocess.run([ROCEMETER, "collect", "--config", str(f)], capture_output=True, text=True, timeout=30)
    assert c.returncode == 2 and ("%s:6:" % f) in c.stderr, c.stderr
    f.write_text("[collect]\nlisten = :4740\ndb = x.db\ntransport = tcp\nmax_memory_bytes_per_session = 131071\n")
    p = check(f)
    assert p.returncode == 2 and ("%s:5: max_memory_bytes_per_session 131071 is below 131072" % f) in p.stderr, \
        p.stderr
    f.write_text("[collect]\nlisten = :4740\ndb = x.db\ntransport = tcp\nmax_memory_bytes_per_session = 131072\n")
    assert check(f).returncode == 0


STORE_KEYS = ("store_credentials = /etc/rocemeter/clickhouse.credentials\ncollector_id = collector-1\n"
              "store_buffer_bytes = 16777216\n")


@pytest.mark.parametrize("store,keys", [
    ("clickhouse:http://127.0.0.1:8123/?database=rocemeter", STORE_KEYS),
    ("clickhouse:https://ch.example.net/?database=rocemeter", STORE_KEYS + "store_ca = /etc/ssl/ch-ca.pem\n"),
    ("sqlite:/var/lib/rocemeter/collector.db", ""),
])
def test_collect_store_without_db(tmp_path, store, keys):
    """docs/configuration.md [collect]: store (and its keys) names the store on its own, as
    rocemeter-collect.service reads the file; the summary names that store."""
    f = tmp_path / "c.conf"
    f.write_text("[collect]\nlisten = :4740\nstore = %s\n%stransport = tcp\n" % (store, keys))
    p = check(f)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "%s: accepted: [collect] on :4740 into %s over plain TCP\n" % (f, store)


@pytest.mark.parametrize("first,second", [
    ("db = /var/lib/rocemeter/y.db", "store = clickhouse:http://127.0.0.1:8123/?database=rocemeter"),
    ("store = clickhouse:http://127.0.0.1:8123/", "db = /var/lib/rocemeter/y.db"),
    ("db = /var/lib/rocemeter/y.db", "store = sqlite:/var/lib/rocemeter/y.db"),
])
def test_collect_db_and_store_refused(tmp_path, first, second):
    """docs/configuration.md [collect]: db is the older name of store = sqlite:FILE; a file with
    both names its store twice and is refused at the second, by check-config and by collect alike."""
    f = tmp_path / "c.conf"
    f.write_text("[collect]\nlisten = :4740\n%s\n%s\ntransport = tcp\n" % (first, second))
    key = second.split(" ")[0]
    want = "%s:4: %s: [collect] has both db and store: keep store (db = FILE is store = sqlite:FILE)" % (f, key)
    p = check(f)
    assert p.returncode == 2, p.stdout
    assert p.stderr == "rocemeter check-config: %s\n" % want, p.stderr
    c = subprocess.run([ROCEMETER, "collect", "--config", str(f)], capture_output=True, text=True, timeout=30)
    assert c.returncode == 2 and c.stderr == "rocemeter collect: %s\n" % want, c.stderr


@pytest.mark.parametrize("text,line,message", [
    ("store = mysql://h/\n", 3, "store: 'mysql://h/' is not sqlite:FILE or clickhouse:URL"),
    ("store = sqlite:\n", 3, "store: 'sqlite:' is not sqlite:FILE or clickhouse:URL"),
    ("db = x.db\nstore_credentials = /etc/c\n", None,
     "[collect] store_credentials and store_ca are for a clickhouse: store"),
])
def test_collect_store_refused(tmp_path, text, line, message):
    f = tmp_path / "c.conf"
    f.write_text("[collect]\nlisten = :4740\n%stransport = tcp\n" % text)
    p = check(f)
    where = "%s:%d: " % (f, line) if line else "%s: " % f
    assert p.returncode == 2 and p.stderr.startswith("rocemeter check-config: " + where + message), p.stderr


@pytest.mark.parametrize("text,line,message", [
    ("store = clickhouse:http://127.0.0.1:8123/?database=bad-name\n", 3,
     "store: 'clickhouse:http://127.0.0.1:8123/?database=bad-name' is not "
     "clickhouse:http[s]://HOST[:PORT][/][?database=DB] (DB: letters, digits, '_')"),
    ("store = clickhouse:http://user:pw@127.0.0.1:8123/\n", 3,
     "store: 'clickhouse:http://user:pw@127.0.0.1:8123/': no user or password in the URL"),
    ("store = clickhouse:http://127.0.0.1:8123/?database=rocemeter\ncollector_id = bad id!\n", 4,
     "collector_id: 'bad id!' is not 1..64 letters, digits, '.', '-', '_' or ':'"),
])
def test_collect_store_syntax_as_collect(tmp_path, text, line, message):
    """docs/configuration.md: check-config and collect never disagree: a store URL or a collector ID
    that collect refuses with exit 2 is refused by check-config too, with the file, line and reason
    (the syntax of docs/fleet.md; no server is contacted)."""
    f = tmp_path / "c.conf"
    f.write_text("[collect]\nlisten = :4740\n%stransport = tcp\n" % text)
    where = "%s:%d: " % (f, line)
    p = check(f)
    assert p.returncode == 2 and p.stderr.startswith("rocemeter check-config: " + where + message), p.stderr
    c = subprocess.run([ROCEMETER, "collect", "--config", str(f)], capture_output=True, text=True, timeout=30)
    assert c.returncode == 2 and c.stderr.startswith("rocemeter collect: " + where + message), c.stderr


@pytest.mark.parametrize("path", ["/tmp", "/dev/zero"])
def test_not_a_file(path):
    p = check(path)
    assert p.returncode == 2 and "%s: not a regular file" % path in p.stderr, p.stderr


def test_usage():
    p = subprocess.run([ROCEMETER, "check-config"], capture_output=True, text=True)
    assert p.returncode == 2 and "Usage: rocemeter check-config" in p.stderr
    p = subprocess.run([ROCEMETER, "check-config", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "Exit status: 0" in p.stdout


@pytest.mark.parametrize("text,line,reason", [
    (b"[collect]\nlisten = [::1]:4740\ndb = /tmp/x.db\ntransport = tcp\npeer_name = exp\0orter\n", 5,
     "a NUL byte at column 16 (a value would end there); remove it"),
    (b"[meter]\nwin\0dow = 10\nmax_contexts = 5\n", 2, "a NUL byte at column 4 (a value would end there); remove it"),
    (b"[meter]\nwindow = 10\nmax_contexts = 5\nwindow = 12\n", 4,
     "'window' given twice in [meter] (first at line 2); keep one"),
    (b"[meter]\nwindow = 10\n[meter]\nmax_contexts = 5\n", 3, "section [meter] given twice (first at line 1); merge the two"),
])
def test_nul_byte_and_given_twice_refused(tmp_path, text, line, reason):
    """A NUL byte (inih's strings end there: 'exp\\0orter' authorised "exp"; elsewhere the reason was
    "line longer than 198 characters"), a key or a section given twice (the last won, silently):
    exit 2, FILE:LINE and the reason."""
    f = tmp_path / "bad.conf"
    f.write_bytes(text)
    p = check(f)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr == "rocemeter check-config: %s:%d: %s\n" % (f, line, reason)
    assert p.stdout == ""


def test_collect_unit_open_files_hold_the_largest_limits(tmp_path):
    """rocemeter-collect.service's LimitNOFILE holds 2 descriptors per session (socket, journal
    file), one per handshake and 1024 of the collector's own at the largest max_sessions and
    max_handshakes that check-config accepts (docs/service.md); above them check-config refuses."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "systemd", "rocemeter-collect.service.in")) as f:
        (limit,) = re.findall(r"^LimitNOFILE=(\d+)$", f.read(), re.M)
    with open(os.path.join(root, "user", "common", "limits.h")) as f:
        h = f.read()
    most = {k: int(re.search(r"#define RM_%s_MAX\s+(\d+)u" % k, h).group(1)) for k in ("MAX_SESSIONS", "MAX_HANDSHAKES")}
    assert int(limit) >= 2 * most["MAX_SESSIONS"] + most["MAX_HANDSHAKES"] + 1024, (limit, most)
    with open(os.path.join(root, "docs", "service.md")) as f:
        assert f"LimitNOFILE={limit}" in f.read()
    for key, v in (("max_sessions", most["MAX_SESSIONS"]), ("max_handshakes", most["MAX_HANDSHAKES"])):
        f = tmp_path / f"{key}.conf"
        f.write_text(f"[collect]\nlisten = :4740\ndb = x.db\ntransport = tcp\n{key} = {v + 1}\n")
        assert check(f).returncode == 2
