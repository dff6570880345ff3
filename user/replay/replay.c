// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * replay.c - the offline meter (see replay.h): the meter loaded with the
 * capture clock, the frames run in batches through the meter's batch
 * program (one BPF_PROG_TEST_RUN for up to RM_BATCH_MAX frames), the
 * reporter's schedule on capture time, and the IPFIX file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "capture/capture.h"
#include "common/errmsg.h"
#include "common/map_iter.h"
#include "export/ipfix.h"
#include "meter/meter.h"
#include "replay.h"

/*
 * Frames waiting for one run of the batch program (rm_meter_replay_run()):
 * their records in buf, and a whole copy of each frame longer than
 * RM_BATCH_COPY (its record holds the first RM_BATCH_COPY bytes) for the
 * rare frame whose headers reach further: that one is run whole. A batch
 * never spans a point where the frame-by-frame replay would do something
 * between two frames (a report boundary or a sweep of the reporter's
 * schedule, a new second of the IPFIX export time, a frame the snap length
 * cut, a frame shorter than an Ethernet header), so batches change nothing
 * but the number of system calls.
 */
struct batch {
	uint8_t buf[RM_BATCH_BYTES]; /* filled from its end backwards (rocemeter/meter.h) */
	uint32_t used, n;
	uint32_t end[RM_BATCH_MAX];       /* where each frame's record ends in buf */
	struct rm_frame fr[RM_BATCH_MAX]; /* lengths and clock (data: see whole_off) */
	size_t whole_off[RM_BATCH_MAX];
	uint8_t *whole; /* whole copies of the shortened frames */
	size_t whole_used, whole_cap;
	uint32_t second; /* export time of the batch's frames */
	uint8_t verdict[RM_BATCH_MAX];
};

struct replay {
	const struct rm_replay_opts *o;
	struct batch *batch;
	struct rm_meter meter;
	struct rm_reporter rep;
	FILE *ipfix; /* --ipfix-out */
	struct rm_ipfix_encoder enc;
	struct rm_report *pending; /* reports not yet written to the IPFIX file */
	size_t n_pending, cap_pending;
	uint32_t export_time; /* the capture clock, UNIX s */
	uint64_t clock_ns;    /* the capture clock: the latest frame timestamp so far */
	int templates_written;
	int failed;            /* an output failed: stop */
	int fail_errno;        /* why */
	const char *fail_what; /* the output that failed, for the message */
	uint64_t short_frames;
};

/* The first output failure stops the run (rm_replay_run() says which). */
static void fail(struct replay *p, const char *what, int e)
{
	if (p->failed)
		return;
	p->failed = 1;
	p->fail_what = what;
	p->fail_errno = e ? e : EIO;
}

/* Write the pending reports (after the Templates, first time) to the IPFIX file. */
static int ipfix_flush(struct replay *p)
{
	static uint8_t buf[65535];
	size_t done = 0;

	if (!p->templates_written) {
		size_t len = rm_ipfix_templates_msg(&p->enc, p->export_time, buf, sizeof(buf));

		if (!len) {
			fail(p, p->o->ipfix_out, EMSGSIZE);
			return -1;
		}
		if (fwrite(buf, 1, len, p->ipfix) != len) {
			fail(p, p->o->ipfix_out, errno);
			return -1;
		}
		/* The observation points' names, when [capture] names any (Options Template 261). */
		len = rm_ipfix_points_msg(&p->enc, p->export_time, buf, sizeof(buf));
		if (len && fwrite(buf, 1, len, p->ipfix) != len) {
			fail(p, p->o->ipfix_out, errno);
			return -1;
		}
		p->templates_written = 1;
	}
	while (done < p->n_pending) {
		size_t used = 0, len = rm_ipfix_data_msg(&p->enc, p->export_time, p->pending + done,
							 p->n_pending - done, &used, buf, sizeof(buf));

		if (!len || !used) {
			fail(p, p->o->ipfix_out, EMSGSIZE);
			return -1;
		}
		if (fwrite(buf, 1, len, p->ipfix) != len) {
			fail(p, p->o->ipfix_out, errno);
			return -1;
		}
		done += used;
	}
	p->n_pending = 0;
	return 0;
}

