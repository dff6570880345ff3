// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* paths.c - bpffs pins and run files of an interface, keyed by network namespace and ifindex (see paths.h). */
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "errmsg.h"
#include "log.h"
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

const char *rm_paths_collect_conf(void)
{
	static char path[512];
	const char *dir = getenv("ROCEMETER_SYSCONFDIR");

	if (!dir || !*dir)
		return RM_COLLECT_CONF;
	snprintf(path, sizeof(path), "%s/rocemeter/collect.conf", dir);
	return path;
}

/* The kernel's rule (dev_valid_name()), so that no name can climb out of a directory. */
int rm_ifname_valid(const char *name)
{
	size_t n;

	if (!name || !*name)
		return 0;
	n = strlen(name);
	if (n >= IF_NAMESIZE || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	for (const char *p = name; *p; p++)
		if (*p == '/' || *p == ':' || *p == ' ' || (*p >= '\t' && *p <= '\r'))
			return 0;
	return 1;
}

uint64_t rm_paths_netns(void)
{
	struct stat sb;

	if (stat("/proc/thread-self/ns/net", &sb) && stat("/proc/self/ns/net", &sb))
		return 0;
	return (uint64_t)sb.st_ino;
}

int rm_ifkey_by_name(const char *ifname, struct rm_ifkey *k, char *err, size_t errlen)
{
	memset(k, 0, sizeof(*k));
	if (!rm_ifname_valid(ifname)) {
		rm_errf(err, errlen, "'%s' is not a valid interface name", ifname ? ifname : "");
		return -EINVAL;
	}
	k->ifindex = if_nametoindex(ifname);
	if (!k->ifindex) {
		rm_errf(err, errlen, "no interface '%s'", ifname);
		return -ENODEV;
	}
	k->netns = rm_paths_netns();
	if (!k->netns) {
		int e = errno ? errno : EINVAL;

		rm_errf(err, errlen, "cannot read the network namespace: %s", strerror(e));
		return -e;
	}
	snprintf(k->ifname, sizeof(k->ifname), "%s", ifname);
	return 0;
}

int rm_ifkey_by_index(uint32_t ifindex, struct rm_ifkey *k)
{
	memset(k, 0, sizeof(*k));
	k->ifindex = ifindex;
	k->netns = rm_paths_netns();
	if (!k->netns)
		return errno ? -errno : -EINVAL;
	if (!if_indextoname(ifindex, k->ifname))
		k->ifname[0] = '\0';
	return 0;
}

static int fits(int n, size_t len)
{
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int rm_paths_netns_dir(uint64_t netns, char *buf, size_t len)
{
	return fits(snprintf(buf, len, "%s/rocemeter/%" PRIu64, rm_paths_bpffs(), netns), len);
}

int rm_paths_pin_dir(const struct rm_ifkey *k, char *buf, size_t len)
{
	return fits(snprintf(buf, len, "%s/rocemeter/%" PRIu64 "/%u", rm_paths_bpffs(), k->netns, k->ifindex), len);
}

int rm_paths_pin(const struct rm_ifkey *k, const char *name, char *buf, size_t len)
{
	return fits(snprintf(buf, len, "%s/rocemeter/%" PRIu64 "/%u/%s", rm_paths_bpffs(), k->netns, k->ifindex, name),
		    len);
}

int rm_paths_run_file(const struct rm_ifkey *k, const char *suffix, char *buf, size_t len)
{
	return fits(snprintf(buf, len, "%s/%" PRIu64 "-%u.%s", rm_paths_rundir(), k->netns, k->ifindex, suffix), len);
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

int rm_paths_prepare_pins(const struct rm_ifkey *k, char *err, size_t errlen)
{
	const char *root = rm_paths_bpffs();
	char dir[512];
	struct statfs sfs;
	int rc;

	if (statfs(root, &sfs) == 0 && sfs.f_type != BPF_FS_MAGIC) {
		if (mount("bpf", root, "bpf", 0, NULL)) {
			int e = errno;

			rm_errf(err, errlen, "cannot mount bpffs at %s: %s", root, strerror(e));
			return -e;
		}
		/* `ip netns exec` remounts /sys in a mount namespace of its own: a bpffs
		 * mounted there is seen by nobody outside, status and detach included. */
		rm_log(RM_LOG_WARNING,
		       "no bpffs was mounted at %s, so rocemeter mounted one; in a private mount namespace "
		       "(as under 'ip netns exec', which remounts /sys) its pins are visible only inside it and "
		       "'rocemeter status' or 'detach' run elsewhere will not find this meter: enter a network "
		       "namespace with 'nsenter --net=/run/netns/NAME' instead",
		       root);
	}
	if (fits(snprintf(dir, sizeof(dir), "%s/rocemeter", root), sizeof(dir)))
		goto too_long;
	rc = make_dir(dir, err, errlen);
	if (rc)
		return rc;
	if (rm_paths_netns_dir(k->netns, dir, sizeof(dir)))
		goto too_long;
	rc = make_dir(dir, err, errlen);
	if (rc)
		return rc;
	if (rm_paths_pin_dir(k, dir, sizeof(dir)))
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
