// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * observe.c - detect capture discontinuities of a live attachment (see
 * observe.h), through rtnetlink: a plain NETLINK_ROUTE socket, no libmnl.
 */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <bpf/bpf.h>

#include "observe.h"

/* One reading of the interface. */
struct link_reading {
	uint64_t lost;
	uint32_t carrier_changes; /* IFLA_CARRIER_CHANGES: up + down transitions */
	uint32_t carrier_downs;   /* IFLA_CARRIER_DOWN_COUNT (kernel 4.16), else derived */
	int have_changes, have_downs;
	int carrier;
};

/*
 * Carrier losses between a reading whose carrier was was_up and this one:
 * the kernel's down count, or, without it, from carrier_changes (which
 * alternate down and up). An up transition alone is no loss: it ends a
 * loss already seen, and an epoch started right after it must stand.
 */
static uint32_t carrier_losses(const struct rm_observe *o, const struct link_reading *r)
{
	uint32_t d;

	if (r->have_downs)
		return r->carrier_downs - o->carrier_downs;
	if (!r->have_changes)
		return 0;
	d = r->carrier_changes - o->carrier_changes;
	return o->carrier == 1 ? (d + 1) / 2 : d / 2;
}

/* Take r as the new reference. */
static void remember(struct rm_observe *o, const struct link_reading *r)
{
	if (r->have_downs)
		o->carrier_downs = r->carrier_downs;
	if (r->have_changes)
		o->carrier_changes = r->carrier_changes;
	o->carrier = r->carrier;
}

/* The attributes of an RTM_NEWLINK message for o's interface into *r; 1 if it is ours. */
static int parse_link(const struct rm_observe *o, const struct nlmsghdr *nh, struct link_reading *r)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(nh);
	const struct rtattr *rta;
	int len, carrier_attr = -1;

	if (nh->nlmsg_type != RTM_NEWLINK || nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)) || ifi->ifi_index != o->ifindex)
		return 0;
	len = (int)(nh->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));
	for (rta = IFLA_RTA(ifi); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (rta->rta_type == IFLA_CARRIER_CHANGES && RTA_PAYLOAD(rta) >= sizeof(uint32_t)) {
			memcpy(&r->carrier_changes, RTA_DATA(rta), sizeof(uint32_t));
			r->have_changes = 1;
		} else if (rta->rta_type == IFLA_CARRIER_DOWN_COUNT && RTA_PAYLOAD(rta) >= sizeof(uint32_t)) {
			memcpy(&r->carrier_downs, RTA_DATA(rta), sizeof(uint32_t));
			r->have_downs = 1;
		} else if (rta->rta_type == IFLA_CARRIER && RTA_PAYLOAD(rta) >= 1) {
			carrier_attr = *(const uint8_t *)RTA_DATA(rta);
		} else if (rta->rta_type == IFLA_STATS64 && RTA_PAYLOAD(rta) >= sizeof(struct rtnl_link_stats64)) {
			struct rtnl_link_stats64 stats;

			memcpy(&stats, RTA_DATA(rta), sizeof(stats));
			r->lost = stats.rx_missed_errors + stats.rx_fifo_errors + stats.rx_over_errors +
				  (o->count_rx_dropped ? stats.rx_dropped : 0);
		}
	}
	r->carrier = (ifi->ifi_flags & IFF_UP) && (ifi->ifi_flags & IFF_RUNNING) && carrier_attr != 0;
	return 1;
}

/*
 * Ask the kernel for the interface (RTM_GETLINK by index, in the current
 * network namespace). Returns 0, or -1 if the interface is gone or netlink
 * failed.
 */
static int read_link(const struct rm_observe *o, struct link_reading *r)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} req;
	char buf[16384];
	int fd, found = -1;
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -1;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.ifi));
	req.nh.nlmsg_type = RTM_GETLINK;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = o->ifindex;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0)
		goto out;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct nlmsghdr *nh;
		int len;

		if (poll(&p, 1, 1000) != 1)
			goto out;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			goto out;
		len = (int)n;
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
			if (nh->nlmsg_type == NLMSG_ERROR || nh->nlmsg_type == NLMSG_DONE)
				goto out; /* ENODEV: the interface is gone */
			if (parse_link(o, nh, r)) {
				found = 0;
				goto out;
			}
		}
	}
