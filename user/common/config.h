/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * config.h - the configuration file of `rocemeter attach`, `replay` and
 * `collect` (INI format, parsed with libinih in config.c). Every key, its
 * unit, default and range is documented in docs/configuration.md.
 *
 *   [meter]    window, max_contexts, namespace, observation_point_id,
 *              provision_all, idle_timeout_ms, generation_verified, eviction,
 *              rx_dropped_is_loss, max_violations, unattributed_is_loss, metrics,
 *              metrics_connections, census
 *   [capture]  encapsulation, vxlan_port, rspan_vlan, mirror_sessions,
 *              observation_point (repeatable; capture_settings.c, docs/deployment.md)
 *   [provision] one line per provisioned connection:
 *              connection = SRC DST QPN|any PKEY|any
 *   [export]   collector, port, transport (tls|tcp), ca, cert, key,
 *              peer_name (repeatable), pen, observation_domain,
 *              report_interval_ms, queue_records
 *   [collect]  listen, db, store, store_credentials, store_ca, collector_id, store_buffer_bytes,
 *              store_spool_dir,
 *              transport, ca, cert, key, peer_name (repeatable),
 *              max_sessions, max_epochs, max_raw_records, inactivity_timeout_ms,
 *              max_handshakes, max_handshakes_per_source, handshake_timeout_ms,
 *              session_timeout_ms, message_timeout_ms, dead_peer_timeout_ms,
 *              max_raw_bytes, max_raw_bytes_per_session, max_memory_bytes,
 *              max_memory_bytes_per_session
 *              metrics (docs/collector.md)
 */
#ifndef ROCEMETER_CONFIG_H
#define ROCEMETER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "addr.h"             /* rm_parse_addr(), rm_parse_listen() */
#include "capture_settings.h" /* [capture] */
#include "limits.h"           /* RM_MAX_PEER_NAMES, RM_MAX_PROVISION and every range */

/* One provisioning line; addresses in network order (IPv4: first 4 bytes). */
struct rm_provision {
	uint8_t family; /* 4 or 6 */
	uint8_t src[16];
	uint8_t dst[16];
	uint32_t dest_qp; /* valid unless any_qp */
	uint16_t pkey;    /* valid unless any_pkey */
	uint8_t any_qp;
	uint8_t any_pkey;
};

/* TLS settings shared by the exporter (client) and the collector (server). */
struct rm_tls_settings {
	int plain_tcp;                           /* transport = tcp: no TLS (explicit, warned) */
	char ca[256];                            /* PEM CA file that signs the peer's certificate */
	char cert[256];                          /* own certificate (chain), PEM */
	char key[256];                           /* own private key, PEM */
	char peer_names[RM_MAX_PEER_NAMES][256]; /* authorised peer names (DNS SAN or CN) */
	int n_peer_names;
};

struct rm_meter_settings {
	uint32_t window;               /* W, 1..4194304, default 4194304 (2^22) */
	uint32_t max_contexts;         /* default 65536 */
	uint32_t max_windows;          /* pool windows; default 0: automatic (rm_max_windows_auto()) */
	int namespace_vlan;            /* namespace = vlan | none (default none) */
	uint64_t observation_point_id; /* default 0: the interface index */
	int provision_all;             /* default 0 */
	uint64_t idle_timeout_ms;      /* 0 = never; default 60000 */
	int generation_verified;       /* default 0: every report sets generationUnverified */
	int evict;                     /* eviction = none | oldest; default none (refuse, count) */
	int rx_dropped_is_loss;        /* default 0: rx_dropped rising is no capture discontinuity */
	uint32_t max_violations;       /* size of the violations map; default 65536 */
	int unattributed_is_loss;      /* default 1: a frame that may hide a request closes every epoch */
	char metrics[256];             /* Prometheus metrics on ADDR:PORT; "": off (default) */
	uint32_t metrics_connections;  /* per-connection series for at most this many contexts; 0: none */
	int census;                    /* attach: the connection census at tc ingress too; default 0 */
};

struct rm_export_settings {
	int enabled;         /* [export] names a collector */
	char collector[256]; /* host name or address */
	uint16_t port;       /* default 4740 (TLS) / 4739 (tcp) */
	struct rm_tls_settings tls;
	uint32_t pen;                /* default 32473 */
	uint32_t observation_domain; /* default 0 */
	uint64_t report_interval_ms; /* non-final reports of open epochs; 0 = finals only; default 10000 */
	uint32_t queue_records;      /* bound of the send queue in records; default 65536 */
};

