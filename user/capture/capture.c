// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* capture.c - libpcap capture reading (see capture.h). */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>

#include "capture.h"

struct rm_capture {
	char *const *files;
	int n, cur;
	pcap_t *p;
};

static pcap_t *open_one(const char *file, char *err, size_t errlen)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, errbuf);

	if (!p) {
		snprintf(err, errlen, "%s: not a readable pcap or pcapng capture: %s", file, errbuf);
		return NULL;
	}
	if (pcap_datalink(p) != DLT_EN10MB) {
		const char *name = pcap_datalink_val_to_name(pcap_datalink(p));

		snprintf(err, errlen, "%s: link type %s is not supported (only Ethernet)", file,
			 name ? name : "unknown");
		pcap_close(p);
		return NULL;
	}
	return p;
}

int rm_capture_validate(char *const *files, int n, uint64_t *frames, char *err, size_t errlen)
{
	struct pcap_pkthdr *h;
	const u_char *d;

	*frames = 0;
	for (int i = 0; i < n; i++) {
		pcap_t *p = open_one(files[i], err, errlen);
		int r;

		if (!p)
			return -1;
		while ((r = pcap_next_ex(p, &h, &d)) == 1)
			(*frames)++;
		if (r == PCAP_ERROR) {
			snprintf(err, errlen, "%s: %s", files[i], pcap_geterr(p));
			pcap_close(p);
			return -1;
		}
		pcap_close(p);
	}
	return 0;
}

struct rm_capture *rm_capture_open(char *const *files, int n, char *err, size_t errlen)
{
	struct rm_capture *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->files = files;
	c->n = n;
	return c;
}

/*
 * A header's timestamp in UNIX ns (nanosecond precision was requested:
 * tv_usec holds nanoseconds). The classic format's seconds are an unsigned
 * 32-bit field (up to 2106), which libpcap hands over as signed: a negative
 * value down to -2^31 is that field past 2038. Saturates instead of
 * wrapping; the replay clock copes with any value (docs/architecture.md
 * "Time").
 */
static uint64_t ts_ns_of(const struct timeval *tv)
{
	int64_t sec = tv->tv_sec;

	if (sec < 0 && sec >= INT32_MIN)
		sec += (int64_t)1 << 32;
	if (sec < 0)
		return 0;
	if ((uint64_t)sec > (UINT64_MAX - 999999999u) / 1000000000u)
		return UINT64_MAX;
	return (uint64_t)sec * 1000000000u + (uint64_t)tv->tv_usec;
}

int rm_capture_next(struct rm_capture *c, struct rm_frame *f, char *err, size_t errlen)
{
	struct pcap_pkthdr *h;
	const u_char *d;
	int r;

	for (;;) {
		if (!c->p) {
			if (c->cur >= c->n)
				return 0;
			c->p = open_one(c->files[c->cur], err, errlen);
			if (!c->p)
				return -1;
		}
		r = pcap_next_ex(c->p, &h, &d);
		if (r == 1) {
			f->data = d;
			f->caplen = h->caplen;
			f->wirelen = h->len;
			f->ts_ns = ts_ns_of(&h->ts);
			return 1;
		}
		if (r == PCAP_ERROR) {
			snprintf(err, errlen, "%s: %s", c->files[c->cur], pcap_geterr(c->p));
			return -1;
		}
		pcap_close(c->p);
		c->p = NULL;
		c->cur++;
	}
}

void rm_capture_close(struct rm_capture *c)
{
	if (!c)
		return;
	if (c->p)
		pcap_close(c->p);
	free(c);
}
