// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * config.c - the INI configuration file (libinih). See config.h for the
 * sections and README.md "Configuration" for every key.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "limits.h"
#include "metrics.h"
#include "opts.h"
#include "rocemeter/ipfix_ie.h"
#include "store_syntax.h"

void rm_config_defaults(struct rm_config_file *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->meter.window = RM_WINDOW_DEFAULT;
	cfg->meter.max_contexts = RM_MAX_CONTEXTS_DEFAULT;
	cfg->meter.idle_timeout_ms = RM_IDLE_TIMEOUT_MS_DEFAULT;
	cfg->meter.max_violations = RM_MAX_VIOLATIONS_DEFAULT;
	cfg->meter.unattributed_is_loss = 1;
	cfg->export.port = 0; /* resolved from transport after loading */
	cfg->export.pen = RM_IPFIX_DEFAULT_PEN;
	cfg->export.report_interval_ms = RM_REPORT_INTERVAL_MS_DEFAULT;
	cfg->export.queue_records = RM_QUEUE_RECORDS_DEFAULT;
	snprintf(cfg->collect.listen, sizeof(cfg->collect.listen), "[::]:%d", RM_IPFIX_PORT_TLS);
	cfg->collect.max_sessions = RM_MAX_SESSIONS_DEFAULT;
	cfg->collect.max_epochs = RM_MAX_EPOCHS_DEFAULT;
	cfg->collect.max_raw_records = RM_MAX_RAW_RECORDS_DEFAULT;
	cfg->collect.inactivity_timeout_ms = RM_INACTIVITY_TIMEOUT_MS_DEFAULT;
	cfg->collect.max_handshakes = RM_MAX_HANDSHAKES_DEFAULT;
	cfg->collect.max_handshakes_per_source = RM_MAX_HANDSHAKES_PER_SOURCE_DEFAULT;
	cfg->collect.handshake_timeout_ms = RM_HANDSHAKE_TIMEOUT_MS_DEFAULT;
	cfg->collect.session_timeout_ms = RM_SESSION_TIMEOUT_MS_DEFAULT;
	cfg->collect.message_timeout_ms = RM_MESSAGE_TIMEOUT_MS_DEFAULT;
	cfg->collect.dead_peer_timeout_ms = RM_DEAD_PEER_TIMEOUT_MS_DEFAULT;
	cfg->collect.max_raw_bytes = RM_MAX_RAW_BYTES_DEFAULT;
	cfg->collect.max_raw_bytes_per_session = RM_MAX_RAW_BYTES_PER_SESSION_DEFAULT;
	cfg->collect.max_memory_bytes = RM_MAX_MEMORY_BYTES_DEFAULT;
	cfg->collect.store_buffer_bytes = RM_STORE_BUFFER_BYTES_DEFAULT;
	snprintf(cfg->collect.store_spool_dir, sizeof(cfg->collect.store_spool_dir), "%s", RM_STORE_SPOOL_DIR_DEFAULT);
	rm_capture_defaults(&cfg->capture);
}

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

struct parse_state {
	struct rm_config_file *cfg;
	char reason[256];
	int failed;
	FILE *f;
	int line;      /* physical line being parsed, from 1 */
	int at_eol;    /* the last read ended a line */
	int fail_line; /* line of the first handler error */
};

/* fgets for ini_parse_stream() that keeps the physical line number, so that
 * an error is reported at its own line even after an earlier syntax error. */
