// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * config.c - the INI configuration file (libinih). See config.h for the
 * sections and docs/configuration.md for every key. Each section's keys
 * are one table (name, kind, place, range) that the loader reads by and
 * that `collect`'s options share (rm_config_key()).
 */
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "errmsg.h"
#include "limits.h"
#include "metrics.h"
#include "opts.h"
#include "rocemeter/ipfix_ie.h"
#include "store_syntax.h"

void rm_config_overrides_init(struct rm_config_overrides *o)
{
	memset(o, 0, sizeof(*o));
}

void rm_config_apply_overrides(struct rm_config_file *cfg, const struct rm_config_overrides *o)
{
	if (o->window)
		cfg->meter.window = o->window;
	if (o->max_contexts)
		cfg->meter.max_contexts = o->max_contexts;
	if (o->max_windows)
		cfg->meter.max_windows = o->max_windows;
	if (o->provision_all)
		cfg->meter.provision_all = 1;
	if (o->has_report_interval)
		cfg->export.report_interval_ms = o->report_interval_ms;
}

/* Room for the first line of each section and key (duplicates are refused: FILE:LINE). */
#define CONFIG_MAX_SECTIONS 8
#define CONFIG_MAX_KEYS     48

struct rm_config_parse {
	struct rm_config_file *cfg;
	char reason[256];
	int failed;
	FILE *f;
	int line;      /* physical line being parsed, from 1 */
	int at_eol;    /* the last read ended a line */
	int fail_line; /* line of the first handler error */
	int indented;  /* the line starts with blanks: inih takes it as the previous value's continuation */
	int section_line[CONFIG_MAX_SECTIONS];              /* the line of each section's header, 0 before it */
	int key_line[CONFIG_MAX_SECTIONS][CONFIG_MAX_KEYS]; /* the line of each key's value, 0 before it */
	int memory_line; /* the last of [collect] max_memory_bytes, max_memory_bytes_per_session, max_handshakes */
};

static int __attribute__((format(printf, 2, 3))) fail(struct rm_config_parse *ps, const char *fmt, ...);
static void note_section(struct rm_config_parse *ps, const char *line);

/*
 * fgets for ini_parse_stream() that keeps the physical line number, so that
 * an error is reported at its own line even after an earlier syntax error,
 * and refuses what inih would misread: a NUL byte (inih's strings end there:
 * "peer_name = exp\0orter" would authorise "exp"), a line too long (inih
 * would parse its rest as a line of its own), a section given twice.
 */
static char *line_reader(char *str, int num, void *stream)
{
	struct rm_config_parse *ps = stream;
	int i = 0, c = EOF, start;

	if (ps->at_eol)
		ps->line++;
	start = ps->at_eol;
	while (i < num - 1 && (c = getc(ps->f)) != EOF) {
		if (c == '\0') {
			fail(ps, "a NUL byte at column %d (a value would end there); remove it", i + 1);
			c = ' ';
		}
		str[i++] = (char)c;
		if (c == '\n')
			break;
	}
	if (i == 0)
		return NULL;
	str[i] = '\0';
	ps->at_eol = str[i - 1] == '\n';
	if (!ps->at_eol && c != EOF) {
		c = getc(ps->f);
		if (c == '\n') {
			ps->at_eol = 1; /* exactly num - 1 characters before the newline */
		} else if (c != EOF) {
			ungetc(c, ps->f); /* beyond inih's buffer: inih would read the rest as a line of its own */
			fail(ps, "line longer than %d characters", RM_CONFIG_LINE_MAX);
		}
	}
	/* One limit, whatever inih's buffer: the characters of the line before its newline. */
	if (start && i - (ps->at_eol && str[i - 1] == '\n') > RM_CONFIG_LINE_MAX)
		fail(ps, "line longer than %d characters", RM_CONFIG_LINE_MAX);
	if (start) {
		ps->indented = (str[0] == ' ' || str[0] == '\t') && str[strspn(str, " \t\r\n")];
		note_section(ps, str);
	}
	return str;
}

static int parse_bool(const char *v, int *out)
{
	if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "on"))
		*out = 1;
	else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "off"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* Keep the first refusal and its line; returns 0 (inih: the line is refused). */
