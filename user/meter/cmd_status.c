// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_status.c - `rocemeter status [IFACE] [--json]`: statistics and live
 * contexts read from the pinned maps (atomic snapshots with BPF_F_LOCK),
 * whether the kernel still runs the meter (live, stale, or busy: a daemon
 * starting or stopping), the connections a profile violation disabled, the
 * daemon's export counters, and the flow-label program's statistics; with
 * --connections, the connection census of `attach --census` instead.
 * Each interface's pins are read once into struct rm_status (status.c),
 * then printed as text or as JSON. Without IFACE, the meters of the other
 * network namespaces on the same bpffs too, read from inside each (setns).
 * The exit status tells whether the meters asked for run. Stops nothing and
 * changes nothing.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "census/census.h"
#include "census/connections.h"
#include "common/command.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/params.h"
#include "common/paths.h"
#include "flowlabel/flowlabel.h"
#include "meter.h"
#include "netns.h"
#include "common/report_text.h"
#include "rocemeter/ipfix_ie.h"
#include "status.h"

/*
 * The exit status of `status IFACE...` (docs/man/rocemeter-status.8): the
 * worst of the interfaces asked for. Not attached: neither the meter nor the
 * flow-label program (with --connections: no census); stale: pins that no
 * attached program and no daemon use; unpinned: the meter runs (its daemon
 * proved, its XDP program attached) but its pins were removed, so that
 * nothing of it can be read or reloaded until it is restarted.
 */
#define STATUS_NOT_ATTACHED 3
#define STATUS_STALE        5
#define STATUS_UNPINNED     6

/*
 * The session of observation point obs in mirror (mirror_json(): the
 * sessions' observation_point, observationPointId and name), or NULL.
 */
static json_t *obs_session(json_t *mirror, unsigned int obs)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(mirror, "sessions"), i, e)
	{
		if (json_integer_value(json_object_get(e, "observation_point")) == (json_int_t)obs)
			return e;
	}
	return NULL;
}

static void print_ctx_text(const struct rm_ctx_key *k, const struct rm_ctx *v, json_t *mirror)
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
	if (k->obs) {
		json_t *e = obs_session(mirror, k->obs);
		const char *name = e ? json_string_value(json_object_get(e, "name")) : NULL;

		printf(" obs %u", k->obs);
		if (e)
			printf(" (%s, observationPointId %" PRIu64 ")", name && name[0] ? name : "auto",
			       (uint64_t)json_integer_value(json_object_get(e, "observationPointId")));
	}
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

/* The violations of status as text. */
static void print_violations_text(const struct rm_status *status, const char *label)
{
	const struct rm_violation_entry *v = status->viol;
	size_t n = status->n_viol;
	char key[160], what[160];

	if (!status->have_violations)
		return;
	if (status->fail_safe)
		printf("  FAIL-SAFE: the violations map was full; no new connection is metered until "
		       "'rocemeter reenable %s --all'\n",
		       label);
	printf("  violations (disabled until 'rocemeter reenable %s ...'):%s\n", label, n ? "" : " (none)");
	for (size_t i = 0; i < n; i++) {
		rm_violations_format_key(&v[i].key, key, sizeof(key));
		if (v[i].in_map) {
			rm_violations_describe(&v[i], what, sizeof(what));
			printf("    %s: %s\n", key, what);
		} else
			printf("    %s (held by its context: the map was full)\n", key);
	}
}