struct rm_collect_settings {
	char listen[256];            /* ADDR:PORT, default [::]:4740 */
	char db[256];                /* SQLite file (the same as store = sqlite:FILE) */
	char store[600];             /* sqlite:FILE or clickhouse:URL; "": db (never both in a file) */
	char store_credentials[256]; /* clickhouse: file of user= and password= lines */
	char store_ca[256];          /* clickhouse over https: CA certificates, PEM */
	char collector_id[72];       /* clickhouse: every row's collector_id; "": the host name (docs/fleet.md) */
	uint64_t store_buffer_bytes; /* clickhouse: octets of rows waiting, default 64 MiB */
	char store_spool_dir[256];   /* clickhouse: where unsent rows go at a stop, one file per collector ID */
	struct rm_tls_settings tls;
	uint32_t max_sessions;           /* default 64 */
	uint32_t max_epochs;             /* retained epochs per session, default 100000 */
	uint32_t max_raw_records;        /* raw records kept, default 100000 */
	uint64_t inactivity_timeout_ms;  /* default 600000 */
	uint32_t max_observation_points; /* distinct observation point names per Transport Session, default 1024 */
	/* Before authentication and dead peers (docs/collector.md "Collector limits"). */
	uint32_t max_handshakes;            /* connections in the TLS handshake, default 16 */
	uint32_t max_handshakes_per_source; /* of them from one source address, default 4 */
	uint64_t handshake_timeout_ms;      /* accept to authorised peer, default 5000 */
	uint64_t session_timeout_ms;        /* no octet from an admitted session; 0 = never; default 900000 */
	uint64_t message_timeout_ms;        /* first to last octet of one IPFIX Message, default 30000 */
	uint64_t dead_peer_timeout_ms;      /* TCP keepalive and TCP_USER_TIMEOUT, default 60000 */
	/* Bytes (docs/collector.md "Raw records", "Memory budget"). */
	uint64_t max_raw_bytes;                /* raw record octets in the database, default 64 MiB */
	uint64_t max_raw_bytes_per_session;    /* the same per Transport Session, default 8 MiB */
	uint64_t max_memory_bytes;             /* the memory budget, default 1 GiB */
	uint64_t max_memory_bytes_per_session; /* one session's share of it; 0 (default): max_memory_bytes / 4 */
	char metrics[256];                     /* Prometheus metrics on ADDR:PORT; "": off (default) */
};

/* Sections a file named (at least one key in it): rm_config_file.sections. */
#define RM_CONFIG_METER     0x1
#define RM_CONFIG_PROVISION 0x2
#define RM_CONFIG_EXPORT    0x4
#define RM_CONFIG_COLLECT   0x8
#define RM_CONFIG_CAPTURE   0x10

struct rm_config_file {
	unsigned int sections; /* RM_CONFIG_* of the sections the file had keys in */
	struct rm_meter_settings meter;
	struct rm_provision provision[RM_MAX_PROVISION];
	int n_provision;
	struct rm_export_settings export;
	struct rm_collect_settings collect;
	struct rm_capture_settings capture;
};

/*
 * What a command line says about [meter] and [export], over the file: at
 * attach, on every reload of the daemon, and in replay. A zero field (or
 * has_report_interval 0) leaves the file's value.
 */
struct rm_config_overrides {
	uint32_t window;             /* --window, RM_WINDOW_MIN..RM_WINDOW_MAX */
	uint32_t max_contexts;       /* --max-contexts (replay) */
	uint32_t max_windows;        /* --max-windows (replay) */
	int provision_all;           /* --provision-all: 1 turns it on */
	int has_report_interval;     /* --report-interval given (attach) */
	uint64_t report_interval_ms; /* its value, 0..RM_REPORT_INTERVAL_MS_MAX */
};

/* Fill *cfg with the documented defaults: zero, then each key's default from its table. */
void rm_config_defaults(struct rm_config_file *cfg);

/* Fill *c with the defaults of [capture] (its key table): plain frames only, VXLAN port 4789, no lines. */
void rm_capture_defaults(struct rm_capture_settings *c);

/* No override given. */
void rm_config_overrides_init(struct rm_config_overrides *o);

/* Apply the given overrides to a loaded (or default) configuration. */
void rm_config_apply_overrides(struct rm_config_file *cfg, const struct rm_config_overrides *o);