out:
	close(fd);
	return found;
}

void rm_observe_init(struct rm_observe *o, const char *ifname, int link_fd, uint64_t ringbuf_drops,
		     int count_rx_dropped)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK };
	struct link_reading r = { .carrier = -1 };

	memset(o, 0, sizeof(*o));
	snprintf(o->ifname, sizeof(o->ifname), "%s", ifname);
	o->ifindex = (int)if_nametoindex(ifname);
	o->link_fd = link_fd;
	o->count_rx_dropped = count_rx_dropped;
	o->carrier = -1;
	/* Subscribe first: a transition between the reading and the
	 * subscription is then in the counter or in an event. */
	o->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (o->nl_fd >= 0 && bind(o->nl_fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(o->nl_fd);
		o->nl_fd = -1;
	}
	if (read_link(o, &r) == 0) {
		o->rx_lost = r.lost;
		remember(o, &r);
	}
	o->ringbuf_drops = ringbuf_drops;
}

void rm_observe_free(struct rm_observe *o)
{
	if (o->nl_fd >= 0)
		close(o->nl_fd);
	o->nl_fd = -1;
}

int rm_observe_events(struct rm_observe *o)
{
	char buf[16384];
	int seen = 0;

	if (o->nl_fd < 0)
		return 0;
	for (;;) {
		ssize_t n = recv(o->nl_fd, buf, sizeof(buf), MSG_DONTWAIT);
		struct nlmsghdr *nh;
		int len;

		if (n < 0 && errno == ENOBUFS) {
			/* Events were lost: the next poll's counter decides. */
			seen = 1;
			continue;
		}
		if (n <= 0)
			break;
		len = (int)n;
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
			struct link_reading r = { .carrier = -1 };

			if (nh->nlmsg_type == RTM_DELLINK && nh->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg)) &&
			    ((struct ifinfomsg *)NLMSG_DATA(nh))->ifi_index == o->ifindex) {
				o->pending |= RM_OBS_CARRIER;
				seen = 1;
				continue;
			}
			if (!parse_link(o, nh, &r))
				continue;
			/* Every loss counts, also one undone before the poll. */
			if (carrier_losses(o, &r) || (!r.carrier && o->carrier == 1))
				o->pending |= RM_OBS_CARRIER;
			remember(o, &r);
			seen = 1;
		}
	}
	return seen;
}

int rm_observe_poll(struct rm_observe *o, uint64_t ringbuf_drops)
{
	struct link_reading r = { .lost = o->rx_lost, .carrier = 0 };
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	int bits;

	rm_observe_events(o);
	bits = o->pending;
	o->pending = 0;
	/* Follow the interface by its index: a rename keeps it (ip link set dev X name Y);
	 * the name is only for messages, the readings are asked by index. */
	if (o->ifindex > 0)
		if_indextoname((unsigned int)o->ifindex, o->ifname);
	if (read_link(o, &r)) {
		r.carrier = 0; /* the interface is gone: nothing is observed */
		r.have_changes = r.have_downs = 0;
	}
	if (r.lost > o->rx_lost)
		bits |= RM_OBS_RX_LOST;
	o->rx_lost = r.lost;
	/* Down now, or down and up again since the last reading. */
	if ((r.carrier != 1 && o->carrier == 1) || carrier_losses(o, &r))
		bits |= RM_OBS_CARRIER;
	remember(o, &r);
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
		 bits & RM_OBS_CARRIER ? "carrier lost or changed, " : "",
		 bits & RM_OBS_LINK_GONE ? "XDP link detached, " : "",
		 bits & RM_OBS_RINGBUF ? "events lost on the ring buffer, " : "");
	n = strlen(buf);
	if (n >= 2)
		buf[n - 2] = 0; /* drop the last ", " */
}