static char *line_reader(char *str, int num, void *stream)
{
	struct parse_state *ps = stream;
	char *r;
	size_t n;

	if (ps->at_eol)
		ps->line++;
	r = fgets(str, num, ps->f);
	n = r ? strlen(r) : 0;
	ps->at_eol = n > 0 && r[n - 1] == '\n';
	if (n > 0 && !ps->at_eol) {
		int c = fgetc(ps->f);

		if (c == '\n') {
			ps->at_eol = 1; /* exactly num - 1 characters before the newline */
		} else if (c != EOF) {
			/* inih would parse the rest of the line as a line of its own. */
			ungetc(c, ps->f);
			if (!ps->failed) {
				snprintf(ps->reason, sizeof(ps->reason), "line longer than %d characters", num - 2);
				ps->failed = 1;
				ps->fail_line = ps->line;
			}
		}
	}
	return r;
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

int rm_parse_listen(const char *text, char *host, size_t hlen, uint16_t *port, char *err, size_t errlen)
{
	const char *colon;
	uint64_t p;

	if (!text)
		goto bad;
	if (text[0] == '[') {
		const char *end = strchr(text, ']');

		if (!end || end[1] != ':')
			goto bad;
		colon = end + 1;
		if ((size_t)(end - text - 1) >= hlen)
			goto bad;
		snprintf(host, hlen, "%.*s", (int)(end - text - 1), text + 1);
	} else {
		colon = strrchr(text, ':');
		if (!colon || (size_t)(colon - text) >= hlen || memchr(text, ':', (size_t)(colon - text)))
			goto bad; /* an IPv6 address needs brackets */
		snprintf(host, hlen, "%.*s", (int)(colon - text), text);
	}
	if (rm_parse_uint(colon + 1, RM_PORT_MIN, RM_PORT_MAX, &p))
		goto bad;
	*port = (uint16_t)p;
	return 0;
bad:
	snprintf(err, errlen, "'%s' is not ADDR:PORT, [IPV6]:PORT or :PORT with PORT in %u..%u", text ? text : "",
		 RM_PORT_MIN, RM_PORT_MAX);
	return -EINVAL;
}

/* IPv4 or IPv6 address into 16 bytes (IPv4 in the first 4). Returns the family or -1. */
int rm_parse_addr(const char *s, uint8_t out[16])
{
	memset(out, 0, 16);
	if (inet_pton(AF_INET, s, out) == 1)
		return 4;
	if (inet_pton(AF_INET6, s, out) == 1)
		return 6;
	return -1;
}

static int fail(struct parse_state *ps, const char *fmt, const char *a, const char *b)
{
	if (!ps->failed) {
		snprintf(ps->reason, sizeof(ps->reason), fmt, a, b);
		ps->failed = 1;
		ps->fail_line = ps->line;
	}
	return 0;
}

static int copy_str(struct parse_state *ps, char *dst, size_t cap, const char *name, const char *v)
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
		snprintf(err, errlen, "connection: expected 'SRC DST QPN|any PKEY|any', got '%s'", v);
		return -1;
	}
	f1 = rm_parse_addr(src, p->src);
	f2 = rm_parse_addr(dst, p->dst);
	if (f1 < 0 || f2 < 0) {
		snprintf(err, errlen, "connection: '%s' is not an IPv4 or IPv6 address", f1 < 0 ? src : dst);
		return -1;
	}
	if (f1 != f2) {
		snprintf(err, errlen, "connection: '%s' and '%s' are of different address families", src, dst);
		return -1;
	}
	p->family = (uint8_t)f1;
	if (!strcasecmp(qp, "any")) {
		p->any_qp = 1;
	} else if (rm_parse_uint(qp, 0, RM_QPN_MAX, &x)) {
		snprintf(err, errlen, "connection: destination QP '%s' is not 'any' or 0..0xffffff", qp);
		return -1;
	} else {
		p->dest_qp = (uint32_t)x;
	}
	if (!strcasecmp(pk, "any")) {
		p->any_pkey = 1;
	} else if (rm_parse_uint(pk, 0, RM_PKEY_MAX, &x)) {
		snprintf(err, errlen, "connection: P_Key '%s' is not 'any' or 0..0xffff", pk);
		return -1;
	} else {
		p->pkey = (uint16_t)x;
	}
	return 0;
}

