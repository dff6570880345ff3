// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* pins.c - the meter's pins, lock, liveness and PID file of an attachment (see pins.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "common/errmsg.h"
#include "pins.h"

int rm_pin_meter_exists(const struct rm_ifkey *k)
{
	char path[512];

	return !rm_paths_pin(k, "contexts", path, sizeof(path)) && access(path, F_OK) == 0;
}

void rm_pin_remove_meter(const struct rm_ifkey *k)
{
	static const char *const names[] = { RM_PIN_MAPS, RM_PIN_CTL, RM_PIN_PROG };
	char path[512];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!rm_paths_pin(k, names[i], path, sizeof(path)))
			unlink(path);
	if (!rm_paths_pin_dir(k, path, sizeof(path)))
		rmdir(path); /* fails while other pins (the flow-label program's) remain */
	/* The namespace's directory too, once its last interface is gone (rm_pin_lock() makes it again). */
	if (!rm_paths_netns_dir(k->netns, path, sizeof(path)))
		rmdir(path);
}

void rm_pin_remove_run_files(const struct rm_ifkey *k)
{
	char path[512];

	if (!rm_paths_run_file(k, RM_RUN_PID, path, sizeof(path)))
		unlink(path);
	if (!rm_paths_run_file(k, RM_RUN_STATS, path, sizeof(path)))
		unlink(path);
}

int rm_pin_lock(const struct rm_ifkey *k, int create, char *err, size_t errlen)
{
	char dir[512];
	struct stat a, b;
	int fd, rc;

	if (rm_paths_pin_dir(k, dir, sizeof(dir))) {
		rm_errf(err, errlen, "pin path too long");
		return -ENAMETOOLONG;
	}
	for (int tries = 0; tries < 100; tries++) {
		if (create) {
			rc = rm_paths_prepare_pins(k, err, errlen);
			if (rc == -ENOENT)
				continue; /* the namespace's directory was removed between two mkdir() */
			if (rc)
				return rc;
		}
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			if (rc == -ENOENT && create)
				continue; /* removed between mkdir and open: make it again */
			rm_errf(err, errlen, "cannot open %s: %s", dir, strerror(-rc));
			return rc;
		}
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
			close(fd);
			rm_errf(err, errlen, "cannot lock %s: %s", dir, strerror(-rc));
			return rc;
		}
		/* The holder we raced with may have removed the directory after we
		 * opened it: the lock is ours only if the path is still this one. */
		if (fstat(fd, &a) == 0 && stat(dir, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			return fd;
		close(fd);
		if (!create) {
			rm_errf(err, errlen, "%s: no such directory", dir);
			return -ENOENT;
		}
	}
	rm_errf(err, errlen, "cannot lock %s: it keeps disappearing", dir);
	return -EAGAIN;
}

void rm_pin_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

int rm_xdp_attached(uint32_t ifindex, uint32_t *prog_id, char *name, size_t namelen, const char **mode)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd, rc;

	if (name && namelen)
		name[0] = '\0';
	rc = bpf_xdp_query((int)ifindex, 0, &q);
	if (rc)
		return rc;
	if (q.drv_prog_id) {
		*prog_id = q.drv_prog_id;
		if (mode)
			*mode = "native";
	} else if (q.skb_prog_id) {
		*prog_id = q.skb_prog_id;
		if (mode)
			*mode = "generic";
	} else if (q.hw_prog_id) {
		*prog_id = q.hw_prog_id;
		if (mode)
			*mode = "offload";
	} else {
		return 0;
	}
	/* The name needs CAP_SYS_ADMIN (BPF_PROG_GET_FD_BY_ID); without it the ID alone. */
	fd = bpf_prog_get_fd_by_id(*prog_id);
	if (fd >= 0) {
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) && name && namelen)
			snprintf(name, namelen, "%s", info.name);
		close(fd);
	}
	return 1;
}

int rm_pin_meter_live(const struct rm_ifkey *k, uint32_t *prog_id)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info), attached[3];
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	char path[512];
	int fd, rc;

	if (rm_paths_pin(k, RM_PIN_PROG, path, sizeof(path)))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	memset(&info, 0, sizeof(info));
	rc = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	close(fd);
	if (rc)
		return rc;
	rc = bpf_xdp_query((int)k->ifindex, 0, &q);
	if (rc)
		return rc;
	attached[0] = q.drv_prog_id;
	attached[1] = q.skb_prog_id;
	attached[2] = q.hw_prog_id;
	for (int i = 0; i < 3; i++) {
		if (attached[i] && attached[i] == info.id) {
			if (prog_id)
				*prog_id = info.id;
			return 1;
		}
	}
	return 0;
}

uint64_t rm_proc_start_time(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "PID (COMM) STATE ..." where COMM may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	/* Field 22 is the 20th after ")": state is field 3. */
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (field == 3 && (*p == 'Z' || *p == 'X'))
			return 0; /* exited: its parent has not reaped it yet */
		if (field == 22) {
			if (sscanf(p, "%llu", &start) != 1)
				return 0;
			break;
		}
		p = strchr(p, ' ');
		if (!p)
			return 0;
	}
	return start;
}

int rm_pin_write_pid(const struct rm_ifkey *k)
{
	char path[512], tmp[520];
	FILE *f;
	int rc = 0;

	if (rm_paths_prepare_rundir() || rm_paths_run_file(k, RM_RUN_PID, path, sizeof(path)))
		return -EINVAL;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%d %" PRIu64 "\n", getpid(), rm_proc_start_time(getpid()));
	if (fclose(f) || rename(tmp, path))
		rc = -errno;
	return rc;
}

int rm_pin_meter_pid(const struct rm_ifkey *k, char *err, size_t errlen)
{
	char path[512], exe[64], target[PATH_MAX];
	unsigned long long start = 0;
	struct stat self, other;
	int pid = 0;
	ssize_t n;
	FILE *f;

	if (rm_paths_run_file(k, RM_RUN_PID, path, sizeof(path)))
		return 0;
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%d %llu", &pid, &start) != 2 || pid <= 0 || !start) {
		fclose(f);
		rm_errf(err, errlen, "%s does not hold 'PID STARTTIME'", path);
		return -EPERM;
	}
	fclose(f);
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	if (stat(exe, &other)) {
		rm_errf(err, errlen, "process %d (named in %s) is not running here", pid, path);
		return -ESRCH;
	}
	if (stat("/proc/self/exe", &self) || self.st_dev != other.st_dev || self.st_ino != other.st_ino) {
		n = readlink(exe, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		rm_errf(err, errlen, "process %d (named in %s) runs %s, not this rocemeter", pid, path,
			n > 0 ? target : "another program");
		return -EPERM;
	}
	if (rm_proc_start_time(pid) != start) {
		rm_errf(err, errlen, "process %d (named in %s) started at another time: a different process", pid,
			path);
		return -EPERM;
	}
	return pid;
}
