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
#include "common/log.h"
#include "common/opts.h"
#include "common/paths.h"
#include "flowlabel/flowlabel.h"
#include "meter.h"
#include "pins.h"
#include "common/report_text.h"
#include "rocemeter/ipfix_ie.h"

static void print_ctx_text(const struct rm_ctx_key *k, const struct rm_ctx *v)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	int af = k->family == 6 ? AF_INET6 : AF_INET;
	const struct rm_seq_counters *c = &v->seq.c;

	inet_ntop(af, k->src, src, sizeof(src));
	inet_ntop(af, k->dst, dst, sizeof(dst));
	printf("  %s > %s qp 0x%06x pkey 0x%04x", src, dst, k->dest_qp, k->pkey);
	if (k->vlan[0] || k->vlan[1])
		printf(" vlan %u/%u", k->vlan[0], k->vlan[1]);
	printf(" %s epoch-gen %u W %u requests=%llu skipped=%llu filled=%llu expired=%llu pending=%u repeated=%llu "
	       "unclassified_late=%llu\n",
	       v->disabled ? "DISABLED(profileViolation)" : v->seq.active ? "open" : "closed", c->epoch_gen, c->window,
	       (unsigned long long)c->requests, (unsigned long long)c->skipped, (unsigned long long)c->filled,
	       (unsigned long long)c->expired, c->pending, (unsigned long long)c->repeated,
	       (unsigned long long)c->unclassified_late);
}

/* ", \"<IE name of row f>\": v" */
static void print_ie_json(enum rm_pf f, unsigned long long v)
{
	printf(", \"%s\": %llu", rm_pf_name(f), v);
}

static void print_ctx_json(const struct rm_ctx_key *k, const struct rm_ctx *v, int first)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	int af = k->family == 6 ? AF_INET6 : AF_INET;
	const struct rm_seq_counters *c = &v->seq.c;

	inet_ntop(af, k->src, src, sizeof(src));
	inet_ntop(af, k->dst, dst, sizeof(dst));
	printf("%s{\"source\": \"%s\", \"destination\": \"%s\"", first ? "" : ", ", src, dst);
	print_ie_json(RM_PF_RDMA_DESTINATION_QP, k->dest_qp);
	print_ie_json(RM_PF_RDMA_PARTITION_KEY, k->pkey);
	printf(", \"vlan\": [%u, %u], \"state\": \"%s\", \"epochGeneration\": %u", k->vlan[0], k->vlan[1],
	       v->disabled ? "disabled" : v->seq.active ? "open" : "closed", c->epoch_gen);
	print_ie_json(RM_PF_RDMA_SEQUENCE_WINDOW, c->window);
	print_ie_json(RM_PF_REQUEST_PACKET_TOTAL_COUNT, c->requests);
	print_ie_json(RM_PF_SKIPPED_PSN_TOTAL_COUNT, c->skipped);
	print_ie_json(RM_PF_FILLED_PSN_TOTAL_COUNT, c->filled);
	print_ie_json(RM_PF_EXPIRED_PSN_TOTAL_COUNT, c->expired);
	print_ie_json(RM_PF_PENDING_PSN_COUNT, c->pending);
	print_ie_json(RM_PF_REPEATED_PSN_TOTAL_COUNT, c->repeated);
	print_ie_json(RM_PF_UNCLASSIFIED_LATE_PACKET_TOTAL_COUNT, c->unclassified_late);
	printf("}");
}

/* What the kernel says of k's pins: attached, stale, or in the hands of a starting or stopping daemon. */
static const char *meter_state(const struct rm_ifkey *k, uint32_t *prog_id)
{
	int live = rm_pin_meter_live(k, prog_id), lock;

	if (live > 0)
		return "live";
	lock = rm_pin_lock(k, 0, NULL, 0);
	if (lock == -EBUSY)
		return "busy";
	rm_pin_unlock(lock);
	return "stale";
}

