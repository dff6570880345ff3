// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* observe.c - detect capture discontinuities of a live attachment (see observe.h). */
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/if_link.h>

#include <bpf/bpf.h>

#include "observe.h"

/*
 * Receive losses and carrier of ifname in the current network namespace,
 * through getifaddrs() (netlink), not /sys/class/net, which shows the
 * namespace that mounted /sys. Returns 0, or -1 if the interface is gone.
 */
static int read_link(const char *ifname, int count_rx_dropped, uint64_t *lost, int *carrier)
{
	struct ifaddrs *ifa, *a;
	int found = -1;

	if (getifaddrs(&ifa))
		return -1;
	for (a = ifa; a; a = a->ifa_next) {
		if (!a->ifa_addr || a->ifa_addr->sa_family != AF_PACKET || strcmp(a->ifa_name, ifname))
			continue;
		if (a->ifa_data) {
			const struct rtnl_link_stats *st = a->ifa_data;

			*lost = (uint64_t)st->rx_missed_errors + st->rx_fifo_errors + st->rx_over_errors +
				(count_rx_dropped ? st->rx_dropped : 0);
		}
		*carrier = (a->ifa_flags & IFF_UP) && (a->ifa_flags & IFF_RUNNING);
		found = 0;
		break;
	}
	freeifaddrs(ifa);
	return found;
}

void rm_observe_init(struct rm_observe *o, const char *ifname, int link_fd, uint64_t ringbuf_drops,
		     int count_rx_dropped)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->ifname, sizeof(o->ifname), "%s", ifname);
	o->ifindex = if_nametoindex(ifname);
	o->link_fd = link_fd;
	o->count_rx_dropped = count_rx_dropped;
	o->carrier = -1;
	read_link(ifname, count_rx_dropped, &o->rx_lost, &o->carrier);
	o->ringbuf_drops = ringbuf_drops;
}

int rm_observe_poll(struct rm_observe *o, uint64_t ringbuf_drops)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	uint64_t lost = o->rx_lost;
	int c = 0, bits = 0;

	/* Follow the interface by its index: a rename keeps it (ip link set dev X name Y). */
	if (o->ifindex)
		if_indextoname(o->ifindex, o->ifname);
	if (read_link(o->ifname, o->count_rx_dropped, &lost, &c))
		c = 0; /* the interface is gone: nothing is observed */

	if (lost > o->rx_lost)
		bits |= RM_OBS_RX_LOST;
	o->rx_lost = lost;
	if (c != 1 && o->carrier == 1)
		bits |= RM_OBS_CARRIER;
	o->carrier = c;
	if (ringbuf_drops > o->ringbuf_drops)
		bits |= RM_OBS_RINGBUF;
	o->ringbuf_drops = ringbuf_drops;
	memset(&info, 0, sizeof(info));
	if (o->link_fd >= 0 && (bpf_obj_get_info_by_fd(o->link_fd, &info, &len) || info.xdp.ifindex == 0))
		bits |= RM_OBS_LINK_GONE;
	return bits;
}

void rm_observe_describe(int bits, char *buf, size_t len)
{
	size_t n;

	snprintf(buf, len, "%s%s%s%s", bits & RM_OBS_RX_LOST ? "receive drops on the interface, " : "",
		 bits & RM_OBS_CARRIER ? "carrier down, " : "", bits & RM_OBS_LINK_GONE ? "XDP link detached, " : "",
		 bits & RM_OBS_RINGBUF ? "events lost on the ring buffer, " : "");
	n = strlen(buf);
	if (n >= 2)
		buf[n - 2] = 0; /* drop the last ", " */
}
