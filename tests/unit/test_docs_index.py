"""docs/README.md is the documentation's index: it lists every page of docs/ once, in a table of
links, and nothing else; and the relative links of the entry pages (README.md, CONTRIBUTING.md)
and of every page of docs/ name files that exist, so that a page moved or renamed is caught."""
import glob
import os
import re

from procs import ROOT  # tests/lib

DOCS = os.path.join(ROOT, "docs")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def pages():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(DOCS, "*.md")) if not p.endswith("README.md"))


def test_index_lists_every_page_once():
    text = open(os.path.join(DOCS, "README.md")).read()
    rows = re.findall(r"^\| \[([\w.-]+)\]\(([\w.-]+)\) \| (.+) \|$", text, re.M)
    listed = [target for name, target, _ in rows]
    assert all(name == target for name, target, _ in rows), rows
    assert sorted(listed) == pages(), (listed, pages())
    assert len(set(listed)) == len(listed), listed
    assert listed[0] == "architecture.md"


def test_relative_links_resolve():
    files = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "CONTRIBUTING.md")]
    files += sorted(glob.glob(os.path.join(DOCS, "*.md")))
    broken = []
    for path in files:
        for n, line in enumerate(open(path), 1):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue  # a URL, or an anchor of the same page
                rel = target.split("#", 1)[0]
                if not os.path.exists(os.path.join(os.path.dirname(path), rel)):
                    broken.append("%s:%d: %s" % (os.path.relpath(path, ROOT), n, target))
    assert not broken, "links to no file:\n" + "\n".join(broken)