/* The violations of status as the keys "violations_fail_safe" and "violations" of o. */
static void set_violations_json(json_t *o, const struct rm_status *status)
{
	const struct rm_violation_entry *v = status->viol;
	json_t *a;

	if (!status->have_violations)
		return;
	a = json_array();
	for (size_t i = 0; i < status->n_viol; i++) {
		const struct rm_ctx_key *k = &v[i].key;
		int six = k->family == 6;
		json_t *e = json_object();

		json_object_set_new(e, rm_pf_name(six ? RM_PF_SOURCE_IPV6_ADDRESS : RM_PF_SOURCE_IPV4_ADDRESS),
				    rm_json_addr(k->family, k->src));
		json_object_set_new(e,
				    rm_pf_name(six ? RM_PF_DESTINATION_IPV6_ADDRESS : RM_PF_DESTINATION_IPV4_ADDRESS),
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
	json_object_set_new(o, "violations_fail_safe", json_boolean(status->fail_safe));
	json_object_set_new(o, "violations", a);
}

static json_t *ctx_json(const struct rm_ctx_key *k, const struct rm_ctx *v, json_t *mirror)
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
	if (k->obs) {
		json_t *e = obs_session(mirror, k->obs);

		json_object_set_new(o, "observation_point", json_integer(k->obs));
		if (e) {
			json_object_set(o, "observationPointId", json_object_get(e, "observationPointId"));
			json_object_set(o, "observation_point_name", json_object_get(e, "name"));
		}
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
	json_object_set_new(o, rm_pf_name(RM_PF_UNCLASSIFIED_LATE_PACKET_TOTAL_COUNT),
			    rm_json_u64(c->unclassified_late));
	return o;
}

/* The flow-label program's status as a JSON value (null when not attached or unreadable). */
static json_t *flowlabel_json(const char *ifname)
{
	json_t *v = rm_flowlabel_status_json(ifname);

	return v ? v : json_null();
}

/* The window pool and the contexts of each tier, as JSON (null when the pool was not read). */
static json_t *pool_json(const struct rm_status *status)
{
	json_t *o;

	if (!status->have_pool)
		return json_null();
	o = json_object();
	json_object_set_new(o, "windows", json_integer(status->pool.windows));
	json_object_set_new(o, "window_positions", json_integer(status->pool.positions));
	json_object_set_new(o, "window_bytes", rm_json_u64(status->pool.bytes));
	json_object_set_new(o, "pooled_contexts", rm_json_u64(status->pooled));
	json_object_set_new(o, "inline_contexts", rm_json_u64((uint64_t)status->n - status->pooled));
	return o;
}

/*
 * The mirror sessions of status (docs/deployment.md "Proving coverage of
 * every ECMP path") as JSON: per session its observation point, frames,
 * GRE sequence gaps and the last frame's age; the sessions no line names
 * with their frames. NULL when they were not read.
 */
static json_t *mirror_json(const struct rm_status *status)
{
	json_t *o, *a, *u;

	if (!status->have_mirror)
		return NULL;
	o = json_object();
	a = json_array();
	for (size_t i = 0; i < status->n_mirror; i++) {
		const struct rm_mirror_key *key = &status->mirror[i].key;
		const struct rm_mirror_session *v = &status->mirror[i].v;
		json_t *e = rm_capture_key_json(key);

		json_object_set_new(e, "observation_point", json_integer(v->obs));
		json_object_set_new(e, "observationPointId", rm_json_u64(v->id ? v->id : rm_capture_auto_id(key)));
		json_object_set_new(e, "name", rm_json_text(v->name));
		json_object_set_new(e, "frames", rm_json_u64(v->frames));
		json_object_set_new(e, "sequence_gaps", rm_json_u64(v->gaps));
		json_object_set_new(e, "sequence_lost", rm_json_u64(v->lost));
		json_object_set_new(e, "sequence_reordered", rm_json_u64(v->reordered));
		json_object_set_new(e, "truncated", rm_json_u64(v->truncated));
		json_object_set_new(e, "last_frame_ns", rm_json_u64(v->last_ns));
		json_array_append_new(a, e);
	}
	json_object_set_new(o, "sessions", a);
	u = json_array();
	for (size_t i = 0; i < status->n_unknown; i++) {
		json_t *e = rm_capture_key_json(&status->unknown[i].key);

		json_object_set_new(e, "frames", rm_json_u64(status->unknown[i].frames));
		json_array_append_new(u, e);
	}
	json_object_set_new(o, "unknown_sessions", u);
	return o;
}

/* The mirror sessions (mirror_json()) as text lines, when there are any. */
static void mirror_text(json_t *o)
{
	json_t *e;
	size_t i;

	if (!o)
		return;
	json_array_foreach(json_object_get(o, "sessions"), i, e)
	{
		char *t = json_dumps(e, JSON_COMPACT);

		printf("  mirror session: %s\n", t ? t : "?");
		free(t);
	}
	json_array_foreach(json_object_get(o, "unknown_sessions"), i, e)
	{
		char *t = json_dumps(e, JSON_COMPACT);

		printf("  unknown mirror session (not metered): %s\n", t ? t : "?");
		free(t);
	}
}

/* The command that removes k's stale pins. */
static void print_stale_hint(const struct rm_ifkey *k)
{
	if (k->ifname[0])
		printf("(run 'rocemeter detach %s')\n", k->ifname);
	else
		printf("(run 'rocemeter detach --ifindex %u')\n", k->ifindex);
}

/* The daemon's counters (its stats file) as text: one line a value, an object's members indented. */
static void print_daemon_text(json_t *dj)
{
	const char *name;
	json_t *v;

	printf("  daemon:\n");
	json_object_foreach(dj, name, v)
	{
		if (json_is_object(v)) {
			const char *k2;
			json_t *v2;

			printf("    %s:\n", name);
			json_object_foreach(v, k2, v2)
			{
				char *t = json_dumps(v2, JSON_ENCODE_ANY);

				printf("      %-26s %s\n", k2, t ? t : "?");
				free(t);
			}
			continue;
		}
		char *t = json_dumps(v, JSON_ENCODE_ANY);

		printf("    %-28s %s\n", name, t ? t : "?");
		free(t);
	}
}

/* The meter's part of status as text, from its statistics to the daemon's counters. */
static void print_meter_text(const struct rm_ifkey *k, const struct rm_status *status, const char *label)
{
	json_t *mirror = mirror_json(status);

	if (status->have_stats) {
		printf("  meter statistics:\n");
		for (int i = 0; i < RM_STAT__COUNT; i++)
			printf("    %-26s %" PRIu64 "\n", rm_stat_name(i), status->stats[i]);
	}
	if (status->have_contexts) {
		printf("  contexts:\n");
		for (size_t i = 0; i < status->n; i++)
			print_ctx_text(&status->ctx[i].key, &status->ctx[i].val, mirror);
		printf(status->n ? "" : "    (none)\n");
	}
	if (status->have_pool)
		printf("  window pool: %" PRIu64 " windows of %" PRIu64 " positions (%" PRIu64 " bytes each); "
		       "contexts: %" PRIu64 " inline, %" PRIu64 " with a pool window\n",
		       (uint64_t)status->pool.windows, (uint64_t)status->pool.positions, status->pool.bytes,
		       (uint64_t)status->n - status->pooled, status->pooled);
	mirror_text(mirror);
	json_decref(mirror);
	print_violations_text(status, label);
	if (!strcmp(status->state, "live")) {
		printf("  attached: XDP program id %u\n", status->prog_id);
	} else if (!strcmp(status->state, "busy")) {
		printf("  not attached: a rocemeter daemon holds these pins while starting or stopping\n");
	} else {
		printf("  STALE: no attached XDP program uses these pins and no daemon holds them ");
		print_stale_hint(k);
		return;
	}
	if (status->daemon)
		print_daemon_text(status->daemon);
}

/* A meter that runs without its pins: what is true, and how to mend it. */
static void print_unpinned_text(const struct rm_status *status, const char *label)
{
	printf("  meter: RUNNING WITHOUT ITS PINS: daemon process %d meters %s", status->unpinned_pid, label);
	if (status->prog_id)
		printf(" (XDP program id %u attached)", status->prog_id);
	printf(",\n    but its pins under %s were removed: its maps cannot be read here, nor\n"
	       "    can it be reloaded or reenabled. Restart it to pin them again: systemctl restart\n"
	       "    rocemeter@%s (or rocemeter detach %s, then attach it again)\n",
	       status->dir, label, label);
}

/*
 * The exit status for status: 0 (live, busy or only the flow-label program), STATUS_NOT_ATTACHED,
 * STATUS_STALE or STATUS_UNPINNED.
 */
static int status_verdict(const struct rm_status *status)
{
	if (status->attached)
		return strcmp(status->state, "stale") ? 0 : STATUS_STALE;
	if (status->unpinned_pid)
		return STATUS_UNPINNED;
	return status->fl_pinned ? 0 : STATUS_NOT_ATTACHED;
}

/* One interface as text (label: its name, or "ifindex N" when it is gone); returns status_verdict(). */
static int status_text(const struct rm_ifkey *k, const char *label)
{
	struct rm_status status;
	int verdict;

	rm_status_read(k, &status);
	verdict = status_verdict(&status);
	printf("%s (ifindex %u, pins %s):\n", label, k->ifindex, status.dir);
	if (status.attached)
		print_meter_text(k, &status, label);
	else if (status.unpinned_pid)
		print_unpinned_text(&status, label);
	else
		printf("  meter: not attached%s\n", k->ifname[0] ? "" : " (no such interface)");
	if (k->ifname[0])
		rm_flowlabel_status(k->ifname, stdout, 0);
	rm_status_free(&status);
	return verdict;
}

/* The connection census of `attach --census` on interface k (label: its name or index), as text; 0 or STATUS_NOT_ATTACHED. */
static int census_text(const struct rm_ifkey *k, const char *label)
{
	struct rm_census_result res;
	char err[512];
	int rc = rm_status_census(k, label, &res, err, sizeof(err));

	printf("%s:\n", label);
	if (rc == 1) {
		printf("no connection census (rocemeter attach %s --census, or rocemeter connections --live %s)\n",
		       label, label);
		return STATUS_NOT_ATTACHED;
	}
	if (rc) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	rm_conn_write_text(stdout, &res, -1, RM_CONN_TABLE | RM_CONN_PROVISION);
	rm_census_result_free(&res);
	return 0;
}

/* The same as a JSON object (docs/json.md "connections"): interface, census_attached and the census's keys. */
static json_t *census_json(const struct rm_ifkey *k, const char *label, int *verdict)
{
	struct rm_census_result res;
	json_t *o = json_object();
	char err[512];
	int rc = rm_status_census(k, label, &res, err, sizeof(err));

	json_object_set_new(o, "interface", rm_json_text(label));
	json_object_set_new(o, "census_attached", json_boolean(rc == 0));
	*verdict = rc == 1 ? STATUS_NOT_ATTACHED : rc ? RM_EXIT_FAIL : 0;
	if (rc < 0)
		rm_log_cmd(RM_LOG_ERR, "%s", err);
	if (rc)
		return o;
	rm_conn_set_json(o, &res, -1);
	rm_census_result_free(&res);
	return o;
}

/* The meter's part of status as keys of o (docs/json.md "status"), from "meter" to "daemon". */
static void set_meter_json(json_t *o, const struct rm_status *status)
{
	json_t *mirror = mirror_json(status);

	if (status->have_stats) {
		json_t *m = json_object();

		for (int i = 0; i < RM_STAT__COUNT; i++)
			json_object_set_new(m, rm_stat_name(i), rm_json_u64(status->stats[i]));
		json_object_set_new(o, "meter", m);
	}
	if (status->have_contexts) {
		json_t *a = json_array();

		for (size_t i = 0; i < status->n; i++)
			json_array_append_new(a, ctx_json(&status->ctx[i].key, &status->ctx[i].val, mirror));
		json_object_set_new(o, "contexts", a);
		json_object_set_new(o, "window_pool", pool_json(status));
	}
	set_violations_json(o, status);
	json_object_set_new(o, "mirror", mirror ? mirror : json_null());
	json_object_set_new(o, "state", json_string(status->state));
	json_object_set_new(o, "xdp_prog_id", json_integer(status->prog_id));
	json_object_set_new(o, "stale", json_boolean(!strcmp(status->state, "stale")));
	if (status->daemon)
		json_object_set_new(o, "daemon", json_incref(status->daemon));
}

/* One interface as a JSON object (docs/json.md "status"). */
static json_t *status_json(const struct rm_ifkey *k, const char *label, int *verdict)
{
	struct rm_status status;
	json_t *o = json_object();

	rm_status_read(k, &status);
	*verdict = status_verdict(&status);
	json_object_set_new(o, "netns", rm_json_u64(k->netns));
	json_object_set_new(o, "interface", rm_json_text(label));
	json_object_set_new(o, "ifindex", json_integer(k->ifindex));
	json_object_set_new(o, "pins", rm_json_text(status.dir));
	if (status.attached) {
		set_meter_json(o, &status);
	} else {
		json_object_set_new(o, "meter", json_null());
		if (status.unpinned_pid) {
			json_object_set_new(o, "state", json_string("unpinned"));
			json_object_set_new(o, "daemon_pid", json_integer(status.unpinned_pid));
			json_object_set_new(o, "xdp_prog_id", json_integer(status.prog_id));
		}
	}
	json_object_set_new(o, "flowlabel", k->ifname[0] ? flowlabel_json(k->ifname) : json_null());
	rm_status_free(&status);
	return o;
}

/* One interface: its status or (connections) its census, as text or appended to all; the verdict. */
static int status_one(const struct rm_ifkey *k, const char *label, int connections, json_t *all)
{
	int verdict = 0;

	if (all)
		json_array_append_new(all,
				      connections ? census_json(k, label, &verdict) : status_json(k, label, &verdict));
	else if (connections)
		verdict = census_text(k, label);
	else
		verdict = status_text(k, label);
	return verdict;
}

/* What status_netns() lists: text or the JSON array all, census or meter. */
struct list_args {
	int connections;
	json_t *all;
	int count;
};

/* Every interface with pins under dir, of the namespace the process is in (netns_path: NULL here). */
static void list_dir(const char *dir, const char *netns_path, struct list_args *a)
{
	char label[64];
	struct rm_ifkey k;
	struct dirent *e;
	uint64_t idx;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		if (rm_parse_uint(e->d_name, 1, UINT32_MAX, &idx) || rm_ifkey_by_index((uint32_t)idx, &k))
			continue;
		if (k.ifname[0])
			snprintf(label, sizeof(label), "%s", k.ifname);
		else
			snprintf(label, sizeof(label), "ifindex %u", k.ifindex);
		status_one(&k, label, a->connections, a->all);
		if (a->all && netns_path)
			json_object_set_new(json_array_get(a->all, json_array_size(a->all) - 1), "netns_path",
					    json_string(netns_path));
		a->count++;
	}
	if (d)
		closedir(d);
}

/* The pins of a namespace that no process holds, one JSON object per interface directory. */
static void list_stale(uint64_t netns, const char *dir, struct list_args *a)
{
	char pins[768];
	struct dirent *e;
	uint64_t idx;
	DIR *d = a->all ? opendir(dir) : NULL;

	while (d && (e = readdir(d))) {
		json_t *o;

		if (rm_parse_uint(e->d_name, 1, UINT32_MAX, &idx))
			continue;
		o = json_object();
		snprintf(pins, sizeof(pins), "%s/%s", dir, e->d_name);
		json_object_set_new(o, "netns", rm_json_u64(netns));
		json_object_set_new(o, "netns_path", json_null());
		json_object_set_new(o, "ifindex", json_integer((json_int_t)idx));
		json_object_set_new(o, "pins", rm_json_text(pins));
		json_object_set_new(o, "stale", json_true());
		json_array_append_new(a->all, o);
		a->count++;
	}
	if (d)
		closedir(d);
}

/* One other network namespace's meters (rm_status_other_netns), under a line that names it. */
static int status_netns(uint64_t netns, const char *path, void *arg)
{
	struct list_args *a = arg;
	char dir[512];

	rm_paths_netns_dir(netns, dir, sizeof(dir));
	if (!path[0]) {
		/* No process holds the namespace: whatever is pinned there is stale. */
		if (!a->all)
			printf("network namespace %" PRIu64 ": STALE: pins under %s, but no process and no "
			       "/run/netns name holds the namespace (remove the directory)\n",
			       netns, dir);
		list_stale(netns, dir, a);
		return 0;
	}
	if (!a->all)
		printf("network namespace %" PRIu64 " (%s; nsenter --net=%s rocemeter ...):\n", netns, path, path);
	list_dir(dir, path, a);
	return 0;
}

/* Where to look for IFACE when it has no meter here: rm_status_other_netns's call per namespace. */
struct elsewhere_args {
	const char *ifname;
	json_t *where; /* the JSON array "elsewhere", or NULL for text */
};

static int find_elsewhere(uint64_t netns, const char *path, void *arg)
{
	struct elsewhere_args *a = arg;
	struct rm_ifkey k;
	char dir[512];

	if (!path[0] || rm_ifkey_by_name(a->ifname, &k, dir, sizeof(dir)) || rm_paths_pin_dir(&k, dir, sizeof(dir)) ||
	    access(dir, F_OK))
		return 0;
	if (a->where) {
		json_t *o = json_object();

		json_object_set_new(o, "netns", rm_json_u64(netns));
		json_object_set_new(o, "netns_path", json_string(path));
		json_object_set_new(o, "ifindex", json_integer(k.ifindex));
		json_object_set_new(o, "pins", rm_json_text(dir));
		json_array_append_new(a->where, o);
	} else {
		printf("  a meter of %s in network namespace %" PRIu64
		       " (pins %s): nsenter --net=%s rocemeter status %s\n",
		       a->ifname, netns, dir, path, a->ifname);
	}
	return 0;
}

/* IFACE, which has no such interface here: what status prints, and where else it has pins. */
static void status_absent(const char *ifname, int connections, json_t *all)
{
	struct elsewhere_args ea = { .ifname = ifname };

	if (all) {
		json_t *o = json_object();

		json_object_set_new(o, "interface", rm_json_text(ifname));
		if (connections) {
			json_object_set_new(o, "census_attached", json_false());
		} else {
			json_object_set_new(o, "meter", json_null());
			json_object_set_new(o, "flowlabel", json_null());
			ea.where = json_array();
			rm_status_other_netns(find_elsewhere, &ea);
			json_object_set_new(o, "elsewhere", ea.where);
		}
		json_array_append_new(all, o);
	} else if (connections) {
		printf("%s:\nno connection census (no such interface)\n", ifname);
	} else {
		printf("%s:\n  meter: not attached (no such interface in this network namespace)\n", ifname);
		rm_status_other_netns(find_elsewhere, &ea);
	}
}

struct status_args {
	int json, connections;
	const char *netns;
};

static const struct rm_opt status_opts[] = {
	RM_OPT("json", 'j', NULL, RM_OPT_FLAG, "one JSON array, one object per interface (docs/json.md)",
	       RM_OPT_AT(struct status_args, json)),
	RM_OPT("connections", 'C', NULL, RM_OPT_FLAG,
	       "instead, the RoCEv2 connections the census of 'attach --census' counted, with ready [provision] "
	       "lines (as 'rocemeter connections')",
	       RM_OPT_AT(struct status_args, connections)),
	RM_OPT("namespace", 'n', "NS", RM_OPT_ARG,
	       "the meters of network namespace NS (an 'ip netns' name, a path such as /proc/PID/ns/net, or the "
	       "inode status lists) instead of this one's",
	       RM_OPT_AT(struct status_args, netns)),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter status [IFACE] [--json] [--connections] [--namespace NS]\n\n"
		   "Show the meter's statistics and live contexts (atomic snapshots of the\n"
		   "pinned maps), whether the kernel still runs it on the interface (live, or\n"
		   "STALE pins), the connections a profile violation disabled (and the\n"
		   "fail-safe of a full violations map: 'rocemeter reenable'), the daemon's\n"
		   "report and export counters (records sent, dropped because the queue was\n"
		   "full, without a session, or with a lost session; sent but lost in flight\n"
		   "when a session died; epochs closed because a new Transport Session\n"
		   "began), and the flow-label program's statistics. Without IFACE: every\n"
		   "interface of this network namespace with pins under\n"
		   "/sys/fs/bpf/rocemeter/NETNS/IFINDEX/ (an interface is found by its index,\n"
		   "so a renamed one shows under its new name), then those of every other\n"
		   "network namespace, each named. IFACE not here: where it has a meter.\n"
		   "Exit status for IFACE: 0 live, 3 not attached, 5 stale pins, 6 running\n"
		   "without its pins (removed under a running daemon: restart it). The\n"
		   "statistics are described in docs/meter.md.\n\n"
		   "Options:\n");
	rm_opts_help(f, status_opts, 22, 6);
}

