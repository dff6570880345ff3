// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* pins.c - pin directory, lock and PID files of an attachment (see pins.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "pins.h"

static const char *bpffs_root(void)
{
	const char *r = getenv("ROCEMETER_BPFFS");

	return r && *r ? r : "/sys/fs/bpf";
}

static const char *run_root(void)
{
	const char *r = getenv("ROCEMETER_RUNDIR");

	return r && *r ? r : "/run/rocemeter";
}

int rm_pin_dir(const char *ifname, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/rocemeter/%s", bpffs_root(), ifname);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int rm_pin_path(const char *ifname, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/rocemeter/%s/%s", bpffs_root(), ifname, name);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int rm_run_path(const char *ifname, const char *suffix, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s.%s", run_root(), ifname, suffix);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int rm_pin_prepare(const char *ifname)
{
	char dir[512];
	struct statfs sfs;

	if (statfs(bpffs_root(), &sfs) == 0 && sfs.f_type != BPF_FS_MAGIC) {
		if (mount("bpf", bpffs_root(), "bpf", 0, NULL))
			return -errno;
	}
	snprintf(dir, sizeof(dir), "%s/rocemeter", bpffs_root());
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (rm_pin_dir(ifname, dir, sizeof(dir)))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

void rm_pin_remove_meter(const char *ifname)
{
	static const char *const names[] = { RM_PIN_MAPS };
	char path[512];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!rm_pin_path(ifname, names[i], path, sizeof(path)))
			unlink(path);
	if (!rm_pin_dir(ifname, path, sizeof(path)))
		rmdir(path); /* fails while other pins (the flow-label program's) remain */
}

int rm_lock_interface(const char *ifname, int *holder)
{
	char path[512];
	struct stat a, b;
	int fd;

	*holder = 0;
	if (mkdir(run_root(), 0755) && errno != EEXIST)
		return -1;
	if (rm_run_path(ifname, "lock", path, sizeof(path)))
		return -1;
	for (;;) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -1;
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			FILE *f;

			close(fd);
			if (!rm_run_path(ifname, "pid", path, sizeof(path)) && (f = fopen(path, "r"))) {
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
	if (!rm_run_path(ifname, "lock", path, sizeof(path)))
		unlink(path); /* while still holding the lock: see rm_lock_interface() */
	close(fd);
}
