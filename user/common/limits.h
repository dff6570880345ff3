/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * limits.h - the ranges and defaults of every number an operator gives, in
 * the configuration file (config.c) or on a command line (the cmd_*.c
 * files, whose usage texts print them from here). docs/configuration.md
 * documents the same values.
 */
#ifndef ROCEMETER_LIMITS_H
#define ROCEMETER_LIMITS_H

#include <stdint.h>

#include "rocemeter/seqobs.h"

/* Characters of a configuration file's line, its newline not counted (docs/configuration.md "Syntax"); less
 * than inih's line buffer (INI_MAX_LINE, 200 bytes with the newline and the NUL). */
#define RM_CONFIG_LINE_MAX 198

/* [meter] */
#define RM_WINDOW_MIN 1u
/* RM_WINDOW_MAX (2^22) comes from the engine, rocemeter/seqobs.h. */
#define RM_WINDOW_DEFAULT       4194304u /* 2^22, the largest W [SEQOBS] allows */
#define RM_MAX_CONTEXTS_MIN     1u
#define RM_MAX_CONTEXTS_MAX     16777216u
#define RM_MAX_CONTEXTS_DEFAULT 65536u
/* Pool windows ([meter] max_windows); 0: rm_max_windows_auto() */
#define RM_MAX_WINDOWS_MAX         16777216u
#define RM_WINDOW_POOL_BUDGET      (32ull << 20)       /* the automatic pool takes at most this many bytes */
#define RM_IDLE_TIMEOUT_MS_MAX     (86400000ull * 365) /* a year; 0 = never */
#define RM_IDLE_TIMEOUT_MS_DEFAULT 60000u
#define RM_MAX_VIOLATIONS_MIN      1u
#define RM_MAX_VIOLATIONS_MAX      16777216u
#define RM_MAX_VIOLATIONS_DEFAULT  65536u

#define RM_METRICS_CONNECTIONS_MAX 10000u /* per-connection metric series: contexts shown at most */

/* The connection census (`connections`, `attach --census`) */
#define RM_CENSUS_MAX_CONNECTIONS_MIN     1u
#define RM_CENSUS_MAX_CONNECTIONS_MAX     16777216u
#define RM_CENSUS_MAX_CONNECTIONS_DEFAULT 65536u
#define RM_CENSUS_SECONDS_MAX             86400u /* `connections --live --seconds`: a day */
#define RM_CENSUS_SECONDS_DEFAULT         10u

/* [provision] */
#define RM_MAX_PROVISION 4096      /* connection lines */
#define RM_QPN_MAX       0xffffffu /* 24-bit QP numbers */
#define RM_PKEY_MAX      0xffffu

/* [export] */
#define RM_PORT_MIN                   1u
#define RM_PORT_MAX                   65535u
#define RM_PEN_MIN                    1u
#define RM_PEN_MAX                    UINT32_MAX
#define RM_REPORT_INTERVAL_MS_MAX     86400000u /* a day; 0 = final reports only */
#define RM_REPORT_INTERVAL_MS_DEFAULT 10000u
#define RM_QUEUE_RECORDS_MIN          1u
#define RM_QUEUE_RECORDS_MAX          16777216u
#define RM_QUEUE_RECORDS_DEFAULT      65536u

/* [export] and [collect] */
#define RM_MAX_PEER_NAMES 8

