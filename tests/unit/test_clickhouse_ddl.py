"""docs/clickhouse/cluster.sql is scripts/clickhouse-cluster-ddl's output
from single.sql, the one source of the fleet store's tables: every table of
single.sql, column for column, as NAME_local with a Distributed NAME over it."""
import os
import re
import subprocess

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
GEN = os.path.join(ROOT, 'scripts', 'clickhouse-cluster-ddl')
SINGLE = os.path.join(ROOT, 'docs', 'clickhouse', 'single.sql')
CLUSTER = os.path.join(ROOT, 'docs', 'clickhouse', 'cluster.sql')


def tables(sql):
    """{name: the statement's text after its name}, comments left out."""
    sql = ''.join(l for l in sql.splitlines(True) if not l.startswith('--'))
    return dict(re.findall(r'CREATE TABLE IF NOT EXISTS ([a-z_]+) (.*?);', sql, re.S))


def test_cluster_sql_is_generated_from_single_sql():
    out = subprocess.run([GEN, SINGLE], capture_output=True, text=True, check=True).stdout
    with open(CLUSTER) as f:
        assert f.read() == out, 'docs/clickhouse/cluster.sql differs from scripts/clickhouse-cluster-ddl output'


def test_cluster_has_every_table_of_single():
    with open(SINGLE) as f:
        single = tables(f.read())
    with open(CLUSTER) as f:
        cluster = tables(f.read())
    assert single
    for name, body in single.items():
        assert cluster[name + '_local'] == body
        assert cluster[name].startswith('AS %s_local\nENGINE = Distributed(' % name)
    assert len(cluster) == 2 * len(single)


def test_a_table_edited_in_single_only_fails(tmp_path):
    with open(SINGLE) as f:
        edited = f.read().replace(' gaps UInt64,', ' gaps UInt64, gaps2 UInt64,')
    (tmp_path / 'single.sql').write_text(edited)
    out = subprocess.run([GEN, str(tmp_path / 'single.sql')], capture_output=True, text=True, check=True).stdout
    with open(CLUSTER) as f:
        assert f.read() != out
    assert 'gaps2 UInt64' in tables(out)['epochs_local']