static int __attribute__((format(printf, 2, 3))) fail(struct rm_config_parse *ps, const char *fmt, ...)
{
	va_list ap;

	if (!ps->failed) {
		va_start(ap, fmt);
		rm_verrf(ps->reason, sizeof(ps->reason), fmt, ap);
		va_end(ap);
		ps->failed = 1;
		ps->fail_line = ps->line;
	}
	return 0;
}

static int copy_str(struct rm_config_parse *ps, char *dst, size_t cap, const char *name, const char *v)
{
	if (strlen(v) >= cap || !*v)
		return fail(ps, "%s: value empty or too long: '%s'", name, v);
	strcpy(dst, v);
	return 1;
}

int rm_parse_connection(const char *v, struct rm_provision *p, char *err, size_t errlen)
{
	char src[64], dst[64], qp[32], pk[32], extra[2];
	int f1, f2;
	uint64_t x;

	memset(p, 0, sizeof(*p));
	if (sscanf(v, "%63s %63s %31s %31s %1s", src, dst, qp, pk, extra) != 4) {
		rm_errf(err, errlen, "connection: expected 'SRC DST QPN|any PKEY|any', got '%s'", v);
		return -EINVAL;
	}
	f1 = rm_parse_addr(src, p->src);
	f2 = rm_parse_addr(dst, p->dst);
	if (f1 < 0 || f2 < 0) {
		rm_errf(err, errlen, "connection: '%s' is not an IPv4 or IPv6 address", f1 < 0 ? src : dst);
		return -EINVAL;
	}
	if (f1 != f2) {
		rm_errf(err, errlen, "connection: '%s' and '%s' are of different address families", src, dst);
		return -EINVAL;
	}
	p->family = (uint8_t)f1;
	if (!strcasecmp(qp, "any")) {
		p->any_qp = 1;
	} else if (rm_parse_uint(qp, 0, RM_QPN_MAX, &x)) {
		rm_errf(err, errlen, "connection: destination QP '%s' is not 'any' or 0..0xffffff", qp);
		return -EINVAL;
	} else {
		p->dest_qp = (uint32_t)x;
	}
	if (!strcasecmp(pk, "any")) {
		p->any_pkey = 1;
	} else if (rm_parse_uint(pk, 0, RM_PKEY_MAX, &x)) {
		rm_errf(err, errlen, "connection: P_Key '%s' is not 'any' or 0..0xffff", pk);
		return -EINVAL;
	} else {
		p->pkey = (uint16_t)x;
	}
	return 0;
}

/* connection = SRC DST QPN|any PKEY|any */
static int read_connection(struct rm_config_parse *ps, void *sec, const struct rm_config_key *k, const char *v)
{
	struct rm_config_file *cfg = ps->cfg;
	char reason[256];

	if (cfg->n_provision >= RM_MAX_PROVISION)
		return fail(ps, "too many connection lines (at most %d)", RM_MAX_PROVISION);
	if (rm_parse_connection(v, &cfg->provision[cfg->n_provision], reason, sizeof(reason)))
		return fail(ps, "%s", reason);
	cfg->n_provision++;
	return 1;
}

/* peer_name (repeatable) of [export] and [collect]. */
static int read_peer_name(struct rm_config_parse *ps, void *sec, const struct rm_config_key *k, const char *v)
{
	struct rm_tls_settings *t = sec;

	if (t->n_peer_names >= RM_MAX_PEER_NAMES)
		return fail(ps, "peer_name: at most %d names", RM_MAX_PEER_NAMES);
	return copy_str(ps, t->peer_names[t->n_peer_names++], sizeof(t->peer_names[0]), k->key, v);
}

/* metrics = ADDR:PORT ([meter] and [collect]): checked now, served at start. */
static int read_metrics(struct rm_config_parse *ps, void *sec, const struct rm_config_key *k, const char *value)
{
	char host[256], reason[200];
	unsigned int port;

	if (rm_metrics_parse_listen("metrics", value, host, sizeof(host), &port, reason, sizeof(reason)))
		return fail(ps, "%s", reason);
	return copy_str(ps, (char *)sec + k->off, k->size, "metrics", value);
}

static int read_listen(struct rm_config_parse *ps, void *sec, const struct rm_config_key *k, const char *value)
{
	char host[256], reason[200];
	uint16_t port;

	if (rm_parse_listen(value, host, sizeof(host), &port, reason, sizeof(reason)))
		return fail(ps, "listen: %s", reason);
	return copy_str(ps, (char *)sec + k->off, k->size, k->key, value);
}