static int sink(void *arg, const struct rm_report *r)
{
	struct replay *p = arg;

	int e;

	if (p->failed)
		return -1; /* stopping: make no more reports */
	if (p->o->print && (e = p->o->print(p->o->print_arg, r)) < 0) {
		fail(p, p->o->print_name ? p->o->print_name : "output", -e);
		return -1;
	}
	if (p->ipfix) {
		if (p->n_pending == p->cap_pending) {
			size_t cap = p->cap_pending ? p->cap_pending * 2 : 256;
			struct rm_report *t = realloc(p->pending, cap * sizeof(*t));

			if (!t) {
				fail(p, p->o->ipfix_out, ENOMEM);
				return -1;
			}
			p->pending = t;
			p->cap_pending = cap;
		}
		p->pending[p->n_pending++] = *r;
		if (p->n_pending >= 512)
			ipfix_flush(p);
	}
	return 0;
}

/*
 * The meter's settings for a capture of `frames` frames: the window pool no
 * larger than the frames. Each frame makes at most one context, and each
 * context holds at most one pool window, so a pool of `frames` windows is
 * never exhausted where the configured one would not be: the counts are the
 * same, and a short capture does not create and fill the pool of a daemon
 * (32 MiB at the default W: most of the maps' creation, docs/benchmarks.md
 * "Replay start-up").
 */
static struct rm_meter_settings capture_settings(const struct rm_meter_settings *s, uint64_t frames)
{
	struct rm_meter_settings ms = *s;
	uint32_t pool = rm_meter_pool_windows(s);

	ms.max_windows = frames < pool ? (frames ? (uint32_t)frames : 1) : pool;
	return ms;
}