/* One interface (label: its name, or "ifindex N" when it is gone). */
static int status_one(const struct rm_ifkey *k, const char *label, int json, int first_if)
{
	char path[512], dir[512], line[4096];
	uint64_t st[RM_STAT__COUNT];
	int stats_fd, ctx_fd, n = 0;
	struct rm_ctx_key key, next, *prev = NULL;
	struct rm_ctx val;
	const char *state;
	uint32_t prog_id = 0;
	FILE *f;

	rm_paths_pin_dir(k, dir, sizeof(dir));
	if (json)
		printf("%s{\"interface\": \"%s\", \"ifindex\": %u, \"pins\": \"%s\"", first_if ? "" : ",\n", label,
		       k->ifindex, dir);
	else
		printf("%s (ifindex %u, pins %s):\n", label, k->ifindex, dir);
	if (rm_paths_pin(k, "stats", path, sizeof(path)) || (stats_fd = bpf_obj_get(path)) < 0) {
		if (json)
			printf(", \"meter\": null");
		else
			printf("  meter: not attached%s\n", k->ifname[0] ? "" : " (no such interface)");
	} else {
		if (rm_meter_read_stats(stats_fd, st) == 0) {
			if (json) {
				printf(", \"meter\": {");
				for (int i = 0; i < RM_STAT__COUNT; i++)
					printf("%s\"%s\": %" PRIu64, i ? ", " : "", rm_stat_name(i), st[i]);
				printf("}");
			} else {
				printf("  meter statistics:\n");
				for (int i = 0; i < RM_STAT__COUNT; i++)
					printf("    %-26s %" PRIu64 "\n", rm_stat_name(i), st[i]);
			}
		}
		close(stats_fd);
		if (!rm_paths_pin(k, "contexts", path, sizeof(path)) && (ctx_fd = bpf_obj_get(path)) >= 0) {
			printf(json ? ", \"contexts\": [" : "  contexts:\n");
			while (bpf_map_get_next_key(ctx_fd, prev, &next) == 0) {
				key = next;
				prev = &key;
				if (bpf_map_lookup_elem_flags(ctx_fd, &key, &val, BPF_F_LOCK))
					continue; /* removed meanwhile */
				if (json)
					print_ctx_json(&key, &val, n == 0);
				else
					print_ctx_text(&key, &val);
				n++;
			}
			printf(json ? "]" : n ? "" : "    (none)\n");
			close(ctx_fd);
		}
		/* Liveness from the kernel: is the pinned program the interface's XDP program? */
		state = meter_state(k, &prog_id);
		if (json)
			printf(", \"state\": \"%s\", \"xdp_prog_id\": %u, \"stale\": %s", state, prog_id,
			       strcmp(state, "stale") ? "false" : "true");
		else if (!strcmp(state, "live"))
			printf("  attached: XDP program id %u\n", prog_id);
		else if (!strcmp(state, "busy"))
			printf("  not attached: a rocemeter daemon holds these pins while starting or stopping\n");
		else
			printf("  STALE: no attached XDP program uses these pins and no daemon holds them "
			       "(run 'rocemeter detach %s%s')\n",
			       k->ifname[0] ? "" : "--ifindex ", k->ifname[0] ? k->ifname : label + strlen("ifindex "));
		/* The daemon's own counters: reports, export sessions and drops (same mount namespace only). */
		if (strcmp(state, "stale") && !rm_paths_run_file(k, RM_RUN_STATS, path, sizeof(path)) &&
		    (f = fopen(path, "r"))) {
			if (fgets(line, sizeof(line), f)) {
				line[strcspn(line, "\n")] = 0;
				printf(json ? ", \"daemon\": %s" : "  daemon: %s\n", line);
			}
			fclose(f);
		}
	}
	if (!k->ifname[0]) {
		if (json)
			printf(", \"flowlabel\": null}");
		return 0;
	}
	if (json) {
		printf(", \"flowlabel\": ");
		fflush(stdout);
		if (rm_flowlabel_status(k->ifname, stdout, 1) != 0)
			printf("null");
		printf("}");
	} else {
		rm_flowlabel_status(k->ifname, stdout, 0);
	}
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, 0, 'j' }, { "help", no_argument, 0, 'h' }, { 0 } };
	int json = 0, opt, count = 0, rc;
	char dir[512], err[256], label[64];
	struct rm_ifkey k;
	DIR *d;
	struct dirent *e;

	while ((opt = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (opt) {
		case 'j': json = 1; break;
		case 'h':
			printf("Usage: rocemeter status [IFACE] [--json]\n\n"
			       "Show the meter's statistics and live contexts (atomic snapshots of the\n"
			       "pinned maps), whether the kernel still runs it on the interface (live, or\n"
			       "STALE pins), the daemon's report and export counters (records sent,\n"
			       "dropped because the queue was full, without a session, or with a lost\n"
			       "session), and the flow-label program's statistics. Without IFACE: every\n"
			       "interface of this network namespace with pins under\n"
			       "/sys/fs/bpf/rocemeter/NETNS/IFINDEX/ (an interface is found by its index,\n"
			       "so a renamed one shows under its new name).\n");
			return RM_EXIT_OK;
		default: return RM_EXIT_USAGE;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (!rm_ifname_valid(argv[i])) {
			rm_log_cmd(RM_LOG_ERR, "'%s' is not a valid interface name", argv[i]);
			return RM_EXIT_USAGE;
		}
	}
	if (json)
		printf("[");
	if (optind < argc) {
		for (int i = optind; i < argc; i++) {
			rc = rm_ifkey_by_name(argv[i], &k, err, sizeof(err));
			if (rc == -ENODEV) {
				/* No such interface here: nothing can be pinned for it. */
				if (json)
					printf("%s{\"interface\": \"%s\", \"meter\": null, \"flowlabel\": null}",
					       count++ ? ",\n" : "", argv[i]);
				else
					printf("%s:\n  meter: not attached (no such interface)\n", argv[i]);
				continue;
			}
			if (rc) {
				rm_log_cmd(RM_LOG_ERR, "%s", err);
				return RM_EXIT_FAIL;
			}
			status_one(&k, argv[i], json, count++ == 0);
		}
	} else {
		if (rm_paths_netns_dir(rm_paths_netns(), dir, sizeof(dir)) == 0 && (d = opendir(dir))) {
			while ((e = readdir(d))) {
				uint64_t idx;

				if (rm_parse_uint(e->d_name, 1, UINT32_MAX, &idx) || rm_ifkey_by_index((uint32_t)idx, &k))
					continue;
				if (k.ifname[0])
					snprintf(label, sizeof(label), "%s", k.ifname);
				else
					snprintf(label, sizeof(label), "ifindex %u", k.ifindex);
				status_one(&k, label, json, count++ == 0);
			}
			closedir(d);
		}
		if (!count && !json)
			printf("nothing attached (no pins under %s)\n", dir);
	}
	if (json)
		printf("]\n");
	return RM_EXIT_OK;
}

RM_COMMAND(status, 30, "show statistics and live contexts of attached meters", cmd_status);