/* db is the older name of store = sqlite:FILE: a file names its store once (docs/configuration.md). */
static int read_db(struct rm_config_parse *ps, void *sec, const struct rm_config_key *k, const char *value)
{
	struct rm_collect_settings *cs = sec;

	if (cs->store[0])
		return fail(ps, "db: [collect] has both db and store: keep store (db = FILE is store = sqlite:FILE)");
	return copy_str(ps, cs->db, sizeof(cs->db), k->key, value);
}

static int read_store(struct rm_config_parse *ps, void *sec, const struct rm_config_key *k, const char *value)
{
	struct rm_collect_settings *cs = sec;
	char reason[240];

	if (cs->db[0])
		return fail(ps,
			    "store: [collect] has both db and store: keep store (db = FILE is store = sqlite:FILE)");
	if (!(!strncmp(value, "sqlite:", 7) && value[7]) && strncmp(value, "clickhouse:", 11))
		return fail(ps, "store: '%s' is not sqlite:FILE or clickhouse:URL", value);
	/* the syntax collect applies (no server contacted): check-config agrees with it */
	if (!strncmp(value, "clickhouse:", 11) && rm_store_url_parse(value, NULL, 0, NULL, 0, reason, sizeof(reason)))
		return fail(ps, "store: %s", reason);
	return copy_str(ps, cs->store, sizeof(cs->store), k->key, value);
}

static int read_collector_id(struct rm_config_parse *ps, void *sec, const struct rm_config_key *k, const char *value)
{
	char reason[200];

	if (rm_collector_id_check(value, reason, sizeof(reason)))
		return fail(ps, "%s", reason);
	return copy_str(ps, (char *)sec + k->off, k->size, k->key, value);
}

/*
 * Entries of the key tables: an integer, a string, yes/no, one of two names
 * (the first the default), a reader of its own, a list; then the key's
 * default when it is not zero: .def = N, or .def_text = "TEXT" for a string.
 */
#define FIELD(type, field) .off = offsetof(type, field), .size = sizeof(((type *)0)->field)
#define UINT_KEY(type, key_, field, lo_, hi_, ...)                                                      \
	{                                                                                               \
		.key = key_, .kind = RM_KEY_UINT, FIELD(type, field), .lo = lo_, .hi = hi_, __VA_ARGS__ \
	}
#define STR_KEY(type, key_, field, ...)                                          \
	{                                                                        \
		.key = key_, .kind = RM_KEY_STR, FIELD(type, field), __VA_ARGS__ \
	}
#define BOOL_KEY(type, key_, field, ...)                                          \
	{                                                                         \
		.key = key_, .kind = RM_KEY_BOOL, FIELD(type, field), __VA_ARGS__ \
	}
#define CHOICE_KEY(type, key_, field, no, yes)                                               \
	{                                                                                    \
		.key = key_, .kind = RM_KEY_CHOICE, FIELD(type, field), .names = { no, yes } \
	}
#define FUNC_KEY(type, key_, field, fn, ...)                                                  \
	{                                                                                     \
		.key = key_, .kind = RM_KEY_FUNC, FIELD(type, field), .read = fn, __VA_ARGS__ \
	}
/* A key whose lines add up to a list (connection, peer_name, observation_point). */
#define LIST_KEY(type, key_, field, fn)                                                           \
	{                                                                                         \
		.key = key_, .kind = RM_KEY_FUNC, FIELD(type, field), .read = fn, .repeatable = 1 \
	}

/* The default listen address: every address, the IPFIX-over-TLS port. */
#define STRINGIFY_(x)  #x
#define STRINGIFY(x)   STRINGIFY_(x)
#define LISTEN_DEFAULT "[::]:" STRINGIFY(RM_IPFIX_PORT_TLS)

