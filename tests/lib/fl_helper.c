// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fl_helper.c - small driver for selftests/system/test_flowlabel.py (root):
 *
 *   fl_helper run [--hash NAME] [--mix] [--seed N]
 *       reads frames as hex, one per line, from stdin; runs each through
 *       bpf/flowlabel.bpf.c with BPF_PROG_TEST_RUN; prints "RET <retval>
 *       <hex frame out>" per frame, then "STATS name=value ..." (sums over
 *       CPUs of the program's fl_stats map).
 *   fl_helper attach NETNS IFNAME ingress|egress [--hash NAME] [--mix] [--seed N]
 *   fl_helper detach NETNS IFNAME
 *   fl_helper status NETNS IFNAME [--json]
 *       switch to network namespace /run/netns/NETNS with setns() (the
 *       mount namespace, so /sys/fs/bpf, stays ours) and call
 *       rm_flowlabel_attach / rm_flowlabel_detach / rm_flowlabel_status.
 * Exit status: 0 ok, 1 failure (message on stderr), 2 usage; status: the
 * return value of rm_flowlabel_status when it is >= 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowlabel/flowlabel.h"
#include "flowlabel.skel.h"
#include "frames.h"

static int usage(void)
{
	fprintf(stderr, "usage: fl_helper run [--hash NAME] [--mix] [--seed N]\n"
			"       fl_helper attach NETNS IFNAME ingress|egress [--hash NAME] [--mix] [--seed N]\n"
			"       fl_helper detach NETNS IFNAME\n"
			"       fl_helper status NETNS IFNAME [--json]\n");
	return 2;
}

static int parse_opts(int argc, char **argv, int i, struct rm_flowlabel_opts *o, int *json)
{
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--hash") && i + 1 < argc) {
			int v = rm_flowlabel_variant_from_name(argv[++i]);

			if (v < 0)
				return -1;
			o->variant = (uint32_t)v;
		} else if (!strcmp(argv[i], "--mix")) {
			o->mix = 1;
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			o->seed = (uint32_t)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--json") && json) {
			*json = 1;
		} else {
			return -1;
		}
	}
	return 0;
}

static int enter_netns(const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "fl_helper: cannot enter %s: %s\n", path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

static int run_frames(const struct rm_flowlabel_opts *o)
{
	static char line[65536 * 2 + 16];
	static uint8_t in[65536], out[65536];
	char err[256];
	uint64_t sums[RM_FL_STAT__COUNT];
	struct flowlabel *skel = rm_flowlabel_open_load(o, err, sizeof(err));
	static const char *const names[] = {
#define N_(suffix, name, desc) name,
		RM_FL_STATS(N_)
#undef N_
	};

	if (!skel) {
		fprintf(stderr, "fl_helper: %s\n", err);
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		size_t n = 0, olen;
		uint32_t ret;
		unsigned v;

		for (char *p = line; p[0] && p[1] && p[0] != '\n' && n < sizeof(in); p += 2) {
			if (sscanf(p, "%2x", &v) != 1)
				break;
			in[n++] = (uint8_t)v;
		}
		if (!n)
			continue;
		if (rm_frame_test_run(bpf_program__fd(skel->progs.rocemeter_fl), in, n, out, sizeof(out), &olen,
				      &ret)) {
			printf("ERR %s\n", strerror(errno));
			continue;
		}
		printf("RET %u ", ret);
		for (size_t i = 0; i < olen; i++)
			printf("%02x", out[i]);
		printf("\n");
	}
	if (rm_fl_stats_sum(bpf_map__fd(skel->maps.fl_stats), sums)) {
		flowlabel__destroy(skel);
		return 1;
	}
	printf("STATS");
	for (int k = 0; k < RM_FL_STAT__COUNT; k++)
		printf(" %s=%llu", names[k], (unsigned long long)sums[k]);
	printf("\n");
	flowlabel__destroy(skel);
	return 0;
}

int main(int argc, char **argv)
{
	struct rm_flowlabel_opts o = { .direction = RM_FL_EGRESS, .variant = RM_FL_LITERAL };
	char err[256];
	int json = 0, rc;

	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "run")) {
		if (parse_opts(argc, argv, 2, &o, NULL))
			return usage();
		return run_frames(&o);
	}
	if (argc < 4)
		return usage();
	if (!strcmp(argv[1], "attach")) {
		if (argc < 5 || (o.direction = rm_flowlabel_direction_from_name(argv[4])) < 0 ||
		    parse_opts(argc, argv, 5, &o, NULL))
			return usage();
		if (enter_netns(argv[2]))
			return 1;
		rc = rm_flowlabel_attach(argv[3], &o, err, sizeof(err));
		if (rc)
			fprintf(stderr, "fl_helper: %s\n", err);
		return rc ? 1 : 0;
	}
	if (!strcmp(argv[1], "detach")) {
		if (argc != 4)
			return usage();
		if (enter_netns(argv[2]))
			return 1;
		rc = rm_flowlabel_detach(argv[3], err, sizeof(err));
		if (rc)
			fprintf(stderr, "fl_helper: %s\n", err);
		return rc < 0 ? 1 : rc;
	}
	if (!strcmp(argv[1], "status")) {
		if (parse_opts(argc, argv, 4, &o, &json))
			return usage();
		if (enter_netns(argv[2]))
			return 1;
		rc = rm_flowlabel_status(argv[3], stdout, json);
		return rc < 0 ? 1 : rc;
	}
	return usage();
}
