-- rocemeter's fleet store on a ClickHouse cluster (docs/fleet.md "Schema").
-- Written by scripts/clickhouse-cluster-ddl from single.sql: edit that one.
-- The tables of single.sql as local tables (NAME_local) on every server, and
-- over them Distributed tables with the plain names, which collectors write
-- and `rocemeter report` reads. Rows are sharded by collector ID: one
-- collector's rows live on one shard, so that FINAL and argMax on an epoch's
-- versions see all of them there. Run on EVERY server of the cluster
-- (no ON CLUSTER: that needs ZooKeeper):
--   rocemeter collect --store-init --store clickhouse:URL --cluster NAME
-- or by hand, ${CLUSTER} replaced by the name in remote_servers:
--   CLUSTER=NAME envsubst < cluster.sql | clickhouse-client --database DB --multiquery
-- Accepted by clickhouse-server 18.16 (Debian 12) and current releases.
-- TTL (19.6 and later): on each server, on the local tables, e.g.
--   ALTER TABLE epochs_local MODIFY TTL toDateTime(intDiv(first_seen_ms, 1000)) + INTERVAL 90 DAY;

CREATE TABLE IF NOT EXISTS runs_local (
    collector_id String, id UInt64, started_ms UInt64, stopped_ms Nullable(UInt64), listen Nullable(String),
    transport Nullable(String), max_sessions UInt64, max_epochs UInt64, max_raw_records UInt64,
    inactivity_timeout_ms UInt64, pen UInt64,
    version UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMMDD(toDateTime(intDiv(started_ms, 1000)))
ORDER BY (collector_id, id);

CREATE TABLE IF NOT EXISTS runs AS runs_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), runs_local, sipHash64(collector_id));

CREATE TABLE IF NOT EXISTS sessions_local (
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

CREATE TABLE IF NOT EXISTS sessions AS sessions_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), sessions_local, sipHash64(collector_id));

CREATE TABLE IF NOT EXISTS epochs_local (
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

CREATE TABLE IF NOT EXISTS epochs AS epochs_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), epochs_local, sipHash64(collector_id));

CREATE TABLE IF NOT EXISTS raw_records_local (
    collector_id String, id UInt64, session_id UInt64, received_ms UInt64, domain UInt64, template_id UInt64,
    epoch_id Nullable(UInt64), report_id Nullable(UInt64), flags Nullable(UInt64), verdict String,
    reason String, record String, template Nullable(String)
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(received_ms, 1000)))
ORDER BY (collector_id, id);

CREATE TABLE IF NOT EXISTS raw_records AS raw_records_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), raw_records_local, sipHash64(collector_id));

CREATE TABLE IF NOT EXISTS drops_local (
    collector_id String, session_id UInt64, kind String, count UInt64, first_ms UInt64, last_ms UInt64,
    last_detail Nullable(String)
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(first_ms, 1000)))
ORDER BY (collector_id, session_id, kind);

CREATE TABLE IF NOT EXISTS drops AS drops_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), drops_local, sipHash64(collector_id));

CREATE TABLE IF NOT EXISTS connections_local (
    collector_id String, minute_ms UInt64, source String, outcome String, count UInt64, first_ms UInt64,
    last_ms UInt64, last_detail Nullable(String)
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(minute_ms, 1000)))
ORDER BY (collector_id, minute_ms, source, outcome);

CREATE TABLE IF NOT EXISTS connections AS connections_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), connections_local, sipHash64(collector_id));

CREATE TABLE IF NOT EXISTS run_limits_local (
    collector_id String, run_id UInt64, name String, value UInt64, seq UInt64
) ENGINE = MergeTree
ORDER BY (collector_id, run_id, seq);

CREATE TABLE IF NOT EXISTS run_limits AS run_limits_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), run_limits_local, sipHash64(collector_id));

CREATE TABLE IF NOT EXISTS observation_points_local (
    collector_id String, peer_name String, peer_subject String, domain UInt64, observation_point_id UInt64,
    name String, updated_ms UInt64,
    version UInt64
) ENGINE = ReplacingMergeTree(version)
ORDER BY (collector_id, peer_name, peer_subject, domain, observation_point_id);

CREATE TABLE IF NOT EXISTS observation_points AS observation_points_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), observation_points_local, sipHash64(collector_id));
