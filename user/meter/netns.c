// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * netns.c - find and enter another network namespace by path, `ip netns`
 * name or inode (netns.h), for `status` and `detach`.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/opts.h"
#include "netns.h"

int rm_netns_path(uint64_t netns, char *buf, size_t len)
{
	static const char *const dirs[] = { "/run/netns", "/proc" };
	struct stat sb;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.' || (i == 1 && (e->d_name[0] < '0' || e->d_name[0] > '9')))
				continue;
			snprintf(buf, len, i ? "%s/%s/ns/net" : "%s/%s", dirs[i], e->d_name);
			if (!stat(buf, &sb) && (uint64_t)sb.st_ino == netns) {
				closedir(d);
				return 0;
			}
		}
		if (d)
			closedir(d);
	}
	return -ENOENT;
}

int rm_netns_enter(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = setns(fd, CLONE_NEWNET) ? -errno : 0;
	close(fd);
	return rc;
}

int rm_netns_select(const char *sel, char *err, size_t errlen)
{
	char path[512], why[128];
	uint64_t ino;
	int rc;

	if (!sel[0] || !strcmp(sel, ".") || !strcmp(sel, "..")) {
		rm_errf(err, errlen, "--namespace '%s': not a namespace name, path or inode", sel);
		return -EINVAL;
	}
	if (strchr(sel, '/')) {
		snprintf(path, sizeof(path), "%s", sel);
	} else if (!rm_parse_uint(sel, 1, UINT64_MAX, &ino)) {
		if (rm_netns_path(ino, path, sizeof(path))) {
			rm_errf(err, errlen,
				"--namespace %s: no /run/netns name and no process holds network namespace %s", sel,
				sel);
			return -ENOENT;
		}
	} else {
		snprintf(path, sizeof(path), "/run/netns/%s", sel);
	}
	rc = rm_netns_enter(path);
	if (rc) {
		snprintf(why, sizeof(why), "%s", strerror(-rc));
		rm_errf(err, errlen, "--namespace %s: cannot enter %s: %s", sel, path, why);
	}
	return rc;
}