/* connection = SRC DST QPN|any PKEY|any */
static int parse_connection(struct parse_state *ps, const char *v)
{
	struct rm_config_file *cfg = ps->cfg;
	char why[256];

	if (cfg->n_provision >= RM_MAX_PROVISION) {
		char n[16];

		snprintf(n, sizeof(n), "%d", RM_MAX_PROVISION);
		return fail(ps, "too many connection lines (at most %s)%s", n, "");
	}
	if (rm_parse_connection(v, &cfg->provision[cfg->n_provision], why, sizeof(why)))
		return fail(ps, "%s%s", why, "");
	cfg->n_provision++;
	return 1;
}

static int tls_key(struct parse_state *ps, struct rm_tls_settings *t, const char *name, const char *v)
{
	if (!strcmp(name, "transport")) {
		if (!strcmp(v, "tls"))
			t->plain_tcp = 0;
		else if (!strcmp(v, "tcp"))
			t->plain_tcp = 1;
		else
			return fail(ps, "transport: '%s' is not 'tls' or 'tcp'%s", v, "");
		return 1;
	}
	if (!strcmp(name, "ca"))
		return copy_str(ps, t->ca, sizeof(t->ca), name, v);
	if (!strcmp(name, "cert"))
		return copy_str(ps, t->cert, sizeof(t->cert), name, v);
	if (!strcmp(name, "key"))
		return copy_str(ps, t->key, sizeof(t->key), name, v);
	if (!strcmp(name, "peer_name")) {
		if (t->n_peer_names >= RM_MAX_PEER_NAMES) {
			char n[16];

			snprintf(n, sizeof(n), "%d", RM_MAX_PEER_NAMES);
			return fail(ps, "peer_name: at most %s names%s", n, "");
		}
		return copy_str(ps, t->peer_names[t->n_peer_names++], sizeof(t->peer_names[0]), name, v);
	}
	return -1; /* not a TLS key */
}

/* metrics = ADDR:PORT ([meter] and [collect]): checked now, served at start. */
static int metrics_key(struct parse_state *ps, char *dst, size_t len, const char *value)
{
	char host[256], why[200];
	unsigned int port;

	if (rm_metrics_parse_listen("metrics", value, host, sizeof(host), &port, why, sizeof(why)))
		return fail(ps, "%s%s", why, "");
	return copy_str(ps, dst, len, "metrics", value);
}

/* An integer key in lo..hi (limits.h); the message is the options' one. */
#define U64_KEY(key, lo, hi, dst)                                              \
	if (!strcmp(name, key)) {                                              \
		uint64_t x_;                                                   \
		char why_[256];                                                \
		if (rm_opt_uint(name, value, lo, hi, &x_, why_, sizeof(why_))) \
			return fail(ps, "%s%s", why_, "");                     \
		dst = x_;                                                      \
		return 1;                                                      \
	}

