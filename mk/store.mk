# user/store/: the collector's store - the store interface, SQLite (sqlite/) and
# ClickHouse (clickhouse/) writers, and the readers of `rocemeter report`.
ROCEMETER_SRCS += user/store/backend.c user/store/store_spec.c user/store/columns.c user/store/store_rows.c \
                  user/store/store_read.c user/store/read_result.c \
                  user/store/sqlite/store.c user/store/sqlite/statement.c user/store/sqlite/schema.c \
                  user/store/sqlite/queue.c user/store/sqlite/rows.c user/store/sqlite/archive.c \
                  user/store/sqlite/flush.c user/store/sqlite/recover.c user/store/sqlite/lost.c \
                  user/store/sqlite/store_read_sqlite.c \
                  user/store/clickhouse/clickhouse.c user/store/clickhouse/ddl.c user/store/clickhouse/chstore.c \
                  user/store/clickhouse/version.c user/store/clickhouse/rows.c user/store/clickhouse/batch.c \
                  user/store/clickhouse/drops.c user/store/clickhouse/sender.c user/store/clickhouse/spool.c \
                  user/store/clickhouse/lease.c user/store/clickhouse/lost.c \
                  user/store/clickhouse/store_read_clickhouse.c
# ClickHouse's HTTP interface (docs/fleet.md); the DDL files are compiled in (.incbin).
LDLIBS         += -lcurl
$(BUILD)/user/store/clickhouse/clickhouse.o: docs/clickhouse/single.sql docs/clickhouse/cluster.sql
# The store URL, credentials file and DDL statements without a server.
CHECK_PROGS    += $(BUILD)/tests/unit/test_clickhouse
# The store interface: the store chosen by its spec, SQLite writes through it.
CHECK_PROGS    += $(BUILD)/tests/unit/test_backend
# What the store holds for its next transaction, charged to the same budget.
CHECK_PROGS    += $(BUILD)/tests/unit/test_store_budget
# The table of an epoch's columns (user/store/columns.h) against the DDL of docs/clickhouse/*.sql, the
# SQLite schema and the columns report reads.
CHECK_PROGS    += $(BUILD)/tests/unit/test_store_columns
# Every stored table (user/store/columns.h) against the shipped DDL, a database the store creates and the
# rows both stores write, column for column; single.sql is the output of tests/lib/store_ddl.
CHECK_PROGS    += $(BUILD)/tests/unit/test_store_tables
# The packed form of settled epochs (epoch_archive) byte for byte, and the epochs view over it.
CHECK_PROGS    += $(BUILD)/tests/unit/test_store_archive
# report's SQLite reader against the epochs view, row by row, for every packing case and filter.
CHECK_PROGS    += $(BUILD)/tests/unit/test_store_read_sqlite
# The database on a full tmpfs (root), write-locked by another process, and
# a restart after kill -9.
CHECK_SCRIPTS  += selftests/system/test_collector_store.py
# The ClickHouse store (tests/lib/clickhouse.py servers): the same outcomes as SQLite,
# two shards and two collectors, an outage under load.
CHECK_SCRIPTS  += selftests/system/test_collector_clickhouse.py
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
# single.sql is written from the tables of user/store/columns.h by tests/lib/store_ddl (linked with
# columns.o and clickhouse/ddl.o alone: not with clickhouse.o, which compiles the file in), cluster.sql
# from single.sql (scripts/clickhouse-cluster-ddl); both are checked to be so.
$(BUILD)/tests/lib/store_ddl: tests/lib/store_ddl.c $(BUILD)/user/store/columns.o $(BUILD)/user/store/clickhouse/ddl.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -o $@ $(filter %.c %.o,$^) $(shell pkg-config --libs glib-2.0)
docs/clickhouse/single.sql: $(BUILD)/tests/lib/store_ddl
	$< >$@.tmp && mv $@.tmp $@
docs/clickhouse/cluster.sql: docs/clickhouse/single.sql scripts/clickhouse-cluster-ddl
	scripts/clickhouse-cluster-ddl $< >$@.tmp && mv $@.tmp $@
CHECK_SCRIPTS  += tests/unit/test_clickhouse_ddl.py
