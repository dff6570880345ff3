// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_status.c - `rocemeter status [IFACE] [--json]`: statistics and live
 * contexts read from the pinned maps (atomic snapshots with BPF_F_LOCK),
 * the daemon's export counters, and the flow-label program's statistics.
 * Stops nothing and changes nothing.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/command.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/paths.h"
#include "flowlabel/flowlabel.h"
#include "meter.h"
#include "pins.h"
#include "common/report_text.h"
#include "rocemeter/ipfix_ie.h"
#include "violations.h"

static void print_ctx_text(const struct rm_ctx_key *k, const struct rm_ctx *v)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	int af = k->family == 6 ? AF_INET6 : AF_INET;
	struct rm_seq_counters snap, *c = &snap;

	rm_seq_snapshot(&v->seq, &snap);
	inet_ntop(af, k->src, src, sizeof(src));
	inet_ntop(af, k->dst, dst, sizeof(dst));
	printf("  %s > %s qp 0x%06x pkey 0x%04x", src, dst, k->dest_qp, k->pkey);
	if (k->vlan[0] || k->vlan[1])
		printf(" vlan %u/%u", k->vlan[0], k->vlan[1]);
	printf(" %s epoch-gen %u W %u requests=%llu skipped=%llu filled=%llu expired=%llu pending=%u repeated=%llu "
	       "unclassified_late=%llu\n",
	       rm_ctx_flag(v, RM_CTX_VIOLATED)   ? "DISABLED(profileViolation)"
	       : rm_ctx_flag(v, RM_CTX_DISABLED) ? "DISABLED(not provisioned)"
	       : rm_seq_active(&v->seq)          ? "open"
						 : "closed",
	       c->epoch_gen, c->window, (unsigned long long)c->requests, (unsigned long long)c->skipped,
	       (unsigned long long)c->filled, (unsigned long long)c->expired, c->pending,
	       (unsigned long long)c->repeated, (unsigned long long)c->unclassified_late);
}

/*
 * The connections a profile violation disabled (maps `violations` and
 * `contexts`) and the fail-safe of a full violations map, as text; with o,
 * as the keys "violations_fail_safe" and "violations" of o instead.
 */
static void violations(const char *ifname, json_t *o)
{
	struct rm_violations_fds f;
	struct rm_violation_entry *v = NULL;
	size_t n = 0;
	char err[512], key[160];
	int fail_safe;
	json_t *a;

	if (rm_violations_open_pinned(ifname, &f, err, sizeof(err)))
		return; /* an attachment of an older version, or being removed */
	fail_safe = rm_violations_fail_safe(&f) > 0;
	if (rm_violations_list(&f, &v, &n)) {
		rm_violations_close(&f);
		return;
	}
	if (!o) {
		if (fail_safe)
			printf("  FAIL-SAFE: the violations map was full; no new connection is metered until "
			       "'rocemeter reenable %s --all'\n",
			       ifname);
		printf("  violations (disabled until 'rocemeter reenable %s ...'):%s\n", ifname, n ? "" : " (none)");
		for (size_t i = 0; i < n; i++) {
			rm_violations_format_key(&v[i].key, key, sizeof(key));
			if (v[i].in_map)
				printf("    %s opcode 0x%02x psn %u %s\n", key, v[i].v.opcode, v[i].v.psn,
				       rm_violation_cause_name(v[i].v.cause));
			else
				printf("    %s (held by its context: the map was full)\n", key);
		}
		goto out;
	}
	a = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct rm_ctx_key *k = &v[i].key;
		int six = k->family == 6;
		json_t *e = json_object();

		json_object_set_new(e, rm_pf_name(six ? RM_PF_SOURCE_IPV6_ADDRESS : RM_PF_SOURCE_IPV4_ADDRESS),
				    rm_json_addr(k->family, k->src));
		json_object_set_new(e, rm_pf_name(six ? RM_PF_DESTINATION_IPV6_ADDRESS : RM_PF_DESTINATION_IPV4_ADDRESS),
				    rm_json_addr(k->family, k->dst));
		json_object_set_new(e, rm_pf_name(RM_PF_RDMA_DESTINATION_QP), json_integer(k->dest_qp));
		json_object_set_new(e, rm_pf_name(RM_PF_RDMA_PARTITION_KEY), json_integer(k->pkey));
		if (k->vlan[0] || k->vlan[1]) {
			json_object_set_new(e, rm_pf_name(RM_PF_VLAN_ID), json_integer(k->vlan[0]));
			json_object_set_new(e, rm_pf_name(RM_PF_DOT1Q_CUSTOMER_VLAN_ID), json_integer(k->vlan[1]));
		}
		json_object_set_new(e, "recorded", json_string(v[i].in_map ? "map" : "context"));
		if (v[i].in_map) {
			json_object_set_new(e, "opcode", json_integer(v[i].v.opcode));
			json_object_set_new(e, "psn", json_integer(v[i].v.psn));
			json_object_set_new(e, "cause", json_string(rm_violation_cause_name(v[i].v.cause)));
		}
		json_array_append_new(a, e);
	}
	json_object_set_new(o, "violations_fail_safe", json_boolean(fail_safe));
	json_object_set_new(o, "violations", a);