/* A [capture] key (capture_settings.c). */
static int capture_key(struct parse_state *ps, const char *name, const char *value)
{
	char why[256];
	int r;

	ps->cfg->sections |= RM_CONFIG_CAPTURE;
	r = rm_capture_key(&ps->cfg->capture, name, value, ps->line, why, sizeof(why));
	if (r < 0)
		return fail(ps, "unknown key '%s' in [%s]", name, "capture");
	return r ? 1 : fail(ps, "%s%s", why, "");
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_state *ps = user;
	struct rm_config_file *cfg = ps->cfg;
	int r;

	if (ps->failed)
		return 0;
	if (!strcmp(section, "meter"))
		cfg->sections |= RM_CONFIG_METER;
	else if (!strcmp(section, "provision"))
		cfg->sections |= RM_CONFIG_PROVISION;
	else if (!strcmp(section, "export"))
		cfg->sections |= RM_CONFIG_EXPORT;
	else if (!strcmp(section, "collect"))
		cfg->sections |= RM_CONFIG_COLLECT;
	if (!strcmp(section, "meter")) {
		U64_KEY("window", RM_WINDOW_MIN, RM_WINDOW_MAX, cfg->meter.window);
		U64_KEY("max_contexts", RM_MAX_CONTEXTS_MIN, RM_MAX_CONTEXTS_MAX, cfg->meter.max_contexts);
		U64_KEY("max_windows", 0, RM_MAX_WINDOWS_MAX, cfg->meter.max_windows);
		U64_KEY("observation_point_id", 0, UINT64_MAX, cfg->meter.observation_point_id);
		U64_KEY("idle_timeout_ms", 0, RM_IDLE_TIMEOUT_MS_MAX, cfg->meter.idle_timeout_ms);
		U64_KEY("max_violations", RM_MAX_VIOLATIONS_MIN, RM_MAX_VIOLATIONS_MAX, cfg->meter.max_violations);
		U64_KEY("metrics_connections", 0, RM_METRICS_CONNECTIONS_MAX, cfg->meter.metrics_connections);
		if (!strcmp(name, "metrics"))
			return metrics_key(ps, cfg->meter.metrics, sizeof(cfg->meter.metrics), value);
		if (!strcmp(name, "namespace")) {
			if (!strcmp(value, "none"))
				cfg->meter.namespace_vlan = 0;
			else if (!strcmp(value, "vlan"))
				cfg->meter.namespace_vlan = 1;
			else
				return fail(ps, "namespace: '%s' is not 'none' or 'vlan'%s", value, "");
			return 1;
		}
		if (!strcmp(name, "eviction")) {
			if (!strcmp(value, "none"))
				cfg->meter.evict = 0;
			else if (!strcmp(value, "oldest"))
				cfg->meter.evict = 1;
			else
				return fail(ps, "eviction: '%s' is not 'none' or 'oldest'%s", value, "");
			return 1;
		}
		if (!strcmp(name, "provision_all")) {
			if (parse_bool(value, &cfg->meter.provision_all))
				return fail(ps, "provision_all: '%s' is not yes or no%s", value, "");
			return 1;
		}
		if (!strcmp(name, "census")) {
			if (parse_bool(value, &cfg->meter.census))
				return fail(ps, "census: '%s' is not yes or no%s", value, "");
			return 1;
		}
		if (!strcmp(name, "rx_dropped_is_loss")) {
			if (parse_bool(value, &cfg->meter.rx_dropped_is_loss))
				return fail(ps, "rx_dropped_is_loss: '%s' is not yes or no%s", value, "");
			return 1;
		}
		if (!strcmp(name, "unattributed_is_loss")) {
			if (parse_bool(value, &cfg->meter.unattributed_is_loss))
				return fail(ps, "unattributed_is_loss: '%s' is not yes or no%s", value, "");
			return 1;
		}
		if (!strcmp(name, "generation_verified")) {
			if (parse_bool(value, &cfg->meter.generation_verified))
				return fail(ps, "generation_verified: '%s' is not yes or no%s", value, "");
			return 1;
		}
	} else if (!strcmp(section, "capture")) {
		return capture_key(ps, name, value);
	} else if (!strcmp(section, "provision")) {
		if (!strcmp(name, "connection"))
			return parse_connection(ps, value);
	} else if (!strcmp(section, "export")) {
		if (!strcmp(name, "collector"))
			return copy_str(ps, cfg->export.collector, sizeof(cfg->export.collector), name, value);
		U64_KEY("port", RM_PORT_MIN, RM_PORT_MAX, cfg->export.port);
		U64_KEY("pen", RM_PEN_MIN, RM_PEN_MAX, cfg->export.pen);
		U64_KEY("observation_domain", 0, UINT32_MAX, cfg->export.observation_domain);
		U64_KEY("report_interval_ms", 0, RM_REPORT_INTERVAL_MS_MAX, cfg->export.report_interval_ms);
		U64_KEY("queue_records", RM_QUEUE_RECORDS_MIN, RM_QUEUE_RECORDS_MAX, cfg->export.queue_records);
		r = tls_key(ps, &cfg->export.tls, name, value);
		if (r >= 0)
			return r;
	} else if (!strcmp(section, "collect")) {
		if (!strcmp(name, "listen")) {
			char host[256], why[200];
			uint16_t port;

			if (rm_parse_listen(value, host, sizeof(host), &port, why, sizeof(why)))
				return fail(ps, "listen: %s%s", why, "");
			return copy_str(ps, cfg->collect.listen, sizeof(cfg->collect.listen), name, value);
		}
		/* db is the older name of store = sqlite:FILE: a file names its store once (docs/configuration.md) */
		if ((!strcmp(name, "db") && cfg->collect.store[0]) || (!strcmp(name, "store") && cfg->collect.db[0]))
			return fail(
				ps,
				"%s: [collect] has both db and store: keep store (db = FILE is store = sqlite:FILE)%s",
				name, "");
		if (!strcmp(name, "db"))
			return copy_str(ps, cfg->collect.db, sizeof(cfg->collect.db), name, value);
		if (!strcmp(name, "store")) {
			char why[240];

			if (!(!strncmp(value, "sqlite:", 7) && value[7]) && strncmp(value, "clickhouse:", 11))
				return fail(ps, "store: '%s' is not sqlite:FILE or clickhouse:URL%s", value, "");
			/* the syntax collect applies (no server contacted): check-config agrees with it */
			if (!strncmp(value, "clickhouse:", 11) &&
			    rm_store_url_parse(value, NULL, 0, NULL, 0, why, sizeof(why)))
				return fail(ps, "store: %s%s", why, "");
			return copy_str(ps, cfg->collect.store, sizeof(cfg->collect.store), name, value);
		}
		if (!strcmp(name, "store_credentials"))
			return copy_str(ps, cfg->collect.store_credentials, sizeof(cfg->collect.store_credentials),
					name, value);
		if (!strcmp(name, "store_ca"))
			return copy_str(ps, cfg->collect.store_ca, sizeof(cfg->collect.store_ca), name, value);
		if (!strcmp(name, "collector_id")) {
			char why[200];

			if (rm_collector_id_check(value, why, sizeof(why)))
				return fail(ps, "%s%s", why, "");
			return copy_str(ps, cfg->collect.collector_id, sizeof(cfg->collect.collector_id), name, value);
		}
		if (!strcmp(name, "store_spool_dir"))
			return copy_str(ps, cfg->collect.store_spool_dir, sizeof(cfg->collect.store_spool_dir), name,
					value);
		U64_KEY("store_buffer_bytes", RM_STORE_BUFFER_BYTES_MIN, RM_STORE_BUFFER_BYTES_MAX,
			cfg->collect.store_buffer_bytes);
		if (!strcmp(name, "metrics"))
			return metrics_key(ps, cfg->collect.metrics, sizeof(cfg->collect.metrics), value);
		U64_KEY("max_sessions", RM_MAX_SESSIONS_MIN, RM_MAX_SESSIONS_MAX, cfg->collect.max_sessions);
		U64_KEY("max_epochs", RM_MAX_EPOCHS_MIN, RM_MAX_EPOCHS_MAX, cfg->collect.max_epochs);
		U64_KEY("max_raw_records", 0, RM_MAX_RAW_RECORDS_MAX, cfg->collect.max_raw_records);
		U64_KEY("inactivity_timeout_ms", 0, RM_INACTIVITY_TIMEOUT_MS_MAX, cfg->collect.inactivity_timeout_ms);
		U64_KEY("max_handshakes", RM_MAX_HANDSHAKES_MIN, RM_MAX_HANDSHAKES_MAX, cfg->collect.max_handshakes);
		U64_KEY("max_handshakes_per_source", RM_MAX_HANDSHAKES_MIN, RM_MAX_HANDSHAKES_MAX,
			cfg->collect.max_handshakes_per_source);
		U64_KEY("handshake_timeout_ms", RM_HANDSHAKE_TIMEOUT_MS_MIN, RM_HANDSHAKE_TIMEOUT_MS_MAX,
			cfg->collect.handshake_timeout_ms);
		U64_KEY("session_timeout_ms", 0, RM_SESSION_TIMEOUT_MS_MAX, cfg->collect.session_timeout_ms);
		U64_KEY("message_timeout_ms", RM_MESSAGE_TIMEOUT_MS_MIN, RM_MESSAGE_TIMEOUT_MS_MAX,
			cfg->collect.message_timeout_ms);
		U64_KEY("dead_peer_timeout_ms", RM_DEAD_PEER_TIMEOUT_MS_MIN, RM_DEAD_PEER_TIMEOUT_MS_MAX,
			cfg->collect.dead_peer_timeout_ms);
		U64_KEY("max_raw_bytes", 0, RM_MAX_RAW_BYTES_MAX, cfg->collect.max_raw_bytes);
		U64_KEY("max_raw_bytes_per_session", 0, RM_MAX_RAW_BYTES_MAX, cfg->collect.max_raw_bytes_per_session);
		U64_KEY("max_memory_bytes", RM_MAX_MEMORY_BYTES_MIN, RM_MAX_MEMORY_BYTES_MAX,
			cfg->collect.max_memory_bytes);
		r = tls_key(ps, &cfg->collect.tls, name, value);
		if (r >= 0)
			return r;
	} else {
		return fail(ps, "unknown section [%s]%s", section, "");
	}
	return fail(ps, "unknown key '%s' in [%s]", name, section);
}

