// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* paths.c - bpffs pins and run files of an interface (see paths.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "errmsg.h"
#include "paths.h"

static const char *env_or(const char *name, const char *dflt)
{
	const char *r = getenv(name);

	return r && *r ? r : dflt;
}

const char *rm_paths_bpffs(void)
{
	return env_or("ROCEMETER_BPFFS", "/sys/fs/bpf");
}

const char *rm_paths_rundir(void)
{
	return env_or("ROCEMETER_RUNDIR", "/run/rocemeter");
}

static int fits(int n, size_t len)
{
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int rm_paths_pin_dir(const char *ifname, char *buf, size_t len)
{
	return fits(snprintf(buf, len, "%s/rocemeter/%s", rm_paths_bpffs(), ifname), len);
}

int rm_paths_pin(const char *ifname, const char *name, char *buf, size_t len)
{
	return fits(snprintf(buf, len, "%s/rocemeter/%s/%s", rm_paths_bpffs(), ifname, name), len);
}

int rm_paths_run_file(const char *ifname, const char *suffix, char *buf, size_t len)
{
	return fits(snprintf(buf, len, "%s/%s.%s", rm_paths_rundir(), ifname, suffix), len);
}

static int make_dir(const char *dir, char *err, size_t errlen)
{
	if (mkdir(dir, 0700) && errno != EEXIST) {
		int e = errno;

		rm_errf(err, errlen, "cannot create %s: %s", dir, strerror(e));
		return -e;
	}
	return 0;
}

int rm_paths_prepare_pins(const char *ifname, char *err, size_t errlen)
{
	const char *root = rm_paths_bpffs();
	char dir[512];
	struct statfs sfs;
	int rc;

	if (statfs(root, &sfs) == 0 && sfs.f_type != BPF_FS_MAGIC && mount("bpf", root, "bpf", 0, NULL)) {
		int e = errno;

		rm_errf(err, errlen, "cannot mount bpffs at %s: %s", root, strerror(e));
		return -e;
	}
	if (fits(snprintf(dir, sizeof(dir), "%s/rocemeter", root), sizeof(dir)))
		goto too_long;
	rc = make_dir(dir, err, errlen);
	if (rc)
		return rc;
	if (rm_paths_pin_dir(ifname, dir, sizeof(dir)))
		goto too_long;
	return make_dir(dir, err, errlen);
too_long:
	rm_errf(err, errlen, "pin path too long");
	return -ENAMETOOLONG;
}

int rm_paths_prepare_rundir(void)
{
	if (mkdir(rm_paths_rundir(), 0755) && errno != EEXIST)
		return -errno;
	return 0;
}
