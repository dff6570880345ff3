// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_detach.c - `rocemeter detach IFACE`: stop the daemon on IFACE (its
 * open epochs get final reports), remove the flow-label program, the
 * connection census and every pin of the interface, also those a crashed
 * attachment left.
 */
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "census/census.h"
#include "common/command.h"
#include "common/log.h"
#include "common/paths.h"
#include "daemon.h"
#include "flowlabel/flowlabel.h"
#include "pins.h"

static int cmd_detach(int argc, char **argv)
{
	char path[512], err[512];
	int holder = 0, fd, did = 0;

	int help = argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(help ? stdout : stderr,
			"Usage: rocemeter detach IFACE\n\n"
			"Stop the meter daemon on IFACE (its open epochs get final reports), remove\n"
			"the flow-label program, the connection census and every pin under\n"
			"/sys/fs/bpf/rocemeter/IFACE/.\n\n"
			"Options:\n"
			"  -h, --help   this text\n");
		return help ? RM_EXIT_OK : RM_EXIT_USAGE;
	}
	fd = rm_lock_interface(argv[1], &holder);
	if (fd < 0 && holder > 0) {
		/* up to 20 s for final reports and export */
		fd = rm_daemon_terminate(argv[1], holder, 20000);
		if (fd < 0) {
			rm_log_cmd(RM_LOG_ERR, "the daemon on %s (process %d) did not stop", argv[1], holder);
			return RM_EXIT_FAIL;
		}
		did = 1;
		printf("stopped the meter on %s (process %d)\n", argv[1], holder);
	}
	if (rm_pin_meter_exists(argv[1])) {
		rm_pin_remove_meter(argv[1]);
		printf("removed stale meter pins of %s\n", argv[1]);
		did = 1;
	}
	if (rm_flowlabel_detach(argv[1], err, sizeof(err)) == 0) {
		printf("removed the flow-label program from %s\n", argv[1]);
		did = 1;
	}
	if (rm_census_detach(argv[1], err, sizeof(err)) == 0) {
		printf("removed the connection census from %s\n", argv[1]);
		did = 1;
	}
	if (!rm_paths_pin_dir(argv[1], path, sizeof(path)))
		rmdir(path);
	if (fd >= 0) {
		/* We hold the lock: no daemon runs; its PID and stats files are stale. */
		rm_pin_remove_run_files(argv[1]);
		rm_unlock_interface(argv[1], fd);
	}
	if (!did) {
		if (!if_nametoindex(argv[1]))
			rm_log_cmd(RM_LOG_ERR, "no interface '%s', and no rocemeter pins for it", argv[1]);
		else
			rm_log_cmd(RM_LOG_ERR, "rocemeter is not attached to %s", argv[1]);
		return RM_EXIT_FAIL;
	}
	return RM_EXIT_OK;
}

RM_COMMAND(detach, 20, "stop the meter on an interface and remove its programs and pins", cmd_detach);