out:
	free(v);
	rm_violations_close(&f);
}

/* Pins without a daemon holding the interface's lock are stale. */
static int is_stale(const char *ifname)
{
	int holder, lock = rm_lock_interface(ifname, &holder);

	if (lock < 0)
		return 0;
	rm_unlock_interface(ifname, lock);
	return 1;
}

static json_t *ctx_json(const struct rm_ctx_key *k, const struct rm_ctx *v)
{
	struct rm_seq_counters snap, *c = &snap;
	json_t *o = json_object();
	int six = k->family == 6;

	json_object_set_new(o, rm_pf_name(six ? RM_PF_SOURCE_IPV6_ADDRESS : RM_PF_SOURCE_IPV4_ADDRESS),
			    rm_json_addr(k->family, k->src));
	json_object_set_new(o, rm_pf_name(six ? RM_PF_DESTINATION_IPV6_ADDRESS : RM_PF_DESTINATION_IPV4_ADDRESS),
			    rm_json_addr(k->family, k->dst));
	if (k->vlan[0] || k->vlan[1]) {
		json_object_set_new(o, rm_pf_name(RM_PF_VLAN_ID), json_integer(k->vlan[0]));
		json_object_set_new(o, rm_pf_name(RM_PF_DOT1Q_CUSTOMER_VLAN_ID), json_integer(k->vlan[1]));
	}
	json_object_set_new(o, rm_pf_name(RM_PF_RDMA_DESTINATION_QP), json_integer(k->dest_qp));
	json_object_set_new(o, rm_pf_name(RM_PF_RDMA_PARTITION_KEY), json_integer(k->pkey));
	rm_seq_snapshot(&v->seq, &snap);
	json_object_set_new(o, "state",
			    json_string(rm_ctx_flag(v, RM_CTX_VIOLATED)   ? "violated"
					: rm_ctx_flag(v, RM_CTX_DISABLED) ? "disabled"
					: rm_seq_active(&v->seq)          ? "open"
									  : "closed"));
	json_object_set_new(o, "epoch_generation", json_integer(c->epoch_gen));
	json_object_set_new(o, rm_pf_name(RM_PF_RDMA_SEQUENCE_WINDOW), json_integer(c->window));
	json_object_set_new(o, rm_pf_name(RM_PF_REQUEST_PACKET_TOTAL_COUNT), rm_json_u64(c->requests));
	json_object_set_new(o, rm_pf_name(RM_PF_SKIPPED_PSN_TOTAL_COUNT), rm_json_u64(c->skipped));
	json_object_set_new(o, rm_pf_name(RM_PF_FILLED_PSN_TOTAL_COUNT), rm_json_u64(c->filled));
	json_object_set_new(o, rm_pf_name(RM_PF_EXPIRED_PSN_TOTAL_COUNT), rm_json_u64(c->expired));
	json_object_set_new(o, rm_pf_name(RM_PF_PENDING_PSN_COUNT), json_integer(c->pending));
	json_object_set_new(o, rm_pf_name(RM_PF_REPEATED_PSN_TOTAL_COUNT), rm_json_u64(c->repeated));
	json_object_set_new(o, rm_pf_name(RM_PF_UNCLASSIFIED_LATE_PACKET_TOTAL_COUNT), rm_json_u64(c->unclassified_late));
	return o;
}

/* The flow-label program's status as a JSON value (null when not attached). */
static json_t *flowlabel_json(const char *ifname)
{
	char *buf = NULL;
	size_t len = 0;
	json_t *v = NULL;
	FILE *f = open_memstream(&buf, &len);

	if (f) {
		int rc = rm_flowlabel_status(ifname, f, 1);

		fclose(f);
		if (rc == 0)
			v = json_loads(buf, 0, NULL);
		free(buf);
	}
	return v ? v : json_null();
}