#define M struct rm_meter_settings
static const struct rm_config_key meter_keys[] = {
	UINT_KEY(M, "window", window, RM_WINDOW_MIN, RM_WINDOW_MAX, .def = RM_WINDOW_DEFAULT),
	UINT_KEY(M, "max_contexts", max_contexts, RM_MAX_CONTEXTS_MIN, RM_MAX_CONTEXTS_MAX,
		 .def = RM_MAX_CONTEXTS_DEFAULT),
	UINT_KEY(M, "max_windows", max_windows, 0, RM_MAX_WINDOWS_MAX),
	UINT_KEY(M, "observation_point_id", observation_point_id, 0, UINT64_MAX),
	UINT_KEY(M, "idle_timeout_ms", idle_timeout_ms, 0, RM_IDLE_TIMEOUT_MS_MAX, .def = RM_IDLE_TIMEOUT_MS_DEFAULT),
	UINT_KEY(M, "max_violations", max_violations, RM_MAX_VIOLATIONS_MIN, RM_MAX_VIOLATIONS_MAX,
		 .def = RM_MAX_VIOLATIONS_DEFAULT),
	UINT_KEY(M, "metrics_connections", metrics_connections, 0, RM_METRICS_CONNECTIONS_MAX),
	FUNC_KEY(M, "metrics", metrics, read_metrics),
	CHOICE_KEY(M, "namespace", namespace_vlan, "none", "vlan"),
	CHOICE_KEY(M, "eviction", evict, "none", "oldest"),
	BOOL_KEY(M, "provision_all", provision_all),
	BOOL_KEY(M, "census", census),
	BOOL_KEY(M, "rx_dropped_is_loss", rx_dropped_is_loss),
	BOOL_KEY(M, "unattributed_is_loss", unattributed_is_loss, .def = 1),
	BOOL_KEY(M, "generation_verified", generation_verified),
	{ 0 },
};
#undef M

static const struct rm_config_key provision_keys[] = {
	LIST_KEY(struct rm_config_file, "connection", provision, read_connection),
	{ 0 },
};

/* [export] and [collect] both read these into their struct rm_tls_settings. */
#define T struct rm_tls_settings
static const struct rm_config_key tls_keys[] = {
	CHOICE_KEY(T, "transport", plain_tcp, "tls", "tcp"),
	STR_KEY(T, "ca", ca),
	STR_KEY(T, "cert", cert),
	STR_KEY(T, "key", key),
	LIST_KEY(T, "peer_name", peer_names, read_peer_name),
	{ 0 },
};
#undef T

#define E struct rm_export_settings
static const struct rm_config_key export_keys[] = {
	STR_KEY(E, "collector", collector),
	UINT_KEY(E, "port", port, RM_PORT_MIN, RM_PORT_MAX), /* default: the transport's, after loading */
	UINT_KEY(E, "pen", pen, RM_PEN_MIN, RM_PEN_MAX, .def = RM_IPFIX_DEFAULT_PEN),
	UINT_KEY(E, "observation_domain", observation_domain, 0, UINT32_MAX),
	UINT_KEY(E, "report_interval_ms", report_interval_ms, 0, RM_REPORT_INTERVAL_MS_MAX,
		 .def = RM_REPORT_INTERVAL_MS_DEFAULT),
	UINT_KEY(E, "queue_records", queue_records, RM_QUEUE_RECORDS_MIN, RM_QUEUE_RECORDS_MAX,
		 .def = RM_QUEUE_RECORDS_DEFAULT),
	{ 0 },
};
#undef E

