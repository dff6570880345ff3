// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * status.c - `rocemeter status [IFACE] [--json]`: statistics and live
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

/* One interface. Returns 0, or 1 if nothing of the meter is pinned there. */
static int status_one(const char *ifname, int json, int first_if)
{
	char path[512], line[4096];
	uint64_t st[RM_STAT__COUNT];
	int stats_fd, ctx_fd, n = 0;
	struct rm_ctx_key key, next, *prev = NULL;
	struct rm_ctx val;
	FILE *f;

	if (json)
		printf("%s{\"interface\": \"%s\"", first_if ? "" : ",\n", ifname);
	else
		printf("%s:\n", ifname);
	if (rm_pin_path(ifname, "stats", path, sizeof(path)) || (stats_fd = bpf_obj_get(path)) < 0) {
		if (json)
			printf(", \"meter\": null");
		else
			printf("  meter: not attached%s\n", if_nametoindex(ifname) ? "" : " (no such interface)");
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
		if (!rm_pin_path(ifname, "contexts", path, sizeof(path)) && (ctx_fd = bpf_obj_get(path)) >= 0) {
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
		/* Pins without a daemon holding the interface's lock are stale. */
		{
			int holder, lock = rm_lock_interface(ifname, &holder);

			if (lock >= 0) {
				rm_unlock_interface(ifname, lock);
				printf(json ? ", \"stale\": true" :
					      "  STALE: no rocemeter process owns these pins (run 'rocemeter detach %s')\n",
				       ifname);
				goto flowlabel;
			}
		}
		/* The daemon's own counters: reports, export sessions and drops. */
		if (!rm_run_path(ifname, "stats", path, sizeof(path)) && (f = fopen(path, "r"))) {
			if (fgets(line, sizeof(line), f)) {
				line[strcspn(line, "\n")] = 0;
				printf(json ? ", \"daemon\": %s" : "  daemon: %s\n", line);
			}
			fclose(f);
		}
	}
flowlabel:
	if (json) {
		printf(", \"flowlabel\": ");
		fflush(stdout);
		if (rm_flowlabel_status(ifname, stdout, 1) != 0)
			printf("null");
		printf("}");
	} else {
		rm_flowlabel_status(ifname, stdout, 0);
	}
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, 0, 'j' }, { "help", no_argument, 0, 'h' }, { 0 } };
	int json = 0, opt, count = 0;
	char dir[512];
	DIR *d;
	struct dirent *e;

	while ((opt = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (opt) {
		case 'j': json = 1; break;
		case 'h':
			printf("Usage: rocemeter status [IFACE] [--json]\n\n"
			       "Show the meter's statistics and live contexts (atomic snapshots of the\n"
			       "pinned maps), the daemon's report and export counters (records sent,\n"
			       "dropped because the queue was full, without a session, or with a lost\n"
			       "session; sent but lost in flight when a session died; epochs closed\n"
			       "because a new Transport Session began), and the flow-label program's\n"
			       "statistics. Without IFACE: every interface with pins under\n"
			       "/sys/fs/bpf/rocemeter/.\n");
			return RM_EXIT_OK;
		default: return RM_EXIT_USAGE;
		}
	}
	if (json)
		printf("[");
	if (optind < argc) {
		for (int i = optind; i < argc; i++)
			status_one(argv[i], json, count++ == 0);
	} else {
		if (rm_pin_dir("", dir, sizeof(dir)) == 0 && (d = opendir(dir))) {
			while ((e = readdir(d)))
				if (e->d_name[0] != '.')
					status_one(e->d_name, json, count++ == 0);
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