/* [collect] */
#define RM_MAX_SESSIONS_MIN              1u
#define RM_MAX_SESSIONS_MAX              65536u
#define RM_MAX_SESSIONS_DEFAULT          64u
#define RM_MAX_EPOCHS_MIN                1u
#define RM_MAX_EPOCHS_MAX                100000000u
#define RM_MAX_EPOCHS_DEFAULT            100000u
#define RM_MAX_RAW_RECORDS_MAX           100000000u /* 0 = keep none */
#define RM_MAX_RAW_RECORDS_DEFAULT       100000u
#define RM_INACTIVITY_TIMEOUT_MS_MAX     (86400000ull * 365) /* 0 = never */
#define RM_INACTIVITY_TIMEOUT_MS_DEFAULT 600000u
/* distinct observation point names (Options Template 262) per Transport Session */
#define RM_MAX_OBSERVATION_POINTS_MIN     1u
#define RM_MAX_OBSERVATION_POINTS_MAX     1048576u
#define RM_MAX_OBSERVATION_POINTS_DEFAULT 1024u
/* [collect]: connections before authentication, dead peers (docs/collector.md) */
#define RM_MAX_HANDSHAKES_MIN                1u
#define RM_MAX_HANDSHAKES_MAX                65536u
#define RM_MAX_HANDSHAKES_DEFAULT            16u
#define RM_MAX_HANDSHAKES_PER_SOURCE_DEFAULT 4u /* same range as max_handshakes */
#define RM_HANDSHAKE_TIMEOUT_MS_MIN          100u
#define RM_HANDSHAKE_TIMEOUT_MS_MAX          600000u
#define RM_HANDSHAKE_TIMEOUT_MS_DEFAULT      5000u
#define RM_SESSION_TIMEOUT_MS_MAX            (86400000ull * 365) /* 0 = never */
#define RM_SESSION_TIMEOUT_MS_DEFAULT        900000u
#define RM_MESSAGE_TIMEOUT_MS_MIN            100u
#define RM_MESSAGE_TIMEOUT_MS_MAX            3600000u
#define RM_MESSAGE_TIMEOUT_MS_DEFAULT        30000u
#define RM_DEAD_PEER_TIMEOUT_MS_MIN          2000u
#define RM_DEAD_PEER_TIMEOUT_MS_MAX          3600000u
#define RM_DEAD_PEER_TIMEOUT_MS_DEFAULT      60000u
/* [collect]: bytes (docs/collector.md "Raw records", "Memory budget") */
#define RM_MAX_RAW_BYTES_MAX                 (1ull << 40) /* 0 = keep none */
#define RM_MAX_RAW_BYTES_DEFAULT             (64ull << 20)
#define RM_MAX_RAW_BYTES_PER_SESSION_DEFAULT (8ull << 20)
#define RM_MAX_MEMORY_BYTES_MIN              327680ull /* one handshake slot and one session (below) */
/* Bytes the memory budget charges per handshake slot (all reserved at start) and per admitted
 * session: user/rules/budget.h has every cost, docs/collector.md "Memory budget" the same numbers.
 * Here because a [collect] section is refused by them (rm_collect_memory_check()). */
#define RM_BUDGET_HANDSHAKE_BYTES   65536u  /* per handshake slot, reserved at start: SSL object mid-handshake */
#define RM_BUDGET_SESSION_BYTES     262144u /* per admitted session: receive buffer, TLS state, tables */
#define RM_MAX_MEMORY_BYTES_MAX     (1ull << 40)
#define RM_MAX_MEMORY_BYTES_DEFAULT (1ull << 30)
/* max_memory_bytes_per_session: 0 (the default) is max_memory_bytes / RM_MEMORY_SHARE_DIVISOR; else at
 * least the MIN: the largest Template (512 + 65535 octets) and 84 epochs (docs/collector.md "Memory budget") */
#define RM_MAX_MEMORY_BYTES_PER_SESSION_MIN 131072ull
#define RM_MEMORY_SHARE_DIVISOR             4u
/* [collect] store_buffer_bytes: rows waiting for a clickhouse: store (docs/fleet.md "Writing"). */
#define RM_STORE_BUFFER_BYTES_MIN     (1ull << 16)
#define RM_STORE_BUFFER_BYTES_MAX     (1ull << 36)
#define RM_STORE_BUFFER_BYTES_DEFAULT (64ull << 20)
/* [collect] store_spool_dir: a clickhouse: store's unsent rows at a stop (docs/fleet.md "Writing"). */
#define RM_STORE_SPOOL_DIR_DEFAULT "/var/lib/rocemeter/spool"

#endif /* ROCEMETER_LIMITS_H */
