/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture.h - reading capture files with libpcap (pcap and pcapng,
 * Ethernet link type only), several files as one stream. Kept apart from
 * the BPF headers: <pcap/bpf.h> and <linux/bpf.h> cannot meet in one file.
 */
#ifndef ROCEMETER_CAPTURE_H
#define ROCEMETER_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

struct rm_capture;

struct rm_frame {
	const uint8_t *data;
	uint32_t caplen;  /* bytes captured */
	uint32_t wirelen; /* bytes on the wire */
	uint64_t ts_ns;   /* capture timestamp, UNIX nanoseconds */
};

/*
 * Check that every file is a readable Ethernet capture that is not
 * truncated; *frames = total frames. Returns 0, or -1 with a message that
 * names the file in err.
 */
int rm_capture_validate(char *const *files, int n, uint64_t *frames, char *err, size_t errlen);

/* Open files[0..n-1] as one stream; NULL with err on failure. */
struct rm_capture *rm_capture_open(char *const *files, int n, char *err, size_t errlen);

/* Next frame: 1 and *f filled, 0 at the end of the last file, -1 with err. */
int rm_capture_next(struct rm_capture *c, struct rm_frame *f, char *err, size_t errlen);

void rm_capture_close(struct rm_capture *c);

#endif