/* The options of `collect` that are keys take their ranges from here (cmd_collect.c, RM_OPT_KEY). */
#define C struct rm_collect_settings
static const struct rm_config_key collect_keys[] = {
	FUNC_KEY(C, "listen", listen, read_listen, .def_text = LISTEN_DEFAULT),
	FUNC_KEY(C, "db", db, read_db),
	FUNC_KEY(C, "store", store, read_store),
	STR_KEY(C, "store_credentials", store_credentials),
	STR_KEY(C, "store_ca", store_ca),
	FUNC_KEY(C, "collector_id", collector_id, read_collector_id),
	STR_KEY(C, "store_spool_dir", store_spool_dir, .def_text = RM_STORE_SPOOL_DIR_DEFAULT),
	UINT_KEY(C, "store_buffer_bytes", store_buffer_bytes, RM_STORE_BUFFER_BYTES_MIN, RM_STORE_BUFFER_BYTES_MAX,
		 .def = RM_STORE_BUFFER_BYTES_DEFAULT),
	FUNC_KEY(C, "metrics", metrics, read_metrics),
	UINT_KEY(C, "max_sessions", max_sessions, RM_MAX_SESSIONS_MIN, RM_MAX_SESSIONS_MAX,
		 .def = RM_MAX_SESSIONS_DEFAULT),
	UINT_KEY(C, "max_epochs", max_epochs, RM_MAX_EPOCHS_MIN, RM_MAX_EPOCHS_MAX, .def = RM_MAX_EPOCHS_DEFAULT),
	UINT_KEY(C, "max_raw_records", max_raw_records, 0, RM_MAX_RAW_RECORDS_MAX, .def = RM_MAX_RAW_RECORDS_DEFAULT),
	UINT_KEY(C, "inactivity_timeout_ms", inactivity_timeout_ms, 0, RM_INACTIVITY_TIMEOUT_MS_MAX,
		 .def = RM_INACTIVITY_TIMEOUT_MS_DEFAULT),
	UINT_KEY(C, "max_observation_points", max_observation_points, RM_MAX_OBSERVATION_POINTS_MIN,
		 RM_MAX_OBSERVATION_POINTS_MAX, .def = RM_MAX_OBSERVATION_POINTS_DEFAULT),
	UINT_KEY(C, "max_handshakes", max_handshakes, RM_MAX_HANDSHAKES_MIN, RM_MAX_HANDSHAKES_MAX,
		 .def = RM_MAX_HANDSHAKES_DEFAULT),
	UINT_KEY(C, "max_handshakes_per_source", max_handshakes_per_source, RM_MAX_HANDSHAKES_MIN,
		 RM_MAX_HANDSHAKES_MAX, .def = RM_MAX_HANDSHAKES_PER_SOURCE_DEFAULT),
	UINT_KEY(C, "handshake_timeout_ms", handshake_timeout_ms, RM_HANDSHAKE_TIMEOUT_MS_MIN,
		 RM_HANDSHAKE_TIMEOUT_MS_MAX, .def = RM_HANDSHAKE_TIMEOUT_MS_DEFAULT),
	UINT_KEY(C, "session_timeout_ms", session_timeout_ms, 0, RM_SESSION_TIMEOUT_MS_MAX,
		 .def = RM_SESSION_TIMEOUT_MS_DEFAULT),
	UINT_KEY(C, "message_timeout_ms", message_timeout_ms, RM_MESSAGE_TIMEOUT_MS_MIN, RM_MESSAGE_TIMEOUT_MS_MAX,
		 .def = RM_MESSAGE_TIMEOUT_MS_DEFAULT),
	UINT_KEY(C, "dead_peer_timeout_ms", dead_peer_timeout_ms, RM_DEAD_PEER_TIMEOUT_MS_MIN,
		 RM_DEAD_PEER_TIMEOUT_MS_MAX, .def = RM_DEAD_PEER_TIMEOUT_MS_DEFAULT),
	UINT_KEY(C, "max_raw_bytes", max_raw_bytes, 0, RM_MAX_RAW_BYTES_MAX, .def = RM_MAX_RAW_BYTES_DEFAULT),
	UINT_KEY(C, "max_raw_bytes_per_session", max_raw_bytes_per_session, 0, RM_MAX_RAW_BYTES_MAX,
		 .def = RM_MAX_RAW_BYTES_PER_SESSION_DEFAULT),
	UINT_KEY(C, "max_memory_bytes", max_memory_bytes, RM_MAX_MEMORY_BYTES_MIN, RM_MAX_MEMORY_BYTES_MAX,
		 .def = RM_MAX_MEMORY_BYTES_DEFAULT),
	UINT_KEY(C, "max_memory_bytes_per_session", max_memory_bytes_per_session, 0, RM_MAX_MEMORY_BYTES_MAX),
	{ 0 },
};
#undef C

/* Every [capture] key: capture_settings.c reads it into struct rm_capture_settings. */
static int read_capture(struct rm_config_parse *ps, void *sec, const struct rm_config_key *k, const char *value)
{
	char reason[256] = "";

	if (rm_capture_key(sec, k->key, value, ps->line, reason, sizeof(reason)) < 0)
		return fail(ps, "%s", reason);
	return 1;
}

#define P struct rm_capture_settings
static const struct rm_config_key capture_keys[] = {
	FUNC_KEY(P, "encapsulation", encap, read_capture, .def = RM_ENCAP_PLAIN),
	FUNC_KEY(P, "vxlan_port", vxlan_port, read_capture, .def = RM_VXLAN_PORT),
	FUNC_KEY(P, "rspan_vlan", rspan_vlan, read_capture),
	FUNC_KEY(P, "mirror_sessions", auto_sessions, read_capture),
	LIST_KEY(P, "observation_point", points, read_capture),
	{ 0 },
};
#undef P

