"""scripts/check-commits: in a scratch repository, it passes the commits after the base that follow
CONTRIBUTING.md "Commits" and fails, naming the commit and the reason, on a subject that is not
`area: summary`, on one over 72 characters and on a message without a body; the base and the commits
before it are never checked; it skips outside a git checkout and when the base is missing."""
import os
import subprocess

import pytest

from procs import run_check  # tests/lib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
CHECK = os.path.join(ROOT, 'scripts', 'check-commits')
GOOD = 'store: one table of columns\n\nThe readers and the DDL derive from it.\n'
ENV = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@example.net', GIT_COMMITTER_NAME='t',
           GIT_COMMITTER_EMAIL='t@example.net', GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM='1')


def git(repo, *args):
    return subprocess.run(['git', '-C', str(repo)] + list(args), capture_output=True, text=True, env=ENV,
                          check=True).stdout.strip()


def commit(repo, message):
    """A commit with exactly this message (git's cleanup off); its hash."""
    git(repo, 'commit', '-q', '--allow-empty', '--cleanup=verbatim', '-m', message)
    return git(repo, 'rev-parse', 'HEAD')


def check(repo, base, **env):
    return run_check(CHECK, repo, '--base', base, env=dict(ENV, **env))


@pytest.fixture
def repo(tmp_path):
    """A repository whose base commit breaks the rule (it predates it): (path, the base's hash)."""
    git(tmp_path, 'init', '-q')
    commit(tmp_path, 'An old commit before the rule, with a subject far longer than seventy-two characters')
    return tmp_path, commit(tmp_path, 'Base')


def test_good_commits_pass(repo):
    path, base = repo
    commit(path, GOOD)
    commit(path, 'docs/benchmarks.md,tests: the reference only\n\nThe dated runs are history.\n')
    r = check(path, base)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ['ok 1 - %s store: one table of columns' % git(path, 'rev-parse', 'HEAD~1')[:12],
                                     'ok 2 - %s docs/benchmarks.md,tests: the reference only'
                                     % git(path, 'rev-parse', 'HEAD')[:12], '1..2']


@pytest.mark.parametrize('message, reason', [
    ('Store: one table of columns\n\nWhy.\n', 'not `area: summary`'),
    ('store one table of columns\n\nWhy.\n', 'not `area: summary`'),
    ('store:one table of columns\n\nWhy.\n', 'not `area: summary`'),
    ('store, meter: two areas with a space\n\nWhy.\n', 'not `area: summary`'),
    ('store: ' + 'x' * 66 + '\n\nWhy.\n', 'the subject is 73 characters (limit 72)'),
    ('store: one table of columns\n', 'no body'),
    ('store: one table of columns\n\n\n', 'no body'),
    ('store: one table of columns\nWhy, on the next line.\n', 'no blank line after the subject'),
])
def test_bad_commit_fails(repo, message, reason):
    path, base = repo
    commit(path, GOOD)
    sha = commit(path, message)
    commit(path, GOOD)
    r = check(path, base)
    assert r.returncode == 1, r.stdout
    lines = r.stdout.splitlines()
    assert lines[0].startswith('ok 1 - ') and lines[-2].startswith('ok 3 - ') and lines[-1] == '1..3', lines
    assert lines[1].startswith('not ok 2 - %s ' % sha[:12]), lines
    assert any(reason in line for line in lines[2:-2]), lines


def test_subject_of_72_characters_passes(repo):
    path, base = repo
    commit(path, 'store: ' + 'x' * 65 + '\n\nWhy.\n')
    r = check(path, base)
    assert r.returncode == 0, r.stdout


def test_merge_commits_are_not_checked(repo):
    path, base = repo
    git(path, 'checkout', '-q', '-b', 'side')
    commit(path, 'meter: a side change\n\nWhy.\n')
    git(path, 'checkout', '-q', '-')
    commit(path, GOOD)
    git(path, 'merge', '-q', '--no-ff', '-m', 'Merge branch side', 'side')
    r = check(path, base)
    assert r.returncode == 0, r.stdout
    assert r.stdout.splitlines()[-1] == '1..2'


def test_skips_outside_a_checkout(tmp_path):
    r = check(tmp_path, 'HEAD', GIT_CEILING_DIRECTORIES=str(tmp_path.parent))  # git looks no further up
    assert r.returncode == 0 and r.stdout.startswith('1..0 # SKIP not a git checkout'), r.stdout


def test_skips_when_the_base_is_missing(repo):
    path, _ = repo
    commit(path, 'bad subject without a body')
    r = check(path, '0123456789abcdef0123456789abcdef01234567')
    assert r.returncode == 0 and r.stdout.startswith('1..0 # SKIP the base 0123456789ab is not in this history'), \
        r.stdout