/*
 * Parse the INI file at path into *cfg (which should hold defaults). path
 * must name a regular file (or a link to one): a directory, a device or a
 * FIFO is refused before it is read ("PATH: not a regular file (a
 * directory)"), so that /dev/zero cannot hang a daemon. Returns 0, or -1
 * with a message "PATH:LINE: reason" (or "PATH: reason") in err.
 */
int rm_config_load(const char *path, struct rm_config_file *cfg, char *err, size_t errlen);

/*
 * "SRC DST QPN|any PKEY|any" (a [provision] connection line, or a pattern of
 * `rocemeter reenable`) into *p. Returns 0, or -EINVAL with "connection:
 * reason" in err.
 */
int rm_parse_connection(const char *text, struct rm_provision *p, char *err, size_t errlen);

/*
 * [collect]: the memory budget must hold the handshake reservation
 * (max_handshakes x RM_BUDGET_HANDSHAKE_BYTES, limits.h) and one session
 * (RM_BUDGET_SESSION_BYTES): 0, or -EINVAL with a one-line reason naming
 * max_memory_bytes in err. `collect` and `check-config` refuse such a file.
 */
int rm_collect_memory_check(const struct rm_collect_settings *cs, char *err, size_t errlen);
/*
 * [collect]: max_memory_bytes_per_session is 0 or in
 * RM_MAX_MEMORY_BYTES_PER_SESSION_MIN .. max_memory_bytes: 0, or -EINVAL
 * with a one-line reason naming it in err (rm_config_load says FILE:LINE,
 * rm_collect_memory_check checks it too).
 */
int rm_collect_memory_share_check(const struct rm_collect_settings *cs, char *err, size_t errlen);
/* The share of max_memory_bytes one Transport Session may hold (bytes): the key, or its default. */
uint64_t rm_collect_memory_share(const struct rm_collect_settings *cs);

/*
 * [collect]: a store is named (store, or its older name db; the loader
 * refuses both in one file) and store_credentials / store_ca go with a
 * clickhouse: store only. 0, or -EINVAL with a one-line reason naming the
 * key in err. The URL itself is parsed by `collect` (store_spec.h).
 */
int rm_collect_store_check(const struct rm_collect_settings *cs, char *err, size_t errlen);

/* [collect]: the store as the configuration names it (store, else db), for summaries. */
const char *rm_collect_store_name(const struct rm_collect_settings *cs);

/*
 * A key of a section, as the loader reads it (config.c's tables): an
 * integer (RM_KEY_UINT: lo..hi, size bytes), a string (RM_KEY_STR: a
 * char[size], refused empty or too long), yes/no (RM_KEY_BOOL: int), one of
 * two names (RM_KEY_CHOICE: int 0 or 1), or its own reader (RM_KEY_FUNC).
 * off is the place in the section's settings (struct rm_meter_settings,
 * ...); def or def_text its default, which rm_config_defaults() puts there
 * (a key without either defaults to zero).
 */
enum rm_key_kind { RM_KEY_UINT, RM_KEY_STR, RM_KEY_BOOL, RM_KEY_CHOICE, RM_KEY_FUNC };
struct rm_config_parse;
struct rm_config_key {
	const char *key;
	enum rm_key_kind kind;
	size_t off, size;
	uint64_t lo, hi;      /* RM_KEY_UINT */
	const char *names[2]; /* RM_KEY_CHOICE: the names of 0 and 1 */
	/* RM_KEY_FUNC: 1 read, 0 refused (the reason kept in ps); sec is the section's settings */
	int (*read)(struct rm_config_parse *ps, void *sec, const struct rm_config_key *k, const char *value);
	int repeatable;       /* may be given more than once in its section (a list); any other key once */
	uint64_t def;         /* the default of a number, yes/no or choice (an unsigned field of size bytes) */
	const char *def_text; /* the default of a string (a char[size]); NULL: def */
};

/*
 * The key of [section] ("collect", "max_sessions"), for an option that
 * shares its range and place (params.h RM_OPT_KEY); NULL when there is
 * none. Keys of the TLS settings are not found here.
 */
const struct rm_config_key *rm_config_key(const char *section, const char *key);

/*
 * value of key k into the section's settings sec, as the file's line
 * would be read (its range, its own reader): 0, or -EINVAL with the reason,
 * which names the key, in err ("listen: 'X' is not ADDR:PORT, ..."). Not
 * for the keys that add up to a list (connection, peer_name,
 * observation_point): -EINVAL.
 */
int rm_config_key_read(const struct rm_config_key *k, void *sec, const char *value, char *err, size_t errlen);

#endif /* ROCEMETER_CONFIG_H */