#define NO_TLS ((size_t)-1)
/*
 * A section: its RM_CONFIG_* bit, its settings in struct rm_config_file, its
 * keys, its TLS settings, whether its header may come again ([provision]:
 * only connection lines, which add up; every other section once).
 */
static const struct config_section {
	const char *name;
	unsigned int bit;
	size_t off;
	const struct rm_config_key *keys;
	size_t tls_off; /* in the section's settings, or NO_TLS */
	int repeatable;
} sections[] = {
	{ "meter", RM_CONFIG_METER, offsetof(struct rm_config_file, meter), meter_keys, NO_TLS, 0 },
	{ "capture", RM_CONFIG_CAPTURE, offsetof(struct rm_config_file, capture), capture_keys, NO_TLS, 0 },
	{ "provision", RM_CONFIG_PROVISION, 0, provision_keys, NO_TLS, 1 },
	{ "export", RM_CONFIG_EXPORT, offsetof(struct rm_config_file, export), export_keys,
	  offsetof(struct rm_export_settings, tls), 0 },
	{ "collect", RM_CONFIG_COLLECT, offsetof(struct rm_config_file, collect), collect_keys,
	  offsetof(struct rm_collect_settings, tls), 0 },
};

#define N_SECTIONS (sizeof(sections) / sizeof(sections[0]))
_Static_assert(N_SECTIONS <= CONFIG_MAX_SECTIONS, "CONFIG_MAX_SECTIONS: room for every section");

/* The defaults of one table's keys into the settings sec, which are zero. */
static void put_defaults(const struct rm_config_key *t, void *sec)
{
	for (; t->key; t++) {
		char *dst = (char *)sec + t->off;

		if (t->def_text)
			snprintf(dst, t->size, "%s", t->def_text);
		else if (t->def)
			rm_opt_put_uint(dst, t->size, t->def);
	}
}

void rm_config_defaults(struct rm_config_file *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < N_SECTIONS; i++) {
		char *sec = (char *)cfg + sections[i].off;

		put_defaults(sections[i].keys, sec);
		if (sections[i].tls_off != NO_TLS)
			put_defaults(tls_keys, sec + sections[i].tls_off);
	}
}

void rm_capture_defaults(struct rm_capture_settings *c)
{
	memset(c, 0, sizeof(*c));
	put_defaults(capture_keys, c);
}

static const struct config_section *find_section(const char *name)
{
	for (size_t i = 0; i < N_SECTIONS; i++)
		if (!strcmp(sections[i].name, name))
			return &sections[i];
	return NULL;
}

/* A header line "[name]" (after blanks, as inih reads it): a section other than [provision] only once. */
static void note_section(struct rm_config_parse *ps, const char *line)
{
	const char *p = line + strspn(line, " \t"), *end;
	size_t i;

	if (*p != '[' || !(end = strchr(p, ']')))
		return;
	for (i = 0; i < N_SECTIONS; i++)
		if (strlen(sections[i].name) == (size_t)(end - p - 1) && !strncmp(sections[i].name, p + 1, end - p - 1))
			break;
	if (i == N_SECTIONS)
		return; /* unknown: refused at its first key */
	if (ps->section_line[i] && !sections[i].repeatable)
		fail(ps, "section [%s] given twice (first at line %d); merge the two", sections[i].name,
		     ps->section_line[i]);
	else if (!ps->section_line[i])
		ps->section_line[i] = ps->line;
}

/* A key given again in its section: 1 (the reason kept in ps), 0 when this is its first line or it is a list. */
static int key_again(struct rm_config_parse *ps, const struct config_section *s, const struct rm_config_key *k,
		     const char *section)
{
	size_t n = 0, i;
	int *first;

	if (k->repeatable)
		return 0;
	while (s->keys[n].key)
		n++;
	i = k >= s->keys && k < s->keys + n ? (size_t)(k - s->keys) : n + (size_t)(k - tls_keys);
	if (i >= CONFIG_MAX_KEYS)
		return 0; /* cannot happen: the tables are smaller (test_config) */
	first = &ps->key_line[s - sections][i];
	if (!*first) {
		*first = ps->line;
		return 0;
	}
	if (ps->indented)
		fail(ps,
		     "an indented line continues '%s' of line %d (inih reads it as a second value); "
		     "unindent it or join the lines",
		     k->key, *first);
	else
		fail(ps, "'%s' given twice in [%s] (first at line %d); keep one", k->key, section, *first);
	return 1;
}

