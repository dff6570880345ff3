// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_config.c - the configuration file parser (user/common/config.c) against its
 * reference, docs/configuration.md, and the shipped example,
 * docs/rocemeter.conf.example:
 *   - the defaults are the documented ones;
 *   - the example is accepted and yields the values written in it (the
 *     expected values below are read off the example's text by hand);
 *   - bad lines are refused with "PATH:LINE: reason", at the exact line:
 *     unknown key and section, W out of 1..2^22, bad address, mixed address
 *     families, destination QP above 0xffffff, bad P_Key, too many peer
 *     names, malformed lines, a NUL byte, a key or section given twice (the
 *     lists excepted: connection, peer_name, observation_point, [provision]);
 *     the first error wins.
 * Run from the source tree (scripts/run-tests does), or set ROCEMETER_SRCDIR.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "common/config.h"

static struct rm_config_file cfg; /* large: static */
static char err[1024];

static const uint8_t v4_192_0_2_10[16] = { 192, 0, 2, 10 };
static const uint8_t v4_192_0_2_20[16] = { 192, 0, 2, 20 };
static const uint8_t v4_198_51_100_7[16] = { 198, 51, 100, 7 };
static const uint8_t v4_198_51_100_8[16] = { 198, 51, 100, 8 };
static const uint8_t v6_db8_10[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x10 };
static const uint8_t v6_db8_20[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x20 };

/* Write text to a fresh temporary file; its path goes to path. */
static void write_tmp(char path[64], const char *text)
{
	int fd;

	snprintf(path, 64, "/tmp/rm-test-config-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Load text; returns rm_config_load()'s result, the message in err. */
static int load_text(const char *text, char path[64])
{
	int r;

	write_tmp(path, text);
	rm_config_defaults(&cfg);
	err[0] = 0;
	r = rm_config_load(path, &cfg, err, sizeof(err));
	unlink(path);
	return r;
}

/*
 * text must be refused at line `line`, the reason containing `needle`.
 * The message is exactly "PATH:LINE: reason".
 */
static void expect_error(const char *text, int line, const char *needle)
{
	char path[64], prefix[128];

	assert_int_equal(load_text(text, path), -1);
	snprintf(prefix, sizeof(prefix), "%s:%d: ", path, line);
	if (strncmp(err, prefix, strlen(prefix)) != 0)
		fail_msg("expected a message starting with '%s', got '%s'", prefix, err);
	if (!strstr(err + strlen(prefix), needle))
		fail_msg("expected '%s' in the reason, got '%s'", needle, err);
	assert_true(strlen(err) > strlen(prefix) + strlen(needle) - 1);
}

static void expect_ok(const char *text)
{
	char path[64];

	if (load_text(text, path) != 0)
		fail_msg("refused: %s", err);
}

/* docs/configuration.md, "Defaults". */
static void defaults_are_documented(void **state)
{
	rm_config_defaults(&cfg);
	assert_int_equal(cfg.meter.window, 4194304); /* 2^22 */
	assert_int_equal(cfg.meter.max_contexts, 65536);
	assert_int_equal(cfg.meter.namespace_vlan, 0);
	assert_int_equal(cfg.meter.observation_point_id, 0);
	assert_int_equal(cfg.meter.provision_all, 0);
	assert_int_equal(cfg.meter.idle_timeout_ms, 60000);
	assert_int_equal(cfg.meter.generation_verified, 0);
	assert_int_equal(cfg.meter.evict, 0);
	assert_int_equal(cfg.meter.max_violations, 65536);
	assert_int_equal(cfg.meter.max_windows, 0); /* automatic */
	assert_int_equal(cfg.meter.unattributed_is_loss, 1);
	assert_int_equal(cfg.meter.census, 0);
	assert_int_equal(cfg.n_provision, 0);
	assert_int_equal(cfg.export.enabled, 0);
	assert_int_equal(cfg.export.pen, 32473);
	assert_int_equal(cfg.export.observation_domain, 0);
	assert_int_equal(cfg.export.report_interval_ms, 10000);
	assert_int_equal(cfg.export.queue_records, 65536);
	assert_int_equal(cfg.export.tls.plain_tcp, 0);
	assert_string_equal(cfg.collect.listen, "[::]:4740");
	assert_int_equal(cfg.collect.tls.plain_tcp, 0);
	assert_int_equal(cfg.collect.max_sessions, 64);
	assert_int_equal(cfg.collect.max_epochs, 100000);
	assert_int_equal(cfg.collect.max_raw_records, 100000);
	assert_int_equal(cfg.collect.inactivity_timeout_ms, 600000);
	/* docs/collector.md "Collector limits" */
	assert_int_equal(cfg.collect.max_handshakes, 16);
	assert_int_equal(cfg.collect.max_handshakes_per_source, 4);
	assert_int_equal(cfg.collect.handshake_timeout_ms, 5000);
	assert_int_equal(cfg.collect.session_timeout_ms, 900000);
	assert_int_equal(cfg.collect.message_timeout_ms, 30000);
	assert_int_equal(cfg.collect.dead_peer_timeout_ms, 60000);
	assert_int_equal(cfg.collect.max_raw_bytes, 67108864);
	assert_int_equal(cfg.collect.max_raw_bytes_per_session, 8388608);
	assert_int_equal(cfg.collect.max_memory_bytes, 1073741824);
}

/*
 * docs/configuration.md, "[capture]" and "[collect]": the defaults that
 * defaults_are_documented does not name, each filled from its key's entry.
 */
static void more_defaults_are_documented(void **state)
{
	memset(&cfg, 0xa5, sizeof(cfg)); /* no field left as it was */
	rm_config_defaults(&cfg);
	assert_int_equal(cfg.sections, 0);
	assert_int_equal(cfg.capture.encap, 0x01); /* plain: RM_ENCAP_PLAIN, include/rocemeter */
	assert_int_equal(cfg.capture.vxlan_port, 4789);
	assert_int_equal(cfg.capture.rspan_vlan, 0);
	assert_int_equal(cfg.capture.auto_sessions, 0); /* table */
	assert_int_equal(cfg.capture.n_points, 0);
	assert_int_equal(cfg.export.port, 0); /* the transport's, after loading */
	assert_string_equal(cfg.export.collector, "");
	assert_string_equal(cfg.meter.metrics, "");
	assert_int_equal(cfg.meter.metrics_connections, 0);
	assert_string_equal(cfg.collect.store_spool_dir, "/var/lib/rocemeter/spool");
	assert_int_equal(cfg.collect.store_buffer_bytes, 67108864);
	assert_int_equal(cfg.collect.max_observation_points, 1024);
	assert_int_equal(cfg.collect.max_memory_bytes_per_session, 0); /* max_memory_bytes / 4 */
	assert_string_equal(cfg.collect.store, "");
	assert_string_equal(cfg.collect.db, "");
	assert_string_equal(cfg.collect.collector_id, "");
	assert_string_equal(cfg.collect.metrics, "");
	assert_int_equal(cfg.collect.tls.n_peer_names, 0);
	memset(&cfg.capture, 0xa5, sizeof(cfg.capture));
	rm_capture_defaults(&cfg.capture);
	assert_int_equal(cfg.capture.encap, 0x01);
	assert_int_equal(cfg.capture.vxlan_port, 4789);
	assert_int_equal(cfg.capture.n_points, 0);
}

/* The export port follows the transport when it is not given. */
static void export_port_follows_transport(void **state)
{
	expect_ok("[export]\ncollector = c.example\n");
	assert_int_equal(cfg.export.enabled, 1);
	assert_int_equal(cfg.export.port, 4740);
	expect_ok("[export]\ncollector = c.example\ntransport = tcp\n");
	assert_int_equal(cfg.export.tls.plain_tcp, 1);
	assert_int_equal(cfg.export.port, 4739);
	expect_ok("[export]\ncollector = c.example\ntransport = tcp\nport = 9999\n");
	assert_int_equal(cfg.export.port, 9999);
}

static void example_file(void **state)
{
	const char *dir = getenv("ROCEMETER_SRCDIR");
	char path[512];
	const struct rm_provision *p;

	snprintf(path, sizeof(path), "%s/docs/rocemeter.conf.example", dir && *dir ? dir : ".");
	rm_config_defaults(&cfg);
	if (rm_config_load(path, &cfg, err, sizeof(err)))
		fail_msg("the example is refused: %s", err);

	assert_int_equal(cfg.meter.window, 4194304); /* 2^22 */
	assert_int_equal(cfg.meter.max_contexts, 65536);
	assert_int_equal(cfg.meter.namespace_vlan, 0);
	assert_int_equal(cfg.meter.observation_point_id, 0);
	assert_int_equal(cfg.meter.provision_all, 0);
	assert_int_equal(cfg.meter.idle_timeout_ms, 60000);
	assert_int_equal(cfg.meter.generation_verified, 0);
	assert_int_equal(cfg.meter.evict, 0);
	assert_int_equal(cfg.meter.max_violations, 65536);
	assert_int_equal(cfg.meter.max_windows, 0); /* automatic */
	assert_int_equal(cfg.meter.unattributed_is_loss, 1);
	assert_int_equal(cfg.meter.census, 0);

	/* connection = 192.0.2.10 192.0.2.20 0x000123 0xffff */
	assert_int_equal(cfg.n_provision, 3);
	p = &cfg.provision[0];
	assert_int_equal(p->family, 4);
	assert_memory_equal(p->src, v4_192_0_2_10, 16);
	assert_memory_equal(p->dst, v4_192_0_2_20, 16);
	assert_int_equal(p->any_qp, 0);
	assert_int_equal(p->dest_qp, 0x123);
	assert_int_equal(p->any_pkey, 0);
	assert_int_equal(p->pkey, 0xffff);
	/* connection = 2001:db8::10 2001:db8::20 any 0x8001 */
	p = &cfg.provision[1];
	assert_int_equal(p->family, 6);
	assert_memory_equal(p->src, v6_db8_10, 16);
	assert_memory_equal(p->dst, v6_db8_20, 16);
	assert_int_equal(p->any_qp, 1);
	assert_int_equal(p->any_pkey, 0);
	assert_int_equal(p->pkey, 0x8001);
	/* connection = 198.51.100.7 198.51.100.8 4660 any */
	p = &cfg.provision[2];
	assert_int_equal(p->family, 4);
	assert_memory_equal(p->src, v4_198_51_100_7, 16);
	assert_memory_equal(p->dst, v4_198_51_100_8, 16);
	assert_int_equal(p->any_qp, 0);
	assert_int_equal(p->dest_qp, 4660);
	assert_int_equal(p->any_pkey, 1);

	assert_int_equal(cfg.export.enabled, 1);
	assert_string_equal(cfg.export.collector, "collector.example.net");
	assert_int_equal(cfg.export.port, 4740);
	assert_int_equal(cfg.export.tls.plain_tcp, 0);
	assert_string_equal(cfg.export.tls.ca, "/etc/rocemeter/pki/ca.pem");
	assert_string_equal(cfg.export.tls.cert, "/etc/rocemeter/pki/exporter.pem");
	assert_string_equal(cfg.export.tls.key, "/etc/rocemeter/pki/exporter.key");
	assert_int_equal(cfg.export.tls.n_peer_names, 2);
	assert_string_equal(cfg.export.tls.peer_names[0], "collector.example.net");
	assert_string_equal(cfg.export.tls.peer_names[1], "collector-standby.example.net");
	assert_int_equal(cfg.export.pen, 32473);
	assert_int_equal(cfg.export.observation_domain, 0);
	assert_int_equal(cfg.export.report_interval_ms, 10000);
	assert_int_equal(cfg.export.queue_records, 65536);

	assert_string_equal(cfg.collect.listen, "[::]:4740");
	assert_string_equal(cfg.collect.db, "/var/lib/rocemeter/collector.db");
	assert_int_equal(cfg.collect.tls.plain_tcp, 0);
	assert_string_equal(cfg.collect.tls.ca, "/etc/rocemeter/pki/ca.pem");
	assert_string_equal(cfg.collect.tls.cert, "/etc/rocemeter/pki/collector.pem");
	assert_string_equal(cfg.collect.tls.key, "/etc/rocemeter/pki/collector.key");
	assert_int_equal(cfg.collect.tls.n_peer_names, 1);
	assert_string_equal(cfg.collect.tls.peer_names[0], "exporter1.example.net");
	assert_int_equal(cfg.collect.max_sessions, 64);
	assert_int_equal(cfg.collect.max_epochs, 100000);
	assert_int_equal(cfg.collect.max_raw_records, 100000);
	assert_int_equal(cfg.collect.inactivity_timeout_ms, 600000);
	assert_int_equal(cfg.collect.max_handshakes, 16);
	assert_int_equal(cfg.collect.max_handshakes_per_source, 4);
	assert_int_equal(cfg.collect.handshake_timeout_ms, 5000);
	assert_int_equal(cfg.collect.session_timeout_ms, 900000);
	assert_int_equal(cfg.collect.message_timeout_ms, 30000);
	assert_int_equal(cfg.collect.dead_peer_timeout_ms, 60000);
	assert_int_equal(cfg.collect.max_raw_bytes, 67108864);
	assert_int_equal(cfg.collect.max_raw_bytes_per_session, 8388608);
	assert_int_equal(cfg.collect.max_memory_bytes, 1073741824);
}

/* The collector's limits on a hostile network, each in its field, at the ends of their ranges. */
static void every_collect_limit_key_lands(void **state)
{
	expect_ok("[collect]\n"
		  "max_handshakes = 65536\n"
		  "max_handshakes_per_source = 1\n"
		  "handshake_timeout_ms = 100\n"
		  "session_timeout_ms = 0\n"
		  "message_timeout_ms = 3600000\n"
		  "dead_peer_timeout_ms = 2000\n"
		  "max_raw_bytes = 0\n"
		  "max_raw_bytes_per_session = 1099511627776\n"
		  "max_memory_bytes = 4295229440\n"); /* 65536 handshakes x 65536 + one session: the least */
	assert_int_equal(cfg.collect.max_handshakes, 65536);
	assert_int_equal(cfg.collect.max_handshakes_per_source, 1);
	assert_int_equal(cfg.collect.handshake_timeout_ms, 100);
	assert_int_equal(cfg.collect.session_timeout_ms, 0);
	assert_int_equal(cfg.collect.message_timeout_ms, 3600000);
	assert_int_equal(cfg.collect.dead_peer_timeout_ms, 2000);
	assert_int_equal(cfg.collect.max_raw_bytes, 0);
	assert_int_equal(cfg.collect.max_raw_bytes_per_session, 1099511627776ull);
	assert_int_equal(cfg.collect.max_memory_bytes, 4295229440ull);
	/* The least budget holds one handshake and one session; the file is refused at the later key. */
	expect_ok("[collect]\nmax_handshakes = 1\nmax_memory_bytes = 327680\n");
	assert_int_equal(cfg.collect.max_memory_bytes, 327680);
	expect_error("[collect]\nmax_memory_bytes = 327680\nmax_handshakes = 2\n", 3,
		     "max_memory_bytes 327680 is below max_handshakes 2 x 65536 bytes plus one session");
	expect_error("[collect]\nmax_handshakes = 0\n", 2, "max_handshakes: '0'");
	expect_error("[collect]\nmax_handshakes_per_source = 65537\n", 2, "max_handshakes_per_source");
	expect_error("[collect]\nhandshake_timeout_ms = 99\n", 2, "handshake_timeout_ms");
	expect_error("[collect]\nmessage_timeout_ms = 0\n", 2, "message_timeout_ms");
	expect_error("[collect]\ndead_peer_timeout_ms = 1999\n", 2, "dead_peer_timeout_ms");
	expect_error("[collect]\nmax_raw_bytes = 1099511627777\n", 2, "max_raw_bytes");
	expect_error("[collect]\nmax_memory_bytes = 327679\n", 2,
		     "max_memory_bytes: '327679' is not an integer in 327680..");
}

/*
 * max_memory_bytes_per_session (docs/configuration.md): 0 by default, which
 * is a quarter of max_memory_bytes; otherwise 131072 (the largest Template,
 * 512 + 65535 bytes, and 63 epochs of 1024 bytes) up to max_memory_bytes,
 * refused at the line of the later of the two keys.
 */
static void memory_share(void **state)
{
	rm_config_defaults(&cfg);
	assert_int_equal(cfg.collect.max_memory_bytes_per_session, 0);
	assert_int_equal(rm_collect_memory_share(&cfg.collect), 1073741824 / 4);
	expect_ok("[collect]\nmax_memory_bytes = 8388608\nmax_memory_bytes_per_session = 131072\n");
	assert_int_equal(rm_collect_memory_share(&cfg.collect), 131072);
	expect_ok("[collect]\nmax_memory_bytes = 8388608\n");
	assert_int_equal(rm_collect_memory_share(&cfg.collect), 2097152);
	expect_ok("[collect]\nmax_memory_bytes = 8388608\nmax_memory_bytes_per_session = 8388608\n");
	expect_error("[collect]\nmax_memory_bytes = 8388608\nmax_memory_bytes_per_session = 131071\n", 3,
		     "max_memory_bytes_per_session 131071 is below 131072");
	expect_error("[collect]\nmax_memory_bytes = 8388608\nlisten = :4740\nmax_memory_bytes_per_session = 8388609\n",
		     4, "max_memory_bytes_per_session 8388609 is above max_memory_bytes 8388608");
	/* the later key is the line at fault: here max_memory_bytes, lowered below the share */
	expect_error("[collect]\nmax_memory_bytes_per_session = 4194304\n\nmax_memory_bytes = 4194303\n", 4,
		     "max_memory_bytes_per_session 4194304 is above max_memory_bytes 4194303");
	expect_error("[collect]\nmax_memory_bytes_per_session = 1099511627777\n", 2, "max_memory_bytes_per_session");
}

/* Values other than the defaults, to see that each key lands in its field. */
static void every_meter_key_lands(void **state)
{
	expect_ok("[meter]\n"
		  "window = 4194304\n"
		  "max_contexts = 16777216\n"
		  "namespace = vlan\n"
		  "observation_point_id = 0xffffffffffffffff\n"
		  "provision_all = yes\n"
		  "idle_timeout_ms = 0\n"
		  "generation_verified = on\n"
		  "eviction = oldest\n"
		  "max_violations = 16777216\n"
		  "max_windows = 16777216\n"
		  "unattributed_is_loss = no\n"
		  "census = yes\n");
	assert_int_equal(cfg.meter.window, 4194304);
	assert_int_equal(cfg.meter.max_contexts, 16777216);
	assert_int_equal(cfg.meter.namespace_vlan, 1);
	assert_true(cfg.meter.observation_point_id == UINT64_MAX);
	assert_int_equal(cfg.meter.provision_all, 1);
	assert_int_equal(cfg.meter.idle_timeout_ms, 0);
	assert_int_equal(cfg.meter.generation_verified, 1);
	assert_int_equal(cfg.meter.evict, 1);
	assert_int_equal(cfg.meter.max_violations, 16777216);
	assert_int_equal(cfg.meter.max_windows, 16777216);
	assert_int_equal(cfg.meter.unattributed_is_loss, 0);
	assert_int_equal(cfg.meter.census, 1);
	expect_ok("[meter]\nwindow = 1\nidle_timeout_ms = 31536000000\nmax_violations = 1\n");
	assert_int_equal(cfg.meter.max_violations, 1);
	assert_int_equal(cfg.meter.window, 1);
	assert_true(cfg.meter.idle_timeout_ms == 31536000000ull);
	/* Limits of the provisioning fields. */
	expect_ok("[provision]\nconnection = 0.0.0.0 255.255.255.255 0xffffff 0\n"
		  "connection = :: ffff::1 0 0xffff\n");
	assert_int_equal(cfg.n_provision, 2);
	assert_int_equal(cfg.provision[0].dest_qp, 0xffffff);
	assert_int_equal(cfg.provision[0].pkey, 0);
	assert_int_equal(cfg.provision[1].family, 6);
	assert_int_equal(cfg.provision[1].dest_qp, 0);
	assert_int_equal(cfg.provision[1].pkey, 0xffff);
}

static void unknown_key(void **state)
{
	expect_error("[meter]\nwindow = 64\nwindwo = 64\n", 3, "unknown key 'windwo' in [meter]");
	/* A key of another section is unknown here. */
	expect_error("# comment\n[meter]\n\ncollector = x\n", 4, "unknown key 'collector' in [meter]");
	expect_error("[provision]\nconnection = 10.0.0.1 10.0.0.2 1 any\nconn = x\n", 3, "unknown key 'conn'");
	/* Outside any section. */
	expect_error("window = 64\n", 1, "unknown section");
}

/* inih calls back per key: an unknown section is reported at its first key. */
static void unknown_section(void **state)
{
	expect_error("[meter]\nwindow = 64\n\n[meters]\nwindow = 64\n", 5, "unknown section [meters]");
	expect_error("[Meter]\nwindow = 64\n", 2, "unknown section [Meter]");
}

static void window_range(void **state)
{
	expect_error("[meter]\nwindow = 0\n", 2, "window: '0'");
	expect_error("[meter]\nmax_contexts = 10\nwindow = 4194305\n", 3, "window: '4194305'");
	expect_error("[meter]\nwindow = -1\n", 2, "window");
	expect_error("[meter]\nwindow = 64k\n", 2, "window");
	expect_error("[meter]\nwindow =\n", 2, "window");
	expect_ok("[meter]\nwindow = 4194304\n");
}

static void other_ranges(void **state)
{
	expect_error("[meter]\nmax_contexts = 0\n", 2, "max_contexts");
	expect_error("[meter]\nnamespace = tenant\n", 2, "namespace: 'tenant'");
	expect_error("[meter]\nprovision_all = maybe\n", 2, "provision_all: 'maybe'");
	expect_error("[meter]\neviction = random\n", 2, "eviction: 'random'");
	expect_error("[meter]\nmax_violations = 0\n", 2, "max_violations");
	expect_error("[meter]\nmax_violations = 16777217\n", 2, "max_violations");
	expect_error("[meter]\nmax_windows = 16777217\n", 2, "max_windows");
	expect_error("[meter]\nunattributed_is_loss = sometimes\n", 2, "unattributed_is_loss: 'sometimes'");
	expect_error("[meter]\ncensus = maybe\n", 2, "census: 'maybe' is not yes or no");
	expect_error("[meter]\nidle_timeout_ms = 31536000001\n", 2, "idle_timeout_ms");
	expect_error("[export]\ncollector = c\nport = 0\n", 3, "port");
	expect_error("[export]\ncollector = c\nport = 65536\n", 3, "port");
	expect_error("[export]\ntransport = dtls\n", 2, "transport: 'dtls'");
	expect_error("[export]\npen = 0\n", 2, "pen");
	expect_error("[export]\nreport_interval_ms = 86400001\n", 2, "report_interval_ms");
	expect_error("[collect]\nmax_sessions = 0\n", 2, "max_sessions");
}

static void bad_address(void **state)
{
	expect_error("[provision]\nconnection = 10.0.0.1 10.0.0.2 1 any\nconnection = 10.0.0.300 10.0.0.2 1 any\n", 3,
		     "'10.0.0.300' is not an IPv4 or IPv6 address");
	expect_error("[provision]\nconnection = 10.0.0.1 host.example 1 any\n", 2,
		     "'host.example' is not an IPv4 or IPv6 address");
	expect_error("[provision]\nconnection = 2001:db8::g 2001:db8::1 1 any\n", 2, "'2001:db8::g'");
}

static void mixed_families(void **state)
{
	expect_error("[provision]\n\nconnection = 10.0.0.1 2001:db8::1 1 any\n", 3, "different address families");
	expect_error("[provision]\nconnection = 2001:db8::1 10.0.0.1 any any\n", 2, "different address families");
}

static void bad_qpn(void **state)
{
	expect_error("[provision]\nconnection = 10.0.0.1 10.0.0.2 0x1000000 any\n", 2, "destination QP '0x1000000'");
	expect_error("[provision]\nconnection = 10.0.0.1 10.0.0.2 16777216 any\n", 2, "destination QP '16777216'");
	expect_error("[provision]\nconnection = 10.0.0.1 10.0.0.2 -1 any\n", 2, "destination QP '-1'");
	expect_error("[provision]\nconnection = 10.0.0.1 10.0.0.2 all any\n", 2, "destination QP 'all'");
}

static void bad_pkey(void **state)
{
	expect_error("[provision]\nconnection = 10.0.0.1 10.0.0.2 1 0x10000\n", 2, "P_Key '0x10000'");
	expect_error("[provision]\nconnection = 10.0.0.1 10.0.0.2 1 default\n", 2, "P_Key 'default'");
}

static void connection_shape(void **state)
{
	expect_error("[provision]\nconnection = 10.0.0.1 10.0.0.2 1\n", 2, "expected 'SRC DST QPN|any PKEY|any'");
	expect_error("[provision]\nconnection = 10.0.0.1 10.0.0.2 1 any extra\n", 2,
		     "expected 'SRC DST QPN|any PKEY|any'");
}

static void too_many_peer_names(void **state)
{
	expect_ok("[export]\ncollector = c\n"
		  "peer_name = a1\npeer_name = a2\npeer_name = a3\npeer_name = a4\n"
		  "peer_name = a5\npeer_name = a6\npeer_name = a7\npeer_name = a8\n");
	assert_int_equal(cfg.export.tls.n_peer_names, 8);
	assert_string_equal(cfg.export.tls.peer_names[7], "a8");
	expect_error("[collect]\n"
		     "peer_name = a1\npeer_name = a2\npeer_name = a3\npeer_name = a4\n"
		     "peer_name = a5\npeer_name = a6\npeer_name = a7\npeer_name = a8\n"
		     "peer_name = a9\n",
		     10, "peer_name: at most 8 names");
}

static void first_error_wins(void **state)
{
	expect_error("[meter]\nwindow = 64\nmax_contexts = 0\nbogus = 1\n[nosuch]\nx = 1\n", 3, "max_contexts: '0'");
}

static void syntax_error(void **state)
{
	expect_error("[meter]\nwindow = 64\nthis line has no equals sign\n", 3, "syntax error");
	expect_error("[meter\nwindow = 64\n", 1, "syntax error");
}

/* A line longer than inih's line buffer is refused at its own line (inih
 * would read its rest as another line). */
static void long_line(void **state)
{
	char text[1024];

	snprintf(text, sizeof(text), "[meter]\n# %0500d\nwindow = 0\n", 0);
	expect_error(text, 2, "line longer than");
	snprintf(text, sizeof(text), "[export]\nca = /%0300d\nbogus = 1\n", 0);
	expect_error(text, 2, "line longer than");
	/* Up to inih's line buffer, a line is fine. */
	snprintf(text, sizeof(text), "[meter]\n# %0150d\nwindow = 0\n", 0);
	expect_error(text, 3, "window: '0'");
}

/* len bytes of text (NUL bytes included) must be refused at line `line` with `needle` in the reason. */
static void expect_error_bytes(const char *text, size_t len, int line, const char *needle)
{
	char path[64] = "/tmp/rm-test-config-XXXXXX", prefix[128];
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	rm_config_defaults(&cfg);
	assert_int_equal(rm_config_load(path, &cfg, err, sizeof(err)), -1);
	unlink(path);
	snprintf(prefix, sizeof(prefix), "%s:%d: ", path, line);
	if (strncmp(err, prefix, strlen(prefix)) || !strstr(err, needle))
		fail_msg("expected '%s%s...', got '%s'", prefix, needle, err);
}

#define EXPECT_ERROR_BYTES(lit, line, needle) expect_error_bytes(lit, sizeof(lit) - 1, line, needle)

/*
 * A NUL byte ends a C string: inih read "peer_name = exp\0orter" as "exp"
 * (authorising the peer "exp"), and a NUL elsewhere gave "line longer than
 * 198 characters". Refused at its line and column, wherever it stands.
 */
static void nul_byte(void **state)
{
	EXPECT_ERROR_BYTES("[collect]\nlisten = [::1]:4740\ndb = /tmp/x.db\npeer_name = exp\0orter\n", 4,
			   "a NUL byte at column 16");
	EXPECT_ERROR_BYTES("[meter]\nwin\0dow = 10\nmax_contexts = 5\n", 2, "a NUL byte at column 4");
	EXPECT_ERROR_BYTES("[meter]\n# a comment\0\nwindow = 10\n", 2, "a NUL byte at column 12");
	EXPECT_ERROR_BYTES("[meter]\nwindow = 10\0", 2, "a NUL byte at column 12"); /* no newline at the end */
}

/* A key or a section given twice: refused at the second, naming the first (last-wins was silent). */
static void given_twice(void **state)
{
	expect_error("[meter]\nwindow = 64\nmax_contexts = 5\nwindow = 128\n", 4,
		     "'window' given twice in [meter] (first at line 2); keep one");
	expect_error("[export]\ncollector = 192.0.2.9\nca = /a.pem\nca = /b.pem\n", 4,
		     "'ca' given twice in [export] (first at line 3)");
	expect_error("[collect]\ntransport = tls\nlisten = [::1]:4740\ntransport = tcp\n", 4,
		     "'transport' given twice in [collect] (first at line 2)");
	expect_error("[meter]\nwindow = 64\n[export]\nport = 4739\n[meter]\nmax_contexts = 5\n", 5,
		     "section [meter] given twice (first at line 1); merge the two");
	expect_error("[collect]\nlisten = [::1]:4740\n  [collect]\n", 3,
		     "section [collect] given twice (first at line 1)");
	/* inih takes an indented line as a second value of the key above it */
	expect_error("[meter]\nwindow = 64\n  128\n", 3, "an indented line continues 'window' of line 2");
}

/* What is a list may repeat: connection lines (and [provision] itself), peer_name, observation_point. */
static void lists_repeat(void **state)
{
	expect_ok("[provision]\nconnection = 192.0.2.1 192.0.2.2 1 any\n[meter]\nwindow = 64\n"
		  "[provision]\nconnection = 192.0.2.1 192.0.2.2 2 any\nconnection = 192.0.2.1 192.0.2.2 3 any\n");
	assert_int_equal(cfg.n_provision, 3);
	expect_ok("[export]\ncollector = 192.0.2.9\npeer_name = a.example\npeer_name = b.example\n"
		  "[collect]\nlisten = [::1]:4740\ndb = /tmp/x.db\npeer_name = c.example\n");
	assert_int_equal(cfg.export.tls.n_peer_names, 2);
	assert_int_equal(cfg.collect.tls.n_peer_names, 1);
	expect_ok("[capture]\nencapsulation = erspan\nobservation_point = 101 leaf1 erspan 192.0.2.1 7\n"
		  "observation_point = 102 leaf2 erspan 192.0.2.2 8\n");
	/* the same key in two sections is two keys */
	expect_ok("[meter]\nmetrics = 127.0.0.1:9464\n[collect]\nlisten = [::1]:4740\ndb = /tmp/x.db\n"
		  "metrics = 127.0.0.1:9465\n");
}

static void missing_file(void **state)
{
	rm_config_defaults(&cfg);
	assert_int_equal(rm_config_load("/nonexistent/rocemeter.conf", &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "/nonexistent/rocemeter.conf: cannot open: No such file or directory");
}

/*
 * A directory, a device or a FIFO as the configuration: refused before a
 * byte is read (an empty configuration, an endless read of /dev/zero or a
 * wait for a FIFO's writer were the alternatives). alarm() turns a hang into
 * a failure.
 */
static void not_a_regular_file(void **state)
{
	char fifo[64] = "/tmp/rm-test-config-fifo-XXXXXX";

	alarm(20);
	rm_config_defaults(&cfg);
	assert_int_equal(rm_config_load("/tmp", &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "/tmp: not a regular file (a directory); give the configuration file");
	assert_int_equal(rm_config_load("/dev/zero", &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "/dev/zero: not a regular file (a character device); give the configuration file");
	assert_non_null(mkdtemp(fifo));
	strcat(fifo, "/f");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(rm_config_load(fifo, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ": not a regular file (a FIFO)"));
	unlink(fifo);
	*strrchr(fifo, '/') = 0;
	rmdir(fifo);
	alarm(0);
}

/* Numbers as documented: decimal (a leading 0 is still decimal) or 0x hexadecimal, never octal. */
static void leading_zeros_are_decimal(void **state)
{
	expect_ok("[meter]\nwindow = 010\nmax_contexts = 0x10\nobservation_point_id = 0077\n"
		  "[provision]\nconnection = 192.0.2.10 192.0.2.20 010 0x010\n"
		  "[export]\ncollector = c.test\nport = 08\nqueue_records = 09\n");
	assert_int_equal(cfg.meter.window, 10);
	assert_int_equal(cfg.meter.max_contexts, 16);
	assert_int_equal(cfg.meter.observation_point_id, 77);
	assert_int_equal(cfg.provision[0].dest_qp, 10);
	assert_int_equal(cfg.provision[0].pkey, 16);
	assert_int_equal(cfg.export.port, 8); /* "08" is no octal error: eight */
	assert_int_equal(cfg.export.queue_records, 9);
	expect_error("[meter]\nwindow = 0o10\n", 2, "window: '0o10' is not an integer");
	expect_error("[meter]\nwindow = -010\n", 2, "window: '-010' is not an integer");
}

/* listen: ADDR:PORT, [IPV6]:PORT or :PORT, PORT 1..65535 (70000 is not 4464). */
static void listen_addresses(void **state)
{
	expect_ok("[collect]\nlisten = 127.0.0.1:4740\n");
	expect_ok("[collect]\nlisten = [::1]:0x1284\n");
	expect_ok("[collect]\nlisten = :65535\n");
	expect_error("[collect]\nlisten = 127.0.0.1:70000\n", 2,
		     "listen: '127.0.0.1:70000' is not ADDR:PORT, [IPV6]:PORT or :PORT with PORT in 1..65535");
	expect_error("[collect]\nlisten = 127.0.0.1:0\n", 2, "PORT in 1..65535");
	expect_error("[collect]\nlisten = ::1:4740\n", 2, "PORT in 1..65535"); /* IPv6 needs brackets */
	expect_error("[collect]\nlisten = 127.0.0.1\n", 2, "PORT in 1..65535");
}

/* The sections a file had keys in (check-config checks [collect] only when present). */
static void sections_named(void **state)
{
	expect_ok("[meter]\nwindow = 4\n[collect]\ndb = x.db\n");
	assert_int_equal(cfg.sections, RM_CONFIG_METER | RM_CONFIG_COLLECT);
	expect_ok("[provision]\nconnection = 192.0.2.10 192.0.2.20 any any\n[export]\ncollector = c.test\n");
	assert_int_equal(cfg.sections, RM_CONFIG_PROVISION | RM_CONFIG_EXPORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_are_documented),
		cmocka_unit_test(more_defaults_are_documented),
		cmocka_unit_test(export_port_follows_transport),
		cmocka_unit_test(example_file),
		cmocka_unit_test(memory_share),
		cmocka_unit_test(every_meter_key_lands),
		cmocka_unit_test(every_collect_limit_key_lands),
		cmocka_unit_test(unknown_key),
		cmocka_unit_test(unknown_section),
		cmocka_unit_test(window_range),
		cmocka_unit_test(other_ranges),
		cmocka_unit_test(bad_address),
		cmocka_unit_test(mixed_families),
		cmocka_unit_test(bad_qpn),
		cmocka_unit_test(bad_pkey),
		cmocka_unit_test(connection_shape),
		cmocka_unit_test(too_many_peer_names),
		cmocka_unit_test(first_error_wins),
		cmocka_unit_test(syntax_error),
		cmocka_unit_test(long_line),
		cmocka_unit_test(missing_file),
		cmocka_unit_test(not_a_regular_file),
		cmocka_unit_test(leading_zeros_are_decimal),
		cmocka_unit_test(listen_addresses),
		cmocka_unit_test(sections_named),
		cmocka_unit_test(nul_byte),
		cmocka_unit_test(given_twice),
		cmocka_unit_test(lists_repeat),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
