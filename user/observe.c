// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* observe.c - detect capture discontinuities of a live attachment (see observe.h). */
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>

#include "observe.h"

static uint64_t read_u64(const char *ifname, const char *file, int *ok)
{
	char path[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", ifname, file);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%llu", &v) != 1) {
		if (ok)
			*ok = 0;
		v = 0;
	}
	if (f)
		fclose(f);
	return v;
}

static uint64_t rx_lost(const char *ifname)
{
	return read_u64(ifname, "statistics/rx_dropped", NULL) + read_u64(ifname, "statistics/rx_missed_errors", NULL) +
	       read_u64(ifname, "statistics/rx_fifo_errors", NULL) + read_u64(ifname, "statistics/rx_over_errors", NULL);
}

static int carrier(const char *ifname)
{
	int ok = 1;
	uint64_t c = read_u64(ifname, "carrier", &ok);

	return ok ? (int)c : -1; /* reading carrier of a down interface fails: EINVAL */
}

void rm_observe_init(struct rm_observe *o, const char *ifname, int link_fd, uint64_t ringbuf_drops)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->ifname, sizeof(o->ifname), "%s", ifname);
	o->link_fd = link_fd;
	o->rx_lost = rx_lost(ifname);
	o->ringbuf_drops = ringbuf_drops;
	o->carrier = carrier(ifname);
}

int rm_observe_poll(struct rm_observe *o, uint64_t ringbuf_drops)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	uint64_t lost = rx_lost(o->ifname);
	int c = carrier(o->ifname), bits = 0;

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