static const struct rm_config_key *find_key(const struct rm_config_key *t, const char *name)
{
	for (; t->key; t++)
		if (!strcmp(t->key, name))
			return t;
	return NULL;
}

const struct rm_config_key *rm_config_key(const char *section, const char *key)
{
	const struct config_section *s = find_section(section);

	return s ? find_key(s->keys, key) : NULL;
}

/* value of key k into the section's settings sec: 1, or 0 with the reason kept. */
static int read_key(struct rm_config_parse *ps, void *sec, const struct rm_config_key *k, const char *value)
{
	char *dst = (char *)sec + k->off, reason[256];
	uint64_t x;

	switch (k->kind) {
	case RM_KEY_UINT:
		/* the message is the options' one (opts.h) */
		if (rm_opt_uint(k->key, value, k->lo, k->hi, &x, reason, sizeof(reason)))
			return fail(ps, "%s", reason);
		rm_opt_put_uint(dst, k->size, x);
		return 1;
	case RM_KEY_STR:
		return copy_str(ps, dst, k->size, k->key, value);
	case RM_KEY_BOOL:
		if (parse_bool(value, (int *)dst))
			return fail(ps, "%s: '%s' is not yes or no", k->key, value);
		return 1;
	case RM_KEY_CHOICE:
		if (strcmp(value, k->names[0]) && strcmp(value, k->names[1]))
			return fail(ps, "%s: '%s' is not '%s' or '%s'", k->key, value, k->names[0], k->names[1]);
		*(int *)dst = !strcmp(value, k->names[1]);
		return 1;
	case RM_KEY_FUNC:
		return k->read(ps, sec, k, value);
	}
	return 0;
}

int rm_config_key_read(const struct rm_config_key *k, void *sec, const char *value, char *err, size_t errlen)
{
	struct rm_config_parse ps = { 0 };

	if (k->repeatable) {
		rm_errf(err, errlen, "%s: a list, not one value", k->key);
		return -EINVAL;
	}
	if (read_key(&ps, sec, k, value))
		return 0;
	rm_errf(err, errlen, "%s", ps.reason);
	return -EINVAL;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct rm_config_parse *ps = user;
	const struct config_section *s;
	const struct rm_config_key *k;
	char *sec;

	if (ps->failed)
		return 0;
	s = find_section(section);
	if (!s)
		return fail(ps, "unknown section [%s]", section);
	ps->cfg->sections |= s->bit;
	sec = (char *)ps->cfg + s->off;
	k = find_key(s->keys, name);
	if (!k && s->tls_off != NO_TLS) {
		k = find_key(tls_keys, name);
		sec += s->tls_off;
	}
	if (!k)
		return fail(ps, "unknown key '%s' in [%s]", name, section);
	if (key_again(ps, s, k, section))
		return 0;
	if (s->bit == RM_CONFIG_COLLECT && (!strncmp(name, "max_memory_bytes", 16) || !strcmp(name, "max_handshakes")))
		ps->memory_line = ps->line;
	return read_key(ps, sec, k, value);
}

