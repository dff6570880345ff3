"""scripts/check-format and scripts/check-functions: the tree is laid out by
its .clang-format and has no function over the limit of docs/architecture.md,
and each check fails, naming the file, on a file that breaks its rule."""
import os
import re
import shutil

from procs import run_check  # tests/lib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
FORMAT = os.path.join(ROOT, 'scripts', 'check-format')
FUNCTIONS = os.path.join(ROOT, 'scripts', 'check-functions')
run = run_check  # run(check, root, *args)


def test_tree_is_formatted():
    r = run(FORMAT, ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'not ok' not in r.stdout


def test_tree_has_no_long_function():
    r = run(FUNCTIONS, ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'not ok' not in r.stdout


def small_tree(tmp_path, name, text):
    tmp_path.mkdir(parents=True, exist_ok=True)
    shutil.copy(os.path.join(ROOT, '.clang-format'), tmp_path / '.clang-format')
    path = tmp_path / 'user' / 'x' / name
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_unformatted_file_fails(tmp_path):
    small_tree(tmp_path, 'a.c', 'int f(void)\n{\n\treturn 0;\n}\n')
    assert run(FORMAT, tmp_path).returncode == 0
    small_tree(tmp_path / 'b', 'a.c', 'int f(void) {\n  return 0;\n}\n')
    r = run(FORMAT, tmp_path / 'b')
    assert r.returncode == 1
    assert 'not ok 1 - user/x' in r.stdout and 'user/x/a.c:1: differs from .clang-format' in r.stdout


def function_of(lines):
    """A function whose name line and closing brace are `lines` apart (the checker's measure)."""
    body = ''.join('\tn += %d;\n' % i for i in range(lines - 3))
    return 'int f(int n)\n{\n%s\treturn n;\n}\n' % body


def test_function_at_the_limit_passes_and_one_more_line_fails(tmp_path):
    small_tree(tmp_path / 'ok', 'a.c', function_of(150))
    r = run(FUNCTIONS, tmp_path / 'ok')
    assert r.returncode == 0, r.stdout
    small_tree(tmp_path / 'long', 'a.c', 'static int g(void)\n{\n\treturn 1;\n}\n\n' + function_of(151))
    r = run(FUNCTIONS, tmp_path / 'long')
    assert r.returncode == 1
    assert 'user/x/a.c:6: f() is 151 lines (limit 150)' in r.stdout


def test_signature_over_several_lines_counts_from_the_name(tmp_path):
    text = 'static int\nh(int a,\n  int b)\n{\n' + ''.join('\ta += %d;\n' % i for i in range(200)) + '\treturn a + b;\n}\n'
    small_tree(tmp_path, 'a.c', text)
    r = run(FUNCTIONS, tmp_path)
    assert r.returncode == 1 and 'user/x/a.c:2: h() is 204 lines' in r.stdout


def test_long_function_in_a_test_bpf_program_fails(tmp_path):
    path = tmp_path / 'selftests' / 'progs' / 'a.bpf.c'
    path.parent.mkdir(parents=True)
    path.write_text(function_of(151))
    r = run(FUNCTIONS, tmp_path)
    assert r.returncode == 1
    assert 'not ok 1 - selftests/progs' in r.stdout and 'selftests/progs/a.bpf.c:1: f() is 151 lines' in r.stdout


# Reads of a clock: every one in userspace goes through user/common/clock.c, whose names say the clock.
CLOCK_READ = re.compile(r'\b(clock_gettime|gettimeofday)\s*\(|\btime\s*\(\s*(NULL|&)')


def test_clocks_are_read_only_in_the_clock_module():
    found = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, 'user')):
        for fn in files:
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, ROOT)
            if not fn.endswith(('.c', '.h')) or rel == os.path.join('user', 'common', 'clock.c'):
                continue
            for n, line in enumerate(open(path), 1):
                if CLOCK_READ.search(line):
                    found.append('%s:%d: %s' % (rel, n, line.strip()))
    assert not found, 'clocks read outside user/common/clock.c:\n' + '\n'.join(found)


# qsort(3) with a NULL base is undefined even for 0 elements (UBSan reports it): rm_sort() guards it.
QSORT = re.compile(r'\bqsort\s*\(')


def test_qsort_only_through_rm_sort():
    found = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, 'user')):
        for fn in files:
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, ROOT)
            if not fn.endswith(('.c', '.h')) or rel == os.path.join('user', 'common', 'sort.h'):
                continue
            for n, line in enumerate(open(path), 1):
                if QSORT.search(line):
                    found.append('%s:%d: %s' % (rel, n, line.strip()))
    assert not found, 'qsort() outside user/common/sort.h (use rm_sort()):\n' + '\n'.join(found)


# A walk over a BPF map's keys goes through the one iterator (user/common/map_iter.h).
NEXT_KEY = re.compile(r'\bbpf_map_get_next_key\s*\(')


def test_map_keys_walked_only_through_the_iterator():
    found = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, 'user')):
        for fn in files:
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, ROOT)
            if not fn.endswith(('.c', '.h')) or rel == os.path.join('user', 'common', 'map_iter.h'):
                continue
            for n, line in enumerate(open(path), 1):
                if NEXT_KEY.search(line):
                    found.append('%s:%d: %s' % (rel, n, line.strip()))
    assert not found, 'bpf_map_get_next_key() outside user/common/map_iter.h (use rm_map_iter_next()):\n' + \
        '\n'.join(found)
