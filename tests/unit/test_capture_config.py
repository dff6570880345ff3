# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The [capture] section (user/common/capture_settings.c) through
`rocemeter check-config`: a good section passes; each bad one is refused
with FILE:LINE and the reason (docs/deployment.md, docs/configuration.md).
No root."""
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROCEMETER = os.environ.get("ROCEMETER", os.path.join(ROOT, os.environ.get("BUILD", "build"), "rocemeter"))

GOOD = """[meter]
provision_all = yes
[capture]
encapsulation = plain, erspan, vxlan, rspan
vxlan_port = 4789
rspan_vlan = 900
mirror_sessions = table
observation_point = 101 leaf1-eth1 erspan 192.0.2.1 7
observation_point = 102 leaf2-eth1 erspan 2001:db8::2 1023
observation_point = 103 vtep1 vxlan 5001
observation_point = 104 rspan-900 rspan 900
"""


def check(tmp_path, text):
    path = tmp_path / "c.ini"
    path.write_text(text)
    p = subprocess.run([ROCEMETER, "check-config", str(path)], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr, str(path)


def test_good_section(tmp_path):
    rc, out, _ = check(tmp_path, GOOD)
    assert rc == 0, out


BAD = [
    ("encapsulation = gre", 2, "encapsulation: 'gre' is not"),
    ("encapsulation =", 2, "encapsulation: empty"),
    ("vxlan_port = 4791", 2, "vxlan_port: 4791 is RoCEv2's port"),
    ("vxlan_port = 70000", 2, "vxlan_port"),
    ("rspan_vlan = 4095", 2, "rspan_vlan"),
    ("mirror_sessions = maybe", 2, "mirror_sessions: 'maybe'"),
    ("observation_point = 1 a erspan 192.0.2.1", 2, "erspan takes the outer source address and the session ID"),
    ("observation_point = 1 a erspan 192.0.2.x 7", 2, "'192.0.2.x' is not an IPv4 or IPv6 address"),
    ("observation_point = 1 a erspan 192.0.2.1 1024", 2, "session ID"),
    ("observation_point = 0 a vxlan 5", 2, "observation_point ID"),
    ("observation_point = 1 a vxlan 16777216", 2, "VNI"),
    ("observation_point = 1 a gre 5", 2, "'gre' is not erspan, vxlan or rspan"),
    ("observation_point = 1 a vxlan", 2, "is not ID NAME"),
    ("colour = blue", 2, "unknown key 'colour' in [capture]"),
]


@pytest.mark.parametrize("line,lineno,reason", BAD, ids=[b[0] for b in BAD])
def test_bad_key(tmp_path, line, lineno, reason):
    rc, out, path = check(tmp_path, "[capture]\n" + line + "\n")
    assert rc == 2
    assert "%s:%d: " % (path, lineno) in out and reason in out, out


SECTION = [
    ("encapsulation = erspan\nobservation_point = 1 a vxlan 5\n", 3, "observation_point a: vxlan is not in encapsulation"),
    ("encapsulation = rspan\n", 2, "rspan needs rspan_vlan"),
    ("encapsulation = rspan\nrspan_vlan = 10\nobservation_point = 1 a rspan 11\n", 4, "VLAN 11 is not rspan_vlan 10"),
    ("encapsulation = vxlan\nobservation_point = 1 a vxlan 5\nobservation_point = 1 b vxlan 6\n", 4,
     "ID 1 is also a's (line 3)"),
    ("encapsulation = erspan\nobservation_point = 1 a erspan 192.0.2.1 7\nobservation_point = 2 b erspan 192.0.2.1 7\n",
     4, "the same mirror session as a (line 3)"),
]


@pytest.mark.parametrize("text,lineno,reason", SECTION, ids=[s[2][:40] for s in SECTION])
def test_bad_section(tmp_path, text, lineno, reason):
    rc, out, path = check(tmp_path, "[capture]\n" + text)
    assert rc == 2
    assert "%s:%d: " % (path, lineno) in out and reason in out, out


def test_too_many_points(tmp_path):
    text = "[capture]\nencapsulation = vxlan\n" + "".join(
        "observation_point = %d p%d vxlan %d\n" % (i + 1, i, i) for i in range(256))
    rc, out, path = check(tmp_path, text)
    assert rc == 2 and "%s:258: observation_point: at most 255 lines" % path in out, out


# A NAME from [capture] follows the collector's rule for an exporter's name (docs/collector.md "Observation
# point names"): UTF-8 without control characters (C0, DEL, C1) or bidirectional overrides and isolates, at most
# 63 octets. The message shows the name escaped, never the raw octets (the terminal reading it is safe).
BAD_NAMES = [
    (b"leaf\x1b[31mred", "a control character", "leaf\\x1B[31mred"),
    (b"leaf\x7f", "a control character", "leaf\\x7F"),
    ("leaf\u009b31m".encode(), "a control character", "leaf\\u009B31m"),
    ("leaf\u202eevil".encode(), "a bidirectional override", "leaf\\u202Eevil"),
    ("leaf\u2066x".encode(), "a bidirectional override", "leaf\\u2066x"),
    (b"leaf\xff\xfe", "not valid UTF-8", "leaf\\xFF\\xFE"),
    (b"leaf\xc0\xaf", "not valid UTF-8", "leaf\\xC0\\xAF"),  # an overlong '/'
    (b"leaf\xed\xa0\x80", "not valid UTF-8", "leaf\\xED\\xA0\\x80"),  # a surrogate
    (b"x" * 64, "longer than 63 bytes", "x" * 64),
]


@pytest.mark.parametrize("name,reason,shown", BAD_NAMES, ids=[repr(b[0][:12]) for b in BAD_NAMES])
def test_bad_name(tmp_path, name, reason, shown):
    path = tmp_path / "c.ini"
    path.write_bytes(b"[capture]\nencapsulation = vxlan\nobservation_point = 1 " + name + b" vxlan 5\n")
    p = subprocess.run([ROCEMETER, "check-config", str(path)], capture_output=True, timeout=30)
    out = (p.stdout + p.stderr).decode("ascii")  # escaped: ASCII only
    assert p.returncode == 2
    assert "%s:3: " % path in out and reason in out and "'%s'" % shown in out, out


def test_good_names(tmp_path):
    """63 octets, and UTF-8 beyond ASCII (a name in Greek, an emoji): accepted."""
    text = "[capture]\nencapsulation = vxlan\nobservation_point = 1 %s vxlan 5\nobservation_point = 2 %s vxlan 6\n" % (
        "y" * 63, "φύλλο-1\U0001f600")
    rc, out, _ = check(tmp_path, text)
    assert rc == 0, out