int rm_config_load(const char *path, struct rm_config_file *cfg, char *err, size_t errlen)
{
	struct rm_config_parse ps = { .cfg = cfg, .at_eol = 1 };
	struct stat sb;
	int line, fd;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer; a regular file ignores it. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		rm_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		rm_errf(err, errlen, "%s: not a regular file (%s); give the configuration file", path,
			S_ISDIR(sb.st_mode)    ? "a directory"
			: S_ISCHR(sb.st_mode)  ? "a character device"
			: S_ISBLK(sb.st_mode)  ? "a block device"
			: S_ISFIFO(sb.st_mode) ? "a FIFO"
			: S_ISSOCK(sb.st_mode) ? "a socket"
					       : "of another type");
		close(fd);
		return -1;
	}
	ps.f = fdopen(fd, "r");
	if (!ps.f) {
		rm_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	line = ini_parse_stream(line_reader, &ps, handler, &ps);
	fclose(ps.f);
	if (line == -2) {
		rm_errf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	/* The first error wins: a rejected value, or a line inih cannot parse. */
	if (ps.failed && (line <= 0 || ps.fail_line <= line)) {
		rm_errf(err, errlen, "%s:%d: %s", path, ps.fail_line, ps.reason);
		return -1;
	}
	if (line > 0) {
		rm_errf(err, errlen, "%s:%d: syntax error", path, line);
		return -1;
	}
	if (rm_capture_check(&cfg->capture, &line, ps.reason, sizeof(ps.reason))) {
		if (line > 0)
			rm_errf(err, errlen, "%s:%d: %s", path, line, ps.reason);
		else
			rm_errf(err, errlen, "%s: [capture]: %s", path, ps.reason);
		return -1;
	}
	/* The memory budget against the handshake reservation: at the last key it depends on, else [collect]'s header. */
	if (cfg->sections & RM_CONFIG_COLLECT && rm_collect_memory_check(&cfg->collect, ps.reason, sizeof(ps.reason))) {
		rm_errf(err, errlen, "%s:%d: %s", path,
			ps.memory_line ? ps.memory_line : ps.section_line[find_section("collect") - sections],
			ps.reason);
		return -1;
	}
	/* Export is on when a collector is named; the other [export] keys
	 * (report_interval_ms, ...) also apply to reports printed locally. */
	cfg->export.enabled = cfg->export.collector[0] != 0;
	if (cfg->export.enabled && !cfg->export.port)
		cfg->export.port = cfg->export.tls.plain_tcp ? RM_IPFIX_PORT_TCP : RM_IPFIX_PORT_TLS;
	return 0;
}

int rm_collect_store_check(const struct rm_collect_settings *cs, char *err, size_t errlen)
{
	if (!cs->store[0] && !cs->db[0]) {
		rm_errf(err, errlen,
			"store: missing (store = sqlite:FILE or clickhouse:URL, or db = FILE: where the collector "
			"stores)");
		return -EINVAL;
	}
	if (strncmp(cs->store, "clickhouse:", 11) && (cs->store_credentials[0] || cs->store_ca[0])) {
		rm_errf(err, errlen, "store_credentials and store_ca are for a clickhouse: store");
		return -EINVAL;
	}
	return 0;
}

const char *rm_collect_store_name(const struct rm_collect_settings *cs)
{
	return cs->store[0] ? cs->store : cs->db;
}

uint64_t rm_collect_memory_share(const struct rm_collect_settings *cs)
{
	return cs->max_memory_bytes_per_session ? cs->max_memory_bytes_per_session
						: cs->max_memory_bytes / RM_MEMORY_SHARE_DIVISOR;
}

int rm_collect_memory_share_check(const struct rm_collect_settings *cs, char *err, size_t errlen)
{
	uint64_t v = cs->max_memory_bytes_per_session;

	if (v && v < RM_MAX_MEMORY_BYTES_PER_SESSION_MIN) {
		rm_errf(err, errlen,
			"max_memory_bytes_per_session %" PRIu64 " is below %llu (the largest Template and 84 epochs)"
			"; 0 is max_memory_bytes / %u",
			v, RM_MAX_MEMORY_BYTES_PER_SESSION_MIN, RM_MEMORY_SHARE_DIVISOR);
		return -EINVAL;
	}
	if (v > cs->max_memory_bytes) {
		rm_errf(err, errlen, "max_memory_bytes_per_session %" PRIu64 " is above max_memory_bytes %" PRIu64, v,
			cs->max_memory_bytes);
		return -EINVAL;
	}
	return 0;
}

int rm_collect_memory_check(const struct rm_collect_settings *cs, char *err, size_t errlen)
{
	uint64_t need = (uint64_t)cs->max_handshakes * RM_BUDGET_HANDSHAKE_BYTES + RM_BUDGET_SESSION_BYTES;

	if (cs->max_memory_bytes < need) {
		rm_errf(err, errlen,
			"max_memory_bytes %" PRIu64
			" is below max_handshakes %u x %u bytes plus one session (%u bytes): "
			"%" PRIu64,
			cs->max_memory_bytes, cs->max_handshakes, RM_BUDGET_HANDSHAKE_BYTES, RM_BUDGET_SESSION_BYTES,
			need);
		return -EINVAL;
	}
	return rm_collect_memory_share_check(cs, err, errlen);
}
