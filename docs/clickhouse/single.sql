-- rocemeter's fleet store on one ClickHouse server (docs/fleet.md "Schema").
-- Written by tests/lib/store_ddl from the tables of user/store/columns.h: edit those.
-- The tables of the collector's SQLite store (user/store/sqlite/store.h), each row
-- with the ID of the collector that wrote it (session and row IDs are per
-- collector). All times are UNIX milliseconds (UInt64); IDs and counters are
-- IPFIX unsigned64. Accepted by clickhouse-server 18.16 (Debian 12) and
-- current releases. `rocemeter collect --store-init --store clickhouse:URL`
-- runs these statements in the URL's database; by hand:
--   clickhouse-client --database DB --multiquery < single.sql
-- Columns: collector_id, then those of the table in columns.h (the SQLite
-- table's, but observation_points: the exporter's identity first), then
-- version where rows change (a run's stop, a session's end, an epoch's
-- latest state): such a row is written again with a larger version and
-- ReplacingMergeTree keeps the latest; readers use FINAL or argMax(column,
-- version). drops and connections take delta rows (counts added since the
-- last write), summed by readers.
-- TTL (ClickHouse 19.6 and later): append to a table, e.g. for 90 days,
--   ALTER TABLE epochs MODIFY TTL toDateTime(intDiv(first_seen_ms, 1000)) + INTERVAL 90 DAY;

CREATE TABLE IF NOT EXISTS runs (
    collector_id String, id UInt64, started_ms UInt64, stopped_ms Nullable(UInt64), listen Nullable(String),
    transport Nullable(String), max_sessions UInt64, max_epochs UInt64, max_raw_records UInt64,
    inactivity_timeout_ms UInt64, pen UInt64,
    version UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMMDD(toDateTime(intDiv(started_ms, 1000)))
ORDER BY (collector_id, id);

CREATE TABLE IF NOT EXISTS sessions (
    collector_id String, id UInt64, run_id UInt64, peer Nullable(String), peer_subject Nullable(String),
    transport Nullable(String), started_ms UInt64, ended_ms Nullable(UInt64), end_reason Nullable(String),
    messages UInt64, records UInt64, octets UInt64, rejected UInt64, accepted UInt64, repeats UInt64,
    stale UInt64, orphans UInt64, unsupported UInt64, invalid UInt64, after_invalid UInt64,
    key_conflicts UInt64, resource_drops UInt64, unbound UInt64, seq_gaps UInt64, seq_missing UInt64,
    export_time_backwards UInt64, peer_name Nullable(String),
    version UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMMDD(toDateTime(intDiv(started_ms, 1000)))
ORDER BY (collector_id, id);

CREATE TABLE IF NOT EXISTS epochs (
    collector_id String, id UInt64, session_id UInt64, domain UInt64, observation_point_id UInt64, family UInt8,
    src String, dst String, dest_qp UInt64, pkey UInt64, has_vlan_ns UInt8, vlan_outer UInt64,
    vlan_inner UInt64, epoch_id UInt64, window Nullable(UInt64), flags Nullable(UInt64), flags_seen UInt64,
    flow_start_ms Nullable(UInt64), flow_end_ms Nullable(UInt64), first_report_id Nullable(UInt64),
    last_report_id Nullable(UInt64), reports_accepted UInt64, missing_initial UInt64, missing_reports UInt64,
    gaps UInt64, repeats UInt64, stale UInt64, unsupported UInt64, ignored UInt64, requests Nullable(UInt64),
    skipped Nullable(UInt64), filled Nullable(UInt64), expired Nullable(UInt64), abandoned Nullable(UInt64),
    pending Nullable(UInt64), repeated Nullable(UInt64), unclassified_late Nullable(UInt64), state String,
    outcome String, reason Nullable(String), first_seen_ms UInt64, last_seen_ms UInt64,
    retired_ms Nullable(UInt64),
    version UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMMDD(toDateTime(intDiv(first_seen_ms, 1000)))
ORDER BY (collector_id, id);

CREATE TABLE IF NOT EXISTS raw_records (
    collector_id String, id UInt64, session_id UInt64, received_ms UInt64, domain UInt64, template_id UInt64,
    epoch_id Nullable(UInt64), report_id Nullable(UInt64), flags Nullable(UInt64), verdict String,
    reason String, record String, template Nullable(String)
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(received_ms, 1000)))
ORDER BY (collector_id, id);

CREATE TABLE IF NOT EXISTS drops (
    collector_id String, session_id UInt64, kind String, count UInt64, first_ms UInt64, last_ms UInt64,
    last_detail Nullable(String)
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(first_ms, 1000)))
ORDER BY (collector_id, session_id, kind);

CREATE TABLE IF NOT EXISTS connections (
    collector_id String, minute_ms UInt64, source String, outcome String, count UInt64, first_ms UInt64,
    last_ms UInt64, last_detail Nullable(String)
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(minute_ms, 1000)))
ORDER BY (collector_id, minute_ms, source, outcome);

CREATE TABLE IF NOT EXISTS run_limits (
    collector_id String, run_id UInt64, name String, value UInt64, seq UInt64
) ENGINE = MergeTree
ORDER BY (collector_id, run_id, seq);

CREATE TABLE IF NOT EXISTS observation_points (
    collector_id String, peer_name String, peer_subject String, domain UInt64, observation_point_id UInt64,
    name String, updated_ms UInt64,
    version UInt64
) ENGINE = ReplacingMergeTree(version)
ORDER BY (collector_id, peer_name, peer_subject, domain, observation_point_id);
