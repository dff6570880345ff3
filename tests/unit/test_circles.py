"""scripts/check-circles: calls between the files of one folder flow one way
but for the circles docs/architecture.md allows by name. Each test builds a
small tree (sources compiled with cc, the page's table written for it) so
that the calls are known without reading the check; the last ones run the
check on the tree's own objects."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
CHECK = os.path.join(ROOT, 'scripts', 'check-circles')
BUILD = os.path.join(ROOT, os.environ.get('BUILD', 'build'))
CC = shutil.which('cc') or shutil.which('gcc')

PAGE = """# Architecture

## Calls within a folder

| folder | files that may call each other | why |
|---|---|---|
%s
## Size and layout
"""


def run(root, build=None):
    args = [CHECK, '--root', str(root)]
    if build:
        args += ['--build', str(build)]
    return subprocess.run(args, capture_output=True, text=True)


def make_tree(tmp, sources, allowed=()):
    """sources: {"user/x/a.c": C text}; allowed: rows (folder, [files]) of the page's table."""
    if not CC:
        pytest.skip('no C compiler')
    for rel, text in sources.items():
        src = tmp / rel
        obj = tmp / 'build' / (rel[:-2] + '.o')
        src.parent.mkdir(parents=True, exist_ok=True)
        obj.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(text)
        subprocess.run([CC, '-c', '-o', str(obj), str(src)], check=True)
    rows = ''.join('| `%s` | %s | a reason |\n' % (folder, ', '.join('`%s`' % f for f in files))
                   for folder, files in allowed)
    (tmp / 'docs').mkdir(exist_ok=True)
    (tmp / 'docs' / 'architecture.md').write_text(PAGE % rows)
    return tmp


def calls(*names):
    """A C file that defines its own function and calls the named ones."""
    decls = ''.join('void %s(void);\n' % n for n in names)
    body = ''.join('\t%s();\n' % n for n in names)
    return decls, body


def source(own, *callees):
    decls, body = calls(*callees)
    return '%svoid %s(void)\n{\n%s}\n' % (decls, own, body)


def test_one_way_passes(tmp_path):
    t = make_tree(tmp_path, {'user/x/a.c': source('a_f', 'b_f'), 'user/x/b.c': source('b_f')})
    r = run(t)
    assert r.returncode == 0, r.stdout
    assert 'ok 1 - user/x' in r.stdout and 'not ok' not in r.stdout


def test_planted_circle_fails_and_names_it(tmp_path):
    t = make_tree(tmp_path, {'user/x/a.c': source('a_f', 'b_f'), 'user/x/b.c': source('b_f', 'a_f')})
    r = run(t)
    assert r.returncode == 1
    assert 'not ok 1 - user/x' in r.stdout
    assert 'circle of calls: user/x/a.c, user/x/b.c' in r.stdout
    assert 'user/x/a.c calls user/x/b.c (b_f)' in r.stdout
    assert 'user/x/b.c calls user/x/a.c (a_f)' in r.stdout


def test_circle_through_three_files(tmp_path):
    t = make_tree(tmp_path, {
        'user/x/a.c': source('a_f', 'b_f'),
        'user/x/b.c': source('b_f', 'c_f'),
        'user/x/c.c': source('c_f', 'a_f'),
        'user/x/d.c': source('d_f', 'a_f'),  # calls into the circle, is not part of it
    })
    r = run(t)
    assert r.returncode == 1
    assert 'circle of calls: user/x/a.c, user/x/b.c, user/x/c.c:' in r.stdout
    assert 'user/x/c.c calls user/x/a.c (a_f)' in r.stdout
    assert 'user/x/d.c' not in r.stdout


def test_data_reference_closes_a_circle(tmp_path):
    # A table the other file reads is a reference like a call.
    t = make_tree(tmp_path, {
        'user/x/a.c': 'extern const int b_table[];\nint a_f(void)\n{\n\treturn b_table[0];\n}\n',
        'user/x/b.c': 'int a_f(void);\nconst int b_table[] = { 1 };\nint b_f(void)\n{\n\treturn a_f();\n}\n',
    })
    r = run(t)
    assert r.returncode == 1 and 'user/x/a.c calls user/x/b.c (b_table)' in r.stdout


