# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""docs/meter.md "Statistics" against the one list of the meter's
statistics, RM_STATS in include/rocemeter/meter.h (which the enum, the
names of `rocemeter status` and the descriptions expand): the table names
every statistic, in the map's order, with the same description."""
import os
import re

import rocetest

DOC = os.path.join(rocetest.ROOT, "docs", "meter.md")


def doc_table():
    with open(DOC) as f:
        text = f.read()
    section = text.split("## Statistics", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \| (.*?) \|$", section, re.M)


def test_doc_lists_every_statistic_in_order():
    assert [name for name, _ in doc_table()] == [name for _, name in rocetest.stat_table()]


def test_doc_descriptions_are_the_headers():
    want = {name: desc for _, name, desc in rocetest.stat_table(descriptions=True)}
    for name, desc in doc_table():
        assert desc == want[name], name

