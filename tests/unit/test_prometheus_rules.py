# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""docs/prometheus/rocemeter-rules.yml, the alerting and recording rules
rocemeter ships: `promtool check rules` accepts them, `promtool test rules`
passes tests/unit/rocemeter-rules.test.yml, every alert has a test in which
it fires and one in which it stays silent, and every rocemeter metric the
rules name is one docs/metrics.md lists. Needs Debian's prometheus package
(promtool), no root."""
import os
import re
import shutil
import subprocess

import pytest
import yaml

import rocetest

RULES = os.path.join(rocetest.ROOT, "docs", "prometheus", "rocemeter-rules.yml")
TESTS = os.path.join(rocetest.ROOT, "tests", "unit", "rocemeter-rules.test.yml")
DOC = os.path.join(rocetest.ROOT, "docs", "metrics.md")

pytestmark = pytest.mark.skipif(not shutil.which("promtool"), reason="needs promtool (Debian's prometheus package)")


def promtool(*args):
    p = subprocess.run(["promtool", *args], capture_output=True, text=True, cwd=os.path.dirname(TESTS))
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def rules():
    with open(RULES) as f:
        return [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]


def test_rules_are_valid():
    promtool("check", "rules", RULES)


def test_promtool_unit_tests_pass():
    assert "SUCCESS" in promtool("test", "rules", TESTS)


def test_every_alert_fires_and_stays_silent_in_a_test():
    with open(TESTS) as f:
        doc = yaml.safe_load(f)
    fired, silent = set(), set()
    for t in doc["tests"]:
        for a in t.get("alert_rule_test", []):
            (fired if a.get("exp_alerts") else silent).add(a["alertname"])
    alerts = {r["alert"] for r in rules() if "alert" in r}
    assert alerts, RULES
    assert alerts - fired == set(), "alerts never tested firing"
    assert alerts - silent == set(), "alerts never tested silent"


def test_the_rules_name_only_documented_metrics():
    with open(DOC) as f:
        documented = set(re.findall(r"`(rocemeter_\w+)`", f.read()))
    named = set()
    for r in rules():
        named |= set(re.findall(r"\b(rocemeter_\w+)", r["expr"]))
    assert named and named - documented == set()