def test_subfolder_belongs_to_its_folder(tmp_path):
    t = make_tree(tmp_path, {'user/x/a.c': source('a_f', 'c_f'), 'user/x/sub/c.c': source('c_f', 'a_f')})
    r = run(t)
    assert r.returncode == 1
    assert 'not ok 1 - user/x' in r.stdout and 'circle of calls: user/x/a.c, user/x/sub/c.c' in r.stdout


def test_calls_between_folders_are_not_its_business(tmp_path):
    # Which folder may use which is scripts/check-layers' rule (includes), not this one's.
    t = make_tree(tmp_path, {'user/x/a.c': source('a_f', 'b_f'), 'user/y/b.c': source('b_f', 'a_f')})
    assert run(t).returncode == 0


def test_allowed_by_name_passes(tmp_path):
    t = make_tree(tmp_path, {'user/x/a.c': source('a_f', 'b_f'), 'user/x/b.c': source('b_f', 'a_f')},
                  allowed=[('user/x/', ['a.c', 'b.c'])])
    r = run(t)
    assert r.returncode == 0, r.stdout


def test_allowance_covers_only_its_files(tmp_path):
    # a <-> b allowed; a circle through c besides it still fails, named without the allowed call.
    t = make_tree(tmp_path, {
        'user/x/a.c': source('a_f', 'b_f', 'c_f'),
        'user/x/b.c': source('b_f', 'a_f'),
        'user/x/c.c': source('c_f', 'a_f'),
    }, allowed=[('user/x/', ['a.c', 'b.c'])])
    r = run(t)
    assert r.returncode == 1
    assert 'circle of calls: user/x/a.c, user/x/c.c:' in r.stdout
    assert 'user/x/a.c calls user/x/b.c' not in r.stdout


def test_allowance_of_another_folder_does_not_count(tmp_path):
    t = make_tree(tmp_path, {'user/x/a.c': source('a_f', 'b_f'), 'user/x/b.c': source('b_f', 'a_f')},
                  allowed=[('user/y/', ['a.c', 'b.c'])])
    r = run(t)
    assert r.returncode == 1 and 'circle of calls: user/x/a.c, user/x/b.c' in r.stdout


def test_stale_allowance_fails(tmp_path):
    t = make_tree(tmp_path, {'user/x/a.c': source('a_f', 'b_f'), 'user/x/b.c': source('b_f')},
                  allowed=[('user/x/', ['a.c', 'b.c'])])
    r = run(t)
    assert r.returncode == 1
    assert 'allowed circle user/x/a.c, user/x/b.c is not a circle of calls' in r.stdout


def test_no_objects_fails(tmp_path):
    (tmp_path / 'user' / 'x').mkdir(parents=True)
    (tmp_path / 'user' / 'x' / 'a.c').write_text('int a;\n')
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'architecture.md').write_text(PAGE % '')
    r = run(tmp_path)
    assert r.returncode != 0 and 'build first' in r.stderr


def built():
    if not os.path.exists(os.path.join(BUILD, 'user', 'collect', 'collector.o')):
        pytest.skip('the tree is not built (make)')


def test_tree_follows_the_rule():
    built()
    r = run(ROOT)
    assert r.returncode == 0, r.stdout
    assert 'not ok' not in r.stdout


def test_tree_without_the_store_allowances_fails(tmp_path):
    # The page's own table, less its rows for user/store/: the SQLite queue and flush call each other.
    built()
    (tmp_path / 'docs').mkdir()
    with open(os.path.join(ROOT, 'docs', 'architecture.md')) as f:
        page = [line for line in f if not line.startswith('| `user/store/` |')]
    (tmp_path / 'docs' / 'architecture.md').write_text(''.join(page))
    os.symlink(os.path.abspath(os.path.join(ROOT, 'user')), tmp_path / 'user')
    r = run(tmp_path, BUILD)
    assert r.returncode == 1
    assert 'not ok' in r.stdout and '- user/store' in r.stdout
    assert 'user/store/sqlite/queue.c calls user/store/sqlite/flush.c' in r.stdout
