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
			/* nanosecond precision was requested: tv_usec holds nanoseconds */
			f->ts_ns = (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec;
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
