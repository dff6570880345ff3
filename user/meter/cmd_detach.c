// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_detach.c - `rocemeter detach IFACE` (or --ifindex N): stop the daemon
 * on the interface (its open epochs get final reports), remove the
 * flow-label program, the connection census and every pin of the interface,
 * also those a crashed attachment left. A live meter is stopped only through
 * its proved process, never by removing its pins.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "census/census.h"
#include "common/command.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/params.h"
#include "common/paths.h"
#include "daemon.h"
#include "flowlabel/flowlabel.h"
#include "netns.h"
#include "pins.h"

struct detach_args {
	uint64_t ifindex;
	const char *netns;
};

static const struct rm_opt detach_opts[] = {
	RM_OPT("ifindex", 0, "N", RM_OPT_UINT, "the interface by its index in this network namespace",
	       RM_OPT_AT(struct detach_args, ifindex), .lo = 1, .hi = UINT32_MAX),
	RM_OPT("namespace", 'n', "NS", RM_OPT_ARG,
	       "IFACE (or N) of network namespace NS: an 'ip netns' name, a path such as /proc/PID/ns/net, or the "
	       "inode 'rocemeter status' lists",
	       RM_OPT_AT(struct detach_args, netns)),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter detach [--namespace NS] IFACE\n"
		   "       rocemeter detach [--namespace NS] --ifindex N\n\n"
		   "Stop the meter daemon on IFACE (its open epochs get final reports), remove\n"
		   "the flow-label program, the connection census and every pin of the\n"
		   "interface (under /sys/fs/bpf/rocemeter/NETNS/IFINDEX/). A daemon\n"
		   "is signalled only when its process is proved to be that meter (same\n"
		   "executable, recorded start time); pins that an attached XDP program still\n"
		   "uses are never removed.\n"
		   "--ifindex N removes what is left of an interface that no longer exists\n"
		   "(`rocemeter status` lists it by its index).\n"
		   "--namespace NS does it from the host for a meter in another network\n"
		   "namespace on the same bpffs (as 'nsenter --net=PATH rocemeter detach').\n"
		   "Detach is idempotent: with nothing attached it says so and exits 0\n"
		   "(as 'ip link set dev IFACE xdp off').\n\n"
		   "Options:\n");
	rm_opts_help(f, detach_opts, 15, 2);
}

static const struct rm_cmd_opts detach_cmd = { .t = detach_opts, .usage = usage, .usage_on_error = 1 };

/* The daemon holds the lock: stop it through its proved process. Returns the lock fd, -ENOENT, or -1. */
static int stop_daemon(const struct rm_ifkey *k, const char *label)
{
	char why[512];
	int pid = rm_pin_meter_pid(k, why, sizeof(why)), fd;

	if (pid <= 0) {
		rm_log_cmd(RM_LOG_ERR,
			   "a meter daemon holds %s, but its process cannot be proved (%s); not signalling anyone "
			   "and not removing its pins: stop it where it runs (systemctl stop, or SIGTERM)",
			   label, pid == 0 ? "no PID file here: it runs in another mount namespace or container" : why);
		return -1;
	}
	fd = rm_daemon_terminate(k, pid, 20000); /* up to 20 s for final reports and export */
	if (fd == -1) {
		rm_log_cmd(RM_LOG_ERR, "the daemon on %s (process %d) did not stop", label, pid);
		return -1;
	}
	printf("stopped the meter on %s (process %d)\n", label, pid);
	return fd;
}

static int cmd_detach(int argc, char **argv)
{
	struct detach_args args = { 0 };
	struct rm_ifkey k;
	char path[512], err[512], label[64];
	int fd, did = 0, rc;
	uint32_t prog_id;

	rc = rm_opts_parse(&detach_cmd, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (args.ifindex ? optind != argc : optind != argc - 1) {
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	/* In the selected namespace, everything below is as for this one's (same bpffs, same run directory). */
	if (args.netns && rm_netns_select(args.netns, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	if (args.ifindex) {
		if (rm_ifkey_by_index((uint32_t)args.ifindex, &k)) {
			rm_log_cmd(RM_LOG_ERR, "cannot read the network namespace");
			return RM_EXIT_FAIL;
		}
		snprintf(label, sizeof(label), "ifindex %u%s%s", k.ifindex, k.ifname[0] ? " " : "", k.ifname);
	} else {
		rc = rm_ifkey_by_name(argv[optind], &k, err, sizeof(err));
		if (rc) {
			rm_log_cmd(RM_LOG_ERR, "%s%s", err,
				   rc == -ENODEV ? " (for the pins of a vanished interface: detach --ifindex N)" : "");
			return RM_EXIT_USAGE;
		}
		snprintf(label, sizeof(label), "%s", k.ifname);
	}
	rm_paths_pin_dir(&k, path, sizeof(path));

	fd = rm_pin_lock(&k, 0, err, sizeof(err));
	/* No pin directory, no lock to hold: removed under a running daemon, whose PID file is still there. */
	if (fd == -EBUSY || (fd == -ENOENT && rm_pin_meter_pid(&k, err, sizeof(err)) > 0)) {
		fd = stop_daemon(&k, label);
		if (fd == -1)
			return RM_EXIT_FAIL;
		did = 1;
	} else if (fd < 0 && fd != -ENOENT) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	if (rm_pin_meter_exists(&k)) {
		/* No process holds them; the kernel must not be running them either. */
		rc = rm_pin_meter_live(&k, &prog_id);
		if (rc > 0) {
			rm_log_cmd(RM_LOG_ERR,
				   "the meter pinned in %s is attached to %s (XDP program id %u) although no daemon "
				   "holds it; not removing its pins",
				   path, label, prog_id);
			rm_pin_unlock(fd);
			return RM_EXIT_FAIL;
		}
		rm_pin_remove_meter(&k);
		printf("removed stale meter pins of %s\n", label);
		did = 1;
	}
	if (k.ifname[0] && rm_flowlabel_detach(k.ifname, err, sizeof(err)) == 0) {
		printf("removed the flow-label program from %s\n", label);
		did = 1;
	} else if (!k.ifname[0] && !rm_paths_pin(&k, RM_FL_PIN_NAME, path, sizeof(path)) && unlink(path) == 0) {
		/* The interface is gone, and its tc filters with it: only the pin is left. */
		printf("removed the flow-label program's stale pin of %s\n", label);
		did = 1;
	}
	/* Of a vanished interface only the census's pins are left: its tc filter went with it. */
	if (rm_census_detach(&k, err, sizeof(err)) == 0) {
		printf("removed the connection census from %s\n", label);
		did = 1;
	}
	rm_paths_pin_dir(&k, path, sizeof(path));
	if (fd >= 0) {
		/* We hold the lock: no daemon runs; its PID and stats files are stale. */
		rm_pin_remove_run_files(&k);
		rmdir(path);
		if (!rm_paths_netns_dir(k.netns, path, sizeof(path)))
			rmdir(path); /* empty once the namespace's last interface is gone */
		rm_pin_unlock(fd);
	}
	/* Idempotent, as `ip link set dev IFACE xdp off`: the state asked for is the state found. */
	if (!did)
		printf("rocemeter is not attached to %s: nothing to detach\n", label);
	return RM_EXIT_OK;
}

RM_COMMAND(detach, 20, "stop the meter on an interface and remove its programs and pins", cmd_detach);
