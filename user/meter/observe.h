/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * observe.h - is observation still complete? ([SEQOBS] "Applicability and
 * Provisioning": "A capture gap closes affected epochs with
 * captureDiscontinuity"). The daemon polls this once a second, and at once
 * when the kernel announces a change of the interface (rtnetlink link
 * events, read every pass of its loop): the interface's receive drop/miss
 * counters rising, any loss of carrier (the kernel's carrier counters, so
 * that a flap shorter than the poll is seen too; coming back up is no new
 * loss), the XDP link
 * being detached or replaced, or events lost on the ring buffer all mean
 * that some request may have gone unseen.
 */
#ifndef ROCEMETER_OBSERVE_H
#define ROCEMETER_OBSERVE_H

#include <stddef.h>
#include <stdint.h>

struct rm_observe {
	char ifname[64];      /* refreshed from ifindex at every poll: renames are followed */
	int ifindex;          /* what the readings and link events are asked by */
	int link_fd;          /* the daemon's XDP link */
	int count_rx_dropped; /* also count rx_dropped (see rm_observe_init) */
	int nl_fd;            /* NETLINK_ROUTE socket in RTNLGRP_LINK (link events), -1 if none */
	uint64_t rx_lost;     /* rx_missed_errors + rx_fifo_errors + rx_over_errors (+ rx_dropped) */
	uint64_t ringbuf_drops;
	uint32_t carrier_changes; /* IFLA_CARRIER_CHANGES: up and down transitions since boot */
	uint32_t carrier_downs;   /* IFLA_CARRIER_DOWN_COUNT: down transitions since boot */
	int carrier;              /* 1 up, 0 down, -1 unknown */
	int pending;              /* RM_OBS_* bits seen in link events, not yet returned */
};

/* What rm_observe_poll() found (bit set). */
#define RM_OBS_RX_LOST   0x1 /* the NIC or driver dropped received frames */
#define RM_OBS_CARRIER   0x2 /* carrier went down or changed (observation resumes when it is up) */
#define RM_OBS_LINK_GONE 0x4 /* our XDP link was detached: the program no longer sees frames */
#define RM_OBS_RINGBUF   0x8 /* events lost on the ring buffer (a closure may be lost) */

/*
 * Take the first readings and subscribe to the link events of ifname (in
 * the current network namespace). ringbuf_drops: the meter's
 * RM_STAT_RINGBUF_DROPS. The receive-loss counters are the NIC's and
 * driver's (missed, FIFO, overrun): frames lost before XDP. rx_dropped also
 * counts frames the stack dropped after XDP had seen them (no protocol
 * handler: LLDP, RoCEv1, ...), so it is counted only with count_rx_dropped
 * (config rx_dropped_is_loss), for drivers that report ring overflows there.
 * Call rm_observe_free() when done.
 */
void rm_observe_init(struct rm_observe *o, const char *ifname, int link_fd, uint64_t ringbuf_drops,
		     int count_rx_dropped);
void rm_observe_free(struct rm_observe *o);

/*
 * Read the link events that arrived, without waiting. Returns 1 if one
 * says our interface's carrier or state changed (call rm_observe_poll()
 * now), else 0.
 */
int rm_observe_events(struct rm_observe *o);

/* Compare with the previous readings and the events; returns RM_OBS_* bits for what changed, 0 if nothing. */
int rm_observe_poll(struct rm_observe *o, uint64_t ringbuf_drops);

/* Human-readable list of RM_OBS_* bits into buf. */
void rm_observe_describe(int bits, char *buf, size_t len);

#endif