/* The daemon's counters from its stats file (docs/json.md "daemon"), or NULL. */
static json_t *daemon_json(const char *ifname)
{
	char path[512];

	if (rm_paths_run_file(ifname, RM_RUN_STATS, path, sizeof(path)))
		return NULL;
	return json_load_file(path, 0, NULL);
}

/* The window pool (map `windows`) and the contexts of each tier (docs/meter.md "Memory"). */
static json_t *pool_json(const char *ifname, uint64_t inline_ctx, uint64_t pooled_ctx)
{
	struct rm_pool_info pi;
	char path[512];
	json_t *o;
	int fd;

	if (rm_paths_pin(ifname, "windows", path, sizeof(path)) || (fd = bpf_obj_get(path)) < 0)
		return json_null();
	if (rm_meter_read_pool(fd, &pi)) {
		close(fd);
		return json_null();
	}
	close(fd);
	o = json_object();
	json_object_set_new(o, "windows", json_integer(pi.windows));
	json_object_set_new(o, "window_positions", json_integer(pi.positions));
	json_object_set_new(o, "window_bytes", rm_json_u64(pi.bytes));
	json_object_set_new(o, "pooled_contexts", rm_json_u64(pooled_ctx));
	json_object_set_new(o, "inline_contexts", rm_json_u64(inline_ctx));
	return o;
}

