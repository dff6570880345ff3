// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* pins.c - the meter's pins, lock and run files of an attachment (see pins.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/paths.h"
#include "pins.h"

int rm_pin_meter_exists(const char *ifname)
{
	char path[512];

	return !rm_paths_pin(ifname, "contexts", path, sizeof(path)) && access(path, F_OK) == 0;
}

void rm_pin_remove_meter(const char *ifname)
{
	static const char *const names[] = { RM_PIN_MAPS };
	char path[512];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!rm_paths_pin(ifname, names[i], path, sizeof(path)))
			unlink(path);
	if (!rm_paths_pin(ifname, RM_PIN_CTL, path, sizeof(path)))
		unlink(path);
	if (!rm_paths_pin_dir(ifname, path, sizeof(path)))
		rmdir(path); /* fails while other pins (the flow-label program's) remain */
}

void rm_pin_remove_run_files(const char *ifname)
{
	char path[512];

	if (!rm_paths_run_file(ifname, RM_RUN_PID, path, sizeof(path)))
		unlink(path);
	if (!rm_paths_run_file(ifname, RM_RUN_STATS, path, sizeof(path)))
		unlink(path);
}

int rm_lock_interface(const char *ifname, int *holder)
{
	char path[512];
	struct stat a, b;
	int fd;

	*holder = 0;
	if (rm_paths_prepare_rundir())
		return -1;
	if (rm_paths_run_file(ifname, RM_RUN_LOCK, path, sizeof(path)))
		return -1;
	for (;;) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -1;
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			FILE *f;

			close(fd);
			if (!rm_paths_run_file(ifname, RM_RUN_PID, path, sizeof(path)) && (f = fopen(path, "r"))) {
				if (fscanf(f, "%d", holder) != 1)
					*holder = 0;
				fclose(f);
			}
			errno = EBUSY;
			return -1;
		}
		/* The holder we waited for may have unlinked the file while we
		 * opened it: the lock is ours only if the path is still this file. */
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
}

void rm_unlock_interface(const char *ifname, int fd)
{
	char path[512];

	if (fd < 0)
		return;
	if (!rm_paths_run_file(ifname, RM_RUN_LOCK, path, sizeof(path)))
		unlink(path); /* while still holding the lock: see rm_lock_interface() */
	close(fd);
}
