# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""[SEQOBS] "Verification Examples" as data: the PSNs of one epoch at W = 4 and the counters the
text gives for them while the epoch is open (closing it turns the pending positions into abandoned
ones). The tests that meter these PSNs (live, replay) and the ones that send these counters to the
collector take them from here. Not a test file itself."""

WINDOW = 4
ZERO = dict(requests=0, skipped=0, filled=0, expired=0, abandoned=0, pending=0, repeated=0, late=0)


def _example(psns, **counters):
    return tuple(psns), dict(ZERO, **counters)


# number -> (PSNs, counters), in the order of the text.
EXAMPLES = {
    1: _example([100, 102, 101, 103, 102], requests=5, skipped=1, filled=1, repeated=1),
    2: _example([100, 99, 100], requests=3, late=1, repeated=1),  # 99 precedes S: unclassified late
    3: _example([100, 102, 106], requests=3, skipped=4, expired=1, pending=3),
    4: _example([16777214, 16777215, 0, 1], requests=4),  # across the wrap, nothing skipped
}
