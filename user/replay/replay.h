/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay.h - the offline meter that `rocemeter replay` runs: every frame of
 * capture files (libpcap: pcap and pcapng, Ethernet), in file order, through
 * the real XDP meter with BPF_PROG_TEST_RUN, the capture's timestamps as
 * arrival times (made non-decreasing: a frame stamped before an earlier one
 * arrives at the latest time seen, and is counted), and the reports one
 * Transport Session would carry handed
 * to a printer and, if asked, written as an IPFIX file.
 */
#ifndef ROCEMETER_REPLAY_H
#define ROCEMETER_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "meter/reporter.h"

struct rm_replay_opts {
	const struct rm_config_file *cfg; /* [meter], [provision]; pen and observation_domain of [export] */
	uint64_t report_interval_ms;      /* non-final reports every this many ms of capture time; 0: none */
	const char *ipfix_out;            /* also write the reports as an IPFIX file; NULL: no */
	/* Each report as it is made (text, JSON Lines); NULL: none. Returns 0,
	 * or -errno when its output failed: the run stops with a message naming
	 * print_name ("standard output"). */
	rm_report_sink print;
	void *print_arg;
	const char *print_name;
	/* Write "replay: N of M frames (P%)" on stderr, rewritten in place ('\r')
	 * every 65536 frames and at the end, then cleared: for a terminal. */
	int progress;
};

struct rm_replay_result {
	int have_stats;                 /* stats[] could be read */
	uint64_t stats[RM_STAT__COUNT]; /* the meter's, frames shorter than an Ethernet header included */
	uint64_t frames_read;
	uint64_t truncated;            /* frames the capture's snap length cut */
	uint64_t capture_faults;       /* cuts that closed every open epoch (captureDiscontinuity) */
	uint64_t timestamps_backwards; /* frames stamped before an earlier frame: run at the clock's time */
	uint64_t backwards_max_ns;     /* the largest of those steps back */
	uint64_t id_exhausted;         /* reports not made: an ID would wrap */
	struct rm_ctx_key *disabled;   /* connections a profile violation disabled (rm_replay_result_free) */
	size_t n_disabled;
	char close_err[300]; /* the IPFIX file failed at its close ("" if not) */
};

/*
 * Check every file first (nothing is reported from a file set with a bad
 * file), then run the frames of files[0..nfiles-1] as one stream; at the end
 * of input every open epoch closes with a final report. Returns 0 with *res
 * filled, or -1 with one message in err (then nothing more is reported): a
 * capture that cannot be read, or an output that cannot be written (the
 * printer's or the IPFIX file's; the run stops at the first write error).
 */
int rm_replay_run(const struct rm_replay_opts *o, char *const *files, int nfiles, struct rm_replay_result *res,
		  char *err, size_t errlen);

void rm_replay_result_free(struct rm_replay_result *res);

#endif