static int setup(struct replay *p, uint64_t frames, char *err, size_t errlen)
{
	const struct rm_config_file *cfg = p->o->cfg;
	struct rm_meter_settings ms = capture_settings(&cfg->meter, frames);
	int rc;

	struct rm_meter_load_opts lo = { .replay = 1, .replay_batch = 1, .capture = &cfg->capture };

	if (rm_meter_load_ex(&p->meter, &ms, &lo, err, errlen) ||
	    rm_meter_provision(&p->meter, cfg->provision, cfg->n_provision, cfg->meter.generation_verified, err,
			       errlen))
		return -1;
	if (p->o->ipfix_out) {
		p->ipfix = fopen(p->o->ipfix_out, "wb");
		if (!p->ipfix) {
			rm_errf(err, errlen, "%s: %s", p->o->ipfix_out, strerror(errno));
			return -1;
		}
		rm_ipfix_init(&p->enc, cfg->export.pen, cfg->export.observation_domain, cfg->meter.namespace_vlan);
		rm_ipfix_add_points(&p->enc, &cfg->capture);
	}
	if (rm_reporter_init(&p->rep, &p->meter, cfg->meter.observation_point_id, cfg->meter.namespace_vlan,
			     cfg->meter.generation_verified, 1, sink, p)) {
		rm_errf(err, errlen, "out of memory");
		return -1;
	}
	rm_reporter_set_schedule(&p->rep, p->o->report_interval_ms, cfg->meter.idle_timeout_ms);
	rc = rm_reporter_open_events(&p->rep);
	if (rc) {
		rm_errf(err, errlen, "cannot open the event ring buffer: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

/* The capture's snap length cut a frame before it could be classified:
 * it may have been a request of any context. That is a capture fault, not a
 * network event ([SEQOBS]): every open epoch closes with captureDiscontinuity
 * and metering starts afresh. */
static void capture_fault(struct replay *p, struct rm_replay_result *res)
{
	res->capture_faults++;
	rm_reporter_walk(&p->rep, RM_CTL_CLOSE, RM_FLAG_CAPTURE_DISCONTINUITY, 0);
}

static int cut_verdict(int r)
{
	return r == RM_PARSE_BAD_ETH || r == RM_PARSE_BAD_IP || r == RM_PARSE_BAD_UDP || r == RM_PARSE_BAD_BTH ||
	       r == RM_PARSE_BAD_MIRROR; /* a mirror's headers cut: the copy inside may be any request */
}

/*
 * A frame whose headers reach beyond RM_BATCH_COPY bytes: a batch of one,
 * with as much of the frame as a run's linear buffer holds (the parser reads
 * headers from there only, as from a frame run alone with
 * rm_meter_replay_frame(); 16 bytes fewer, for its record). 0 or -errno.
 */
static int run_whole(struct replay *p, const struct rm_frame *f, const uint8_t *data, uint8_t *verdict)
{
	static uint8_t one[RM_BATCH_BYTES];
	uint32_t len = f->caplen < RM_BATCH_BYTES - sizeof(struct rm_batch_rec)
			       ? f->caplen
			       : RM_BATCH_BYTES - (uint32_t)sizeof(struct rm_batch_rec);
	struct rm_batch_rec rec = { .ts_ns = f->ts_ns, .wire_len = f->wirelen, .len = (__u16)len };
	uint32_t done = 0;
	int whole = 0, r;

	memcpy(one, data, len);
	memcpy(one + len, &rec, sizeof(rec));
	r = rm_meter_replay_run(&p->meter, one, len + (uint32_t)sizeof(rec), 1, &done, verdict, &whole);
	if (r == 0 && done != 1)
		r = -EPROTO;
	return r;
}

/* Run the batch's frames, then read the events they made. 0, or -1 with err. */
static int batch_flush(struct replay *p, struct rm_replay_result *res, char *err, size_t errlen)
{
	struct batch *b = p->batch;
	uint32_t i = 0;
	int r;

	while (i < b->n) {
		uint32_t done = 0;
		int whole = 0;

		uint32_t first = RM_BATCH_BYTES - b->used; /* the last frame's copy starts here */

		r = rm_meter_replay_run(&p->meter, b->buf + first, b->end[i] - first, b->n - i, &done, b->verdict + i,
					&whole);
		if (r < 0) {
			rm_errf(err, errlen, "frames %" PRIu64 "..: BPF_PROG_TEST_RUN: %s",
				res->frames_read - b->n + i + 1, strerror(-r));
			return -1;
		}
		i += done;
		if (whole) {
			r = run_whole(p, &b->fr[i], b->whole + b->whole_off[i], &b->verdict[i]);
			if (r < 0) {
				rm_errf(err, errlen, "frame %" PRIu64 ": BPF_PROG_TEST_RUN: %s",
					res->frames_read - b->n + i + 1, strerror(-r));
				return -1;
			}
			i++;
		} else if (!done) {
			rm_errf(err, errlen, "frame %" PRIu64 ": the replay batch program made no progress",
				res->frames_read - b->n + i + 1);
			return -1;
		}
	}
	rm_reporter_drain(&p->rep);
	/* Only a batch's last frame can be cut (batch_add()). */
	if (b->n && b->fr[b->n - 1].caplen < b->fr[b->n - 1].wirelen && cut_verdict(b->verdict[b->n - 1]))
		capture_fault(p, res);
	b->n = b->used = 0;
	b->whole_used = 0;
	return 0;
}

/* Whether rm_reporter_tick(now) would do more than nothing (rm_reporter_tick()). */
static int tick_due(const struct rm_reporter *r, uint64_t now)
{
	const struct rm_schedule *s = &r->sched;

	return now >= s->next_second_ns || (s->report_interval_ns && (!s->next_report_ns || now >= s->next_report_ns));
}

/* Add frame f, arriving at now, to the batch. 0, or -1 (out of memory). */
static int batch_add(struct batch *b, const struct rm_frame *f, uint64_t now)
{
	uint32_t len = f->caplen < RM_BATCH_COPY ? f->caplen : RM_BATCH_COPY;
	struct rm_batch_rec rec = { .ts_ns = now, .wire_len = f->wirelen, .len = (__u16)len };

	if (len < f->caplen) {
		/* the whole frame as rm_meter_replay_frame() runs it (its first 64 KiB) */
		size_t whole = f->caplen < 65536 ? f->caplen : 65536;

		if (b->whole_used + whole > b->whole_cap) {
			size_t cap = b->whole_cap ? b->whole_cap * 2 : 65536 * 2;
			uint8_t *t;

			while (cap < b->whole_used + whole)
				cap *= 2;
			t = realloc(b->whole, cap);
			if (!t)
				return -1;
			b->whole = t;
			b->whole_cap = cap;
		}
		memcpy(b->whole + b->whole_used, f->data, whole);
		b->whole_off[b->n] = b->whole_used;
		b->whole_used += whole;
		rec.flags = RM_BATCH_SHORT;
	}
	b->end[b->n] = RM_BATCH_BYTES - b->used;
	b->used += (uint32_t)(sizeof(rec) + len);
	memcpy(b->buf + RM_BATCH_BYTES - b->used, f->data, len);
	memcpy(b->buf + RM_BATCH_BYTES - b->used + len, &rec, sizeof(rec));
	b->fr[b->n] = *f;
	b->fr[b->n].ts_ns = now;
	b->n++;
	return 0;
}

/* One frame, frame_no counted from 1. 0, or -1 with err. */
static int run_frame(struct replay *p, const struct rm_frame *fr, uint64_t frame_no, struct rm_replay_result *res,
		     char *err, size_t errlen)
{
	struct batch *b = p->batch;
	uint64_t now = fr->ts_ns;
	uint32_t len = fr->caplen < RM_BATCH_COPY ? fr->caplen : RM_BATCH_COPY;

	/* The clock never goes back (docs/architecture.md "Time"): a frame
	 * stamped before an earlier one arrives at the latest time seen, so
	 * that no epoch ends before it starts and no silence is invented. */
	if (frame_no > 1 && now < p->clock_ns) {
		res->timestamps_backwards++;
		if (p->clock_ns - now > res->backwards_max_ns)
			res->backwards_max_ns = p->clock_ns - now;
		now = p->clock_ns;
	}
	p->clock_ns = now;
	/* The frame-by-frame order of things: the reporter's tick and the
	 * export time before the frame, the events after it. A batch ends
	 * where that order would put something between two frames. */
	if (b->n && (tick_due(&p->rep, now) || (uint32_t)(now / 1000000000ull) != b->second ||
		     fr->caplen < RM_BATCH_FRAME_MIN || b->n == RM_BATCH_MAX ||
		     b->used + sizeof(struct rm_batch_rec) + len > RM_BATCH_BYTES)) {
		if (batch_flush(p, res, err, errlen))
			return -1;
		if (p->failed)
			return 0;
	}
	p->export_time = (uint32_t)(now / 1000000000ull);
	rm_reporter_tick(&p->rep, now);
	if (fr->caplen < fr->wirelen)
		res->truncated++;
	/* The kernel runs XDP only on frames of at least an Ethernet
	 * header; count shorter ones as the program would. */
	if (fr->caplen < RM_BATCH_FRAME_MIN) {
		p->short_frames++;
		if (fr->caplen < fr->wirelen) {
			rm_reporter_drain(&p->rep);
			capture_fault(p, res);
		}
		return 0;
	}
	b->second = p->export_time;
	if (batch_add(b, fr, now)) {
		rm_errf(err, errlen, "out of memory");
		return -1;
	}
	/* after a frame the snap length cut: the capture-fault check */
	if (fr->caplen < fr->wirelen)
		return batch_flush(p, res, err, errlen);
	return 0;
}

/* Connections a profile violation disabled: they may have no report at all
 * (the violating request came before any eligible one). */
static void collect_disabled(struct replay *p, struct rm_replay_result *res)
{
	struct rm_ctx_key key;
	struct rm_map_iter it = rm_map_iter_start(p->meter.contexts_fd, &key);
	size_t cap = 0;
	struct rm_ctx v;

	while (rm_map_iter_next(&it)) {
		if (bpf_map_lookup_elem_flags(p->meter.contexts_fd, &key, &v, BPF_F_LOCK) ||
		    !rm_ctx_flag(&v, RM_CTX_DISABLED))
			continue;
		if (res->n_disabled == cap) {
			struct rm_ctx_key *t = realloc(res->disabled, (cap = cap ? cap * 2 : 16) * sizeof(*t));

			if (!t)
				return;
			res->disabled = t;
		}
		res->disabled[res->n_disabled++] = key;
	}
}

int rm_replay_run(const struct rm_replay_opts *o, char *const *files, int nfiles, struct rm_replay_result *res,
		  char *err, size_t errlen)
{
	struct replay p = { .o = o };
	struct rm_capture *cap = NULL;
	struct rm_frame fr;
	uint64_t frames = 0;
	int r, ret = -1;

	memset(res, 0, sizeof(*res));
	/* Every file is checked before any report is made. */
	if (rm_capture_validate(files, nfiles, &frames, err, errlen))
		return -1;
	p.batch = calloc(1, sizeof(*p.batch));
	if (!p.batch) {
		rm_errf(err, errlen, "out of memory");
		return -1;
	}
	if (setup(&p, frames, err, errlen))
		goto out;
	cap = rm_capture_open(files, nfiles, err, errlen);
	if (!cap)
		goto out;
	while ((r = rm_capture_next(cap, &fr, err, errlen)) == 1) {
		res->frames_read++;
		if (o->progress && (res->frames_read % 65536 == 0 || res->frames_read == frames))
			fprintf(stderr, "\rreplay: %" PRIu64 " of %" PRIu64 " frames (%" PRIu64 "%%)", res->frames_read,
				frames, frames ? res->frames_read * 100 / frames : 100);
		if (run_frame(&p, &fr, res->frames_read, res, err, errlen))
			goto out;
		if (p.failed)
			goto write_failed;
	}
	if (o->progress && res->frames_read)
		fputs("\r\033[K", stderr); /* clear the progress line */
	if (r < 0)
		goto out;
	if (batch_flush(&p, res, err, errlen))
		goto out;
	if (p.failed)
		goto write_failed;
	rm_reporter_drain(&p.rep);
	rm_reporter_walk(&p.rep, RM_CTL_CLOSE, 0, 0);
	if (p.ipfix && !p.failed)
		ipfix_flush(&p);
	if (p.failed)
		goto write_failed;
	if (rm_meter_read_stats(p.meter.stats_fd, res->stats) == 0) {
		res->have_stats = 1;
		res->stats[RM_STAT_FRAMES] += p.short_frames;
		res->stats[RM_STAT_MALFORMED_ETH] += p.short_frames;
	}
	collect_disabled(&p, res);
	res->id_exhausted = p.rep.id_exhausted;
	ret = 0;
	goto out;
write_failed:
	rm_errf(err, errlen, "%s: %s", p.fail_what, strerror(p.fail_errno));
out:
	if (p.ipfix && fclose(p.ipfix) && ret == 0)
		rm_errf(res->close_err, sizeof(res->close_err), "%s: %s", o->ipfix_out, strerror(errno));
	free(p.pending);
	if (p.batch)
		free(p.batch->whole);
	free(p.batch);
	rm_capture_close(cap);
	rm_reporter_free(&p.rep);
	rm_meter_unload(&p.meter);
	return ret;
}

void rm_replay_result_free(struct rm_replay_result *res)
{
	free(res->disabled);
	res->disabled = NULL;
	res->n_disabled = 0;
}
