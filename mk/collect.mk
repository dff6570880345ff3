# user/collect/: `rocemeter collect` (IPFIX over TLS 1.3 -> decoder ->
# collector rules -> SQLite store) and `rocemeter report`.
ROCEMETER_SRCS += user/collect/ipfix_decode.c user/collect/collector_rules.c user/collect/pool.c user/collect/store.c \
                  user/collect/backend.c user/collect/chstore.c user/collect/store_rows.c \
                  user/collect/budget.c user/collect/clickhouse.c user/collect/store_spec.c user/collect/store_read.c \
                  user/collect/store_read_sqlite.c user/collect/store_read_clickhouse.c \
                  user/collect/collector.c user/collect/accept.c user/collect/session.c user/collect/collector_metrics.c \
                  user/collect/seq_points.c \
                  user/collect/cmd_collect.c user/collect/cmd_report.c
# ClickHouse's HTTP interface (docs/fleet.md); the DDL files are compiled in (.incbin).
LDLIBS         += -lcurl
$(BUILD)/user/collect/clickhouse.o: docs/clickhouse/single.sql docs/clickhouse/cluster.sql
# The store URL, credentials file and DDL statements without a server.
CHECK_PROGS    += $(BUILD)/tests/unit/test_clickhouse
CHECK_PROGS    += $(BUILD)/tests/unit/test_collector_rules $(BUILD)/tests/unit/test_ipfix_decode
# The slab pool of the rules' epochs.
CHECK_PROGS    += $(BUILD)/tests/unit/test_pool
# The memory budget and its charges by the rules (epochs) and the decoder (Templates).
CHECK_PROGS    += $(BUILD)/tests/unit/test_budget
# The store interface: the store chosen by its spec, SQLite writes through it.
CHECK_PROGS    += $(BUILD)/tests/unit/test_backend
# What the store holds for its next transaction, charged to the same budget.
CHECK_PROGS    += $(BUILD)/tests/unit/test_store_budget
# The packed form of settled epochs (epoch_archive) byte for byte, and the epochs view over it.
CHECK_PROGS    += $(BUILD)/tests/unit/test_store_archive
CHECK_SCRIPTS  += selftests/system/test_collector.py
# Its sequence counters per observation point and the epochs counted when they settle (/metrics).
CHECK_SCRIPTS  += selftests/system/test_collector_metrics.py
# Availability and bounded resources on a hostile network (docs/collector.md).
CHECK_SCRIPTS  += selftests/system/test_collector_limits.py
# The database on a full tmpfs (root), write-locked by another process, and
# a restart after kill -9.
CHECK_SCRIPTS  += selftests/system/test_collector_store.py
# The ClickHouse store (tests/lib/clickhouse.py servers): the same outcomes as SQLite,
# two shards and two collectors, an outage under load.
CHECK_SCRIPTS  += selftests/system/test_collector_clickhouse.py
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_collect
# records/s stored into ClickHouse by one and two collectors, next to SQLite (docs/benchmarks.md).
BENCH_PROGS    += selftests/bench/bench_collect_clickhouse.py
# The fleet store's schema on clickhouse-server processes (tests/lib/clickhouse.py).
CHECK_SCRIPTS  += selftests/system/test_clickhouse_schema.py
# report from ClickHouse equals report from SQLite on the same data (one server, two collectors, two shards).
CHECK_SCRIPTS  += selftests/system/test_clickhouse_report.py
# docs/fleet.md "Running ClickHouse for rocemeter" as written, on a clickhouse-server process.
CHECK_SCRIPTS  += selftests/system/test_clickhouse_docs.py
# collect's and report's store options with SQLite: short options, help, errors, nothing to report.
CHECK_SCRIPTS  += tests/unit/test_store_cli.py