int rm_config_load(const char *path, struct rm_config_file *cfg, char *err, size_t errlen)
{
	struct parse_state ps = { .cfg = cfg, .at_eol = 1 };
	struct stat st;
	int line, fd;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer; a regular file ignores it. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file (%s); give the configuration file", path,
			 S_ISDIR(st.st_mode)    ? "a directory"
			 : S_ISCHR(st.st_mode)  ? "a character device"
			 : S_ISBLK(st.st_mode)  ? "a block device"
			 : S_ISFIFO(st.st_mode) ? "a FIFO"
			 : S_ISSOCK(st.st_mode) ? "a socket"
						: "of another type");
		close(fd);
		return -1;
	}
	ps.f = fdopen(fd, "r");
	if (!ps.f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	line = ini_parse_stream(line_reader, &ps, handler, &ps);
	fclose(ps.f);
	if (line == -2) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	/* The first error wins: a rejected value, or a line inih cannot parse. */
	if (ps.failed && (line <= 0 || ps.fail_line <= line)) {
		snprintf(err, errlen, "%s:%d: %s", path, ps.fail_line, ps.reason);
		return -1;
	}
	if (line > 0) {
		snprintf(err, errlen, "%s:%d: syntax error", path, line);
		return -1;
	}
	if (rm_capture_check(&cfg->capture, &line, ps.reason, sizeof(ps.reason))) {
		if (line > 0)
			snprintf(err, errlen, "%s:%d: %s", path, line, ps.reason);
		else
			snprintf(err, errlen, "%s: [capture]: %s", path, ps.reason);
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
		snprintf(err, errlen,
			 "store: missing (store = sqlite:FILE or clickhouse:URL, or db = FILE: where the collector "
			 "stores)");
		return -EINVAL;
	}
	if (strncmp(cs->store, "clickhouse:", 11) && (cs->store_credentials[0] || cs->store_ca[0])) {
		snprintf(err, errlen, "store_credentials and store_ca are for a clickhouse: store");
		return -EINVAL;
	}
	return 0;
}

const char *rm_collect_store_name(const struct rm_collect_settings *cs)
{
	return cs->store[0] ? cs->store : cs->db;
}

int rm_collect_memory_check(const struct rm_collect_settings *cs, char *err, size_t errlen)
{
	uint64_t need = (uint64_t)cs->max_handshakes * RM_BUDGET_HANDSHAKE_BYTES + RM_BUDGET_SESSION_BYTES;

	if (cs->max_memory_bytes < need) {
		snprintf(err, errlen,
			 "max_memory_bytes %" PRIu64
			 " is below max_handshakes %u x %u bytes plus one session (%u bytes): "
			 "%" PRIu64,
			 cs->max_memory_bytes, cs->max_handshakes, RM_BUDGET_HANDSHAKE_BYTES, RM_BUDGET_SESSION_BYTES,
			 need);
		return -EINVAL;
	}
	return 0;
}