/* One interface as text: statistics, contexts, the daemon's counters. */
static void status_text(const char *ifname)
{
	char path[512];
	uint64_t st[RM_STAT__COUNT];
	int stats_fd, ctx_fd, n = 0;
	uint64_t pooled = 0;
	struct rm_ctx_key key, next, *prev = NULL;
	struct rm_ctx val;
	json_t *dj, *pj;

	printf("%s:\n", ifname);
	if (rm_paths_pin(ifname, "stats", path, sizeof(path)) || (stats_fd = bpf_obj_get(path)) < 0) {
		printf("  meter: not attached%s\n", if_nametoindex(ifname) ? "" : " (no such interface)");
		goto flowlabel;
	}
	if (rm_meter_read_stats(stats_fd, st) == 0) {
		printf("  meter statistics:\n");
		for (int i = 0; i < RM_STAT__COUNT; i++)
			printf("    %-26s %" PRIu64 "\n", rm_stat_name(i), st[i]);
	}
	close(stats_fd);
	if (!rm_paths_pin(ifname, "contexts", path, sizeof(path)) && (ctx_fd = bpf_obj_get(path)) >= 0) {
		printf("  contexts:\n");
		while (bpf_map_get_next_key(ctx_fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if (bpf_map_lookup_elem_flags(ctx_fd, &key, &val, BPF_F_LOCK))
				continue; /* removed meanwhile */
			print_ctx_text(&key, &val);
			pooled += rm_seq_pooled(&val.seq);
			n++;
		}
		printf(n ? "" : "    (none)\n");
		close(ctx_fd);
	}
	pj = pool_json(ifname, (uint64_t)n - pooled, pooled);
	if (json_is_object(pj))
		printf("  window pool: %" PRIu64 " windows of %" PRIu64 " positions (%" PRIu64 " bytes each); "
		       "contexts: %" PRIu64 " inline, %" PRIu64 " with a pool window\n",
		       (uint64_t)json_integer_value(json_object_get(pj, "windows")),
		       (uint64_t)json_integer_value(json_object_get(pj, "window_positions")),
		       (uint64_t)json_integer_value(json_object_get(pj, "window_bytes")), (uint64_t)n - pooled, pooled);
	json_decref(pj);
	violations(ifname, NULL);
	if (is_stale(ifname)) {
		printf("  STALE: no rocemeter process owns these pins (run 'rocemeter detach %s')\n", ifname);
		goto flowlabel;
	}
	dj = daemon_json(ifname);
	if (dj) {
		const char *k;
		json_t *v;

		printf("  daemon:\n");
		json_object_foreach(dj, k, v) {
			if (json_is_object(v)) {
				const char *k2;
				json_t *v2;

				printf("    %s:\n", k);
				json_object_foreach(v, k2, v2) {
					char *t = json_dumps(v2, JSON_ENCODE_ANY);

					printf("      %-26s %s\n", k2, t ? t : "?");
					free(t);
				}
				continue;
			}
			char *t = json_dumps(v, JSON_ENCODE_ANY);

			printf("    %-28s %s\n", k, t ? t : "?");
			free(t);
		}
		json_decref(dj);
	}
flowlabel:
	rm_flowlabel_status(ifname, stdout, 0);
}

/* One interface as a JSON object (docs/json.md "status"). */
static json_t *status_json(const char *ifname)
{
	char path[512];
	uint64_t st[RM_STAT__COUNT];
	int stats_fd, ctx_fd;
	uint64_t n = 0, pooled = 0;
	struct rm_ctx_key key, next, *prev = NULL;
	struct rm_ctx val;
	json_t *o = json_object(), *dj;

	json_object_set_new(o, "interface", rm_json_text(ifname));
	if (rm_paths_pin(ifname, "stats", path, sizeof(path)) || (stats_fd = bpf_obj_get(path)) < 0) {
		json_object_set_new(o, "meter", json_null());
		goto flowlabel;
	}
	if (rm_meter_read_stats(stats_fd, st) == 0) {
		json_t *m = json_object();

		for (int i = 0; i < RM_STAT__COUNT; i++)
			json_object_set_new(m, rm_stat_name(i), rm_json_u64(st[i]));
		json_object_set_new(o, "meter", m);
	}
	close(stats_fd);
	if (!rm_paths_pin(ifname, "contexts", path, sizeof(path)) && (ctx_fd = bpf_obj_get(path)) >= 0) {
		json_t *a = json_array();

		while (bpf_map_get_next_key(ctx_fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if (bpf_map_lookup_elem_flags(ctx_fd, &key, &val, BPF_F_LOCK))
				continue; /* removed meanwhile */
			json_array_append_new(a, ctx_json(&key, &val));
			pooled += rm_seq_pooled(&val.seq);
			n++;
		}
		json_object_set_new(o, "contexts", a);
		close(ctx_fd);
		json_object_set_new(o, "window_pool", pool_json(ifname, n - pooled, pooled));
	}
	violations(ifname, o);
	if (is_stale(ifname)) {
		json_object_set_new(o, "stale", json_true());
		goto flowlabel;
	}
	dj = daemon_json(ifname);
	if (dj)
		json_object_set_new(o, "daemon", dj);
flowlabel:
	json_object_set_new(o, "flowlabel", flowlabel_json(ifname));
	return o;
}

static int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, 0, 'j' }, { "help", no_argument, 0, 'h' }, { 0 } };
	int json = 0, opt, count = 0;
	json_t *all = json_array();
	char dir[512];
	DIR *d;
	struct dirent *e;

	while ((opt = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (opt) {
		case 'j': json = 1; break;
		case 'h':
			printf("Usage: rocemeter status [IFACE] [--json]\n\n"
			       "Show the meter's statistics and live contexts (atomic snapshots of the\n"
			       "pinned maps), the connections a profile violation disabled (and the\n"
			       "fail-safe of a full violations map: 'rocemeter reenable'), the daemon's\n"
			       "report and export counters (records sent, dropped because the queue was\n"
			       "full, without a session, or with a lost session), and the flow-label\n"
			       "program's statistics. Without IFACE: every interface with pins under\n"
			       "/sys/fs/bpf/rocemeter/. The statistics are described in docs/meter.md.\n\n"
			       "Options:\n"
			       "  -j, --json   one JSON array, one object per interface (docs/json.md)\n"
			       "  -h, --help   this text\n");
			return RM_EXIT_OK;
		default: return RM_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		for (int i = optind; i < argc; i++) {
			if (json)
				json_array_append_new(all, status_json(argv[i]));
			else
				status_text(argv[i]);
			count++;
		}
	} else {
		if (rm_paths_pin_dir("", dir, sizeof(dir)) == 0 && (d = opendir(dir))) {
			while ((e = readdir(d))) {
				if (e->d_name[0] == '.')
					continue;
				if (json)
					json_array_append_new(all, status_json(e->d_name));
				else
					status_text(e->d_name);
				count++;
			}
			closedir(d);
		}
		if (!count && !json)
			printf("nothing attached (no pins under %s)\n", dir);
	}
	if (json && rm_json_write(stdout, all)) {
		rm_log_cmd(RM_LOG_ERR, "standard output: write error");
		return RM_EXIT_FAIL;
	}
	if (!json)
		json_decref(all);
	return RM_EXIT_OK;
}

RM_COMMAND(status, 30, "show statistics and live contexts of attached meters", cmd_status);
