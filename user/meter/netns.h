/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * netns.h - network namespaces of other meters on the same bpffs: the path
 * that holds one (by its inode, the NETNS of the pin directories), entering
 * one, and the --namespace selector of `status` and `detach`. The mount
 * namespace is kept, so bpffs, the pins and the run directory stay in view.
 */
#ifndef ROCEMETER_NETNS_H
#define ROCEMETER_NETNS_H

#include <stddef.h>
#include <stdint.h>

/*
 * A path that holds network namespace netns (its inode): a name of `ip netns`
 * under /run/netns, else a process's /proc/PID/ns/net, into buf. 0, or
 * -ENOENT if none does.
 */
int rm_netns_path(uint64_t netns, char *buf, size_t len);

/* Enter the network namespace at path (setns: CAP_SYS_ADMIN) with the calling thread. 0 or -errno. */
int rm_netns_enter(const char *path);

/*
 * Enter the network namespace that sel names: a name of `ip netns` (its file
 * /run/netns/NAME), a path to a namespace file (/proc/PID/ns/net), or the
 * namespace's inode number as `status` prints it. 0, or -errno with the
 * reason in err ("--namespace X: ...").
 */
int rm_netns_select(const char *sel, char *err, size_t errlen);

#endif
