# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The Debian package depends on what the binary reads at run time beyond its
shared libraries: D3 for `report --format html`. debian/control's Depends of
the binary package names the Debian package that owns the file report reads
(RM_HTML_D3_PATH of user/report/report_html.h), as dpkg says on this host.
Before, the package did not depend on libjs-d3 and `report --format html` of
an installed package failed for want of it. No root."""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def binary_depends():
    """The package names of the Depends field of the binary package rocemeter (versions and ORs aside)."""
    text = open(os.path.join(ROOT, "debian", "control")).read()
    stanza = text[text.index("\nPackage: rocemeter\n"):]
    field = re.search(r"^Depends:(.*(?:\n[ \t].*)*)", stanza, re.M).group(1)
    return {re.split(r"[\s(]", alt.strip())[0] for dep in field.split(",") for alt in dep.split("|") if alt.strip()}


def d3_path():
    text = open(os.path.join(ROOT, "user", "report", "report_html.h")).read()
    return re.search(r'#define RM_HTML_D3_PATH "([^"]+)"', text).group(1)


def test_depends_on_libjs_d3():
    assert "libjs-d3" in binary_depends()


@pytest.mark.skipif(shutil.which("dpkg") is None, reason="not a Debian host (dpkg)")
def test_libjs_d3_owns_the_file_report_reads():
    p = subprocess.run(["dpkg", "-S", d3_path()], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("%s is not installed here (make deps installs libjs-d3)" % d3_path())
    owners = {o.strip() for o in p.stdout.split(":", 1)[0].split(",")}
    assert owners <= binary_depends(), (owners, binary_depends())