/* An unknown option: getopt's line, no usage. */
static const struct rm_cmd_opts status_cmd = { .t = status_opts, .usage = usage };

/* `status IFACE...`: the worst verdict of the interfaces asked for. */
static int status_named(char **names, int n, int connections, json_t *all)
{
	int worst = 0, verdict;
	char err[256];
	struct rm_ifkey k;

	for (int i = 0; i < n; i++) {
		int rc = rm_ifkey_by_name(names[i], &k, err, sizeof(err));

		if (rc == -ENODEV) {
			status_absent(names[i], connections, all);
			verdict = STATUS_NOT_ATTACHED;
		} else if (rc) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			return RM_EXIT_FAIL;
		} else {
			verdict = status_one(&k, names[i], connections, all);
		}
		if (verdict > worst)
			worst = verdict;
	}
	return worst;
}

/* `status`: every interface with pins, of this network namespace, then (others) of the others that bpffs holds. */
static void status_all(int connections, int others, json_t *all)
{
	struct list_args a = { .connections = connections, .all = all };
	char dir[512];

	if (rm_paths_netns_dir(rm_paths_netns(), dir, sizeof(dir)) == 0)
		list_dir(dir, NULL, &a);
	if (!a.count && !all)
		printf("nothing attached in this network namespace (no pins under %s)\n", dir);
	if (others)
		rm_status_other_netns(status_netns, &a);
}

static int cmd_status(int argc, char **argv)
{
	struct status_args args = { 0 };
	int rc = rm_opts_parse(&status_cmd, argc, argv, &args);
	json_t *all;

	if (rc >= 0)
		return rc;
	for (int i = optind; i < argc; i++) {
		if (!rm_ifname_valid(argv[i])) {
			rm_log_cmd(RM_LOG_ERR, "'%s' is not a valid interface name", argv[i]);
			return RM_EXIT_USAGE;
		}
	}
	if (args.netns) {
		char err[600];

		/* From here on the selected namespace is this one: the same code reads it. */
		if (rm_netns_select(args.netns, err, sizeof(err))) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			return RM_EXIT_FAIL;
		}
	}
	all = args.json ? json_array() : NULL;
	if (optind < argc) {
		rc = status_named(argv + optind, argc - optind, args.connections, all);
	} else {
		status_all(args.connections, !args.netns, all);
		rc = RM_EXIT_OK;
	}
	if (args.json && rm_json_write(stdout, all)) {
		rm_log_cmd(RM_LOG_ERR, "standard output: write error");
		return RM_EXIT_FAIL;
	}
	return rc;
}

RM_COMMAND(status, 30, "show statistics and live contexts of attached meters", cmd_status);
