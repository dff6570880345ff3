"""scripts/check-layers: the include rule of docs/architecture.md holds for
the tree, and each kind of violation makes the check fail with the file and
line named."""
import functools
import os
import shutil

import pytest

from procs import run_check  # tests/lib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
CHECK = os.path.join(ROOT, 'scripts', 'check-layers')
run = functools.partial(run_check, CHECK)  # run(root): the check over the tree at root


@pytest.fixture
def tree(tmp_path):
    for d in ('user', 'bpf', 'include'):
        shutil.copytree(os.path.join(ROOT, d), tmp_path / d)
    (tmp_path / 'docs').mkdir()
    shutil.copy(os.path.join(ROOT, 'docs', 'architecture.md'), tmp_path / 'docs')
    return tmp_path


def test_tree_follows_the_rule():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout
    assert 'not ok' not in r.stdout


def test_copy_follows_the_rule(tree):
    assert run(str(tree)).returncode == 0


def append(path, text):
    with open(path, 'a') as f:
        f.write(text)


def test_collector_including_the_meter_fails(tree):
    src = tree / 'user' / 'collect' / 'session.c'
    n = sum(1 for _ in open(src)) + 1
    append(src, '#include "meter/meter.h"\n')
    r = run(str(tree))
    assert r.returncode == 1
    assert 'not ok' in r.stdout and '- user/collect' in r.stdout
    assert 'user/collect/session.c:%d: "meter/meter.h" is in user/meter' % n in r.stdout


def test_store_including_the_collectors_loop_fails(tree):
    # One way: rules < store < collect; the store never reaches up to the loop.
    append(tree / 'user' / 'store' / 'sqlite' / 'flush.c', '#include "collect/collector.h"\n')
    r = run(str(tree))
    assert r.returncode == 1 and 'which user/store may not include' in r.stdout


def test_rules_including_the_store_fails(tree):
    append(tree / 'user' / 'rules' / 'collector_rules.c', '#include "store/backend.h"\n')
    r = run(str(tree))
    assert r.returncode == 1 and 'which user/rules may not include' in r.stdout


def test_report_including_the_collectors_loop_fails(tree):
    # report and the collector's loop are two rooms over the store: neither includes the other.
    append(tree / 'user' / 'report' / 'cmd_report.c', '#include "collect/collector.h"\n')
    r = run(str(tree))
    assert r.returncode == 1 and '"collect/collector.h" is in user/collect, which user/report may not include' \
        in r.stdout


def test_capture_including_the_census_fails(tree):
    # Capture reading is below the census and replay, which read through it.
    append(tree / 'user' / 'capture' / 'capture.c', '#include "census/census.h"\n')
    r = run(str(tree))
    assert r.returncode == 1 and 'which user/capture may not include' in r.stdout


def test_file_in_a_subfolder_belongs_to_its_layer(tree):
    # user/store/sqlite/ is layer user/store: its includes are checked by that row
    src = tree / 'user' / 'store' / 'sqlite' / 'store.c'
    n = sum(1 for _ in open(src)) + 1
    append(src, '#include "export/ipfix.h"\n')
    r = run(str(tree))
    assert r.returncode == 1
    assert 'not ok' in r.stdout and '- user/store' in r.stdout
    assert 'user/store/sqlite/store.c:%d: "export/ipfix.h" is in user/export, which user/store may not include' \
        % n in r.stdout


def test_subfolder_including_its_sibling_passes(tree):
    # store/clickhouse/ and store/sqlite/ are one layer: an include between them is no violation
    append(tree / 'user' / 'store' / 'sqlite' / 'store.c', '#include "store/clickhouse/clickhouse.h"\n')
    assert run(str(tree)).returncode == 0


def test_common_including_export_fails(tree):
    append(tree / 'user' / 'common' / 'config.h', '#include "export/ipfix.h"\n')
    r = run(str(tree))
    assert r.returncode == 1 and 'which user/common may not include' in r.stdout


def test_bpf_including_userspace_fails(tree):
    append(tree / 'bpf' / 'meter.bpf.c', '#include "../user/common/config.h"\n')
    r = run(str(tree))
    assert r.returncode == 1 and 'which bpf may not include' in r.stdout


def test_test_bpf_program_including_userspace_fails(tree):
    # selftests/progs/, the tests' BPF programs, is a layer of its own: vmlinux and bpf/'s parser.
    shutil.copytree(os.path.join(ROOT, 'selftests', 'progs'), tree / 'selftests' / 'progs')
    assert run(str(tree)).returncode == 0
    src = tree / 'selftests' / 'progs' / 'baseline.bpf.c'
    n = sum(1 for _ in open(src)) + 1
    append(src, '#include "meter/meter.h"\n')
    r = run(str(tree))
    assert r.returncode == 1 and '- selftests/progs' in r.stdout
    assert ('selftests/progs/baseline.bpf.c:%d: "meter/meter.h" is in user/meter, which selftests/progs may not '
            'include' % n) in r.stdout


def test_file_directly_in_user_fails(tree):
    (tree / 'user' / 'helper.c').write_text('int x;\n')
    r = run(str(tree))
    assert r.returncode == 1 and 'only main.c stands directly in user/' in r.stdout


def test_folder_missing_from_the_table_fails(tree):
    (tree / 'user' / 'metrics').mkdir()
    (tree / 'user' / 'metrics' / 'metrics.c').write_text('#include "common/config.h"\n')
    r = run(str(tree))
    assert r.returncode == 1 and 'user/metrics: folder not in docs/architecture.md' in r.stdout


def test_skeleton_of_another_program_fails(tree):
    append(tree / 'user' / 'collect' / 'collector_rules.c', '#include "meter.skel.h"\n')
    r = run(str(tree))
    assert r.returncode == 1 and '"meter.skel.h" is in user/meter' in r.stdout
