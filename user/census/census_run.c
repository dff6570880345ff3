// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* census_run.c - the census's frame loop over capture files (see census_run.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture.h"
#include "census_run.h"
#include "common/errmsg.h"

#define RM_ETH_HLEN 14

int rm_census_capture_setup(struct rm_config_file *cfg, const char *config, const char *encapsulation, char *err,
			    size_t errlen)
{
	char why[512];

	rm_config_defaults(cfg);
	if (config && rm_config_load(config, cfg, err, errlen))
		return -1;
	if (encapsulation && rm_capture_override(&cfg->capture, encapsulation, why, sizeof(why))) {
		rm_errf(err, errlen, "--encapsulation %s: %s", encapsulation, why);
		return -1;
	}
	rm_census_set_capture(&cfg->capture);
	return 0;
}

const char *rm_census_plain_hint(const struct rm_census_result *res, uint64_t frames_read,
				 const struct rm_capture_settings *c)
{
	if (!frames_read || res->stats[RM_CENSUS_STAT_BTH_FRAMES] || c->encap != RM_ENCAP_PLAIN)
		return NULL;
	return "no frame with a BTH read as plain RoCEv2: if the capture holds mirror copies, give their "
	       "encapsulation (--encapsulation erspan, vxlan, rspan or auto, or --config FILE with a [capture] "
	       "section)";
}

int rm_census_captures(char *const *files, int nfiles, uint32_t max_connections, int progress,
		       struct rm_census_result *res, uint64_t *frames_read, char *err, size_t errlen)
{
	struct rm_capture *cap = NULL;
	struct rm_census c;
	struct rm_frame fr;
	uint64_t frames = 0;
	int r, ret = -1;

	memset(res, 0, sizeof(*res));
	*frames_read = 0;
	if (rm_capture_validate(files, nfiles, &frames, err, errlen))
		return -1;
	if (rm_census_load(&c, max_connections, err, errlen))
		return -1;
	cap = rm_capture_open(files, nfiles, err, errlen);
	if (!cap)
		goto out;
	while ((r = rm_capture_next(cap, &fr, err, errlen)) == 1) {
		++*frames_read;
		if (progress && (*frames_read % 65536 == 0 || *frames_read == frames))
			fprintf(stderr, "\rconnections: %" PRIu64 " of %" PRIu64 " frames (%" PRIu64 "%%)",
				*frames_read, frames, frames ? *frames_read * 100 / frames : 100);
		if (fr.caplen < RM_ETH_HLEN)
			continue;
		r = rm_census_run_frame(&c, fr.data, fr.caplen, fr.wirelen, fr.ts_ns);
		if (r < 0) {
			rm_errf(err, errlen, "frame %" PRIu64 ": BPF_PROG_TEST_RUN: %s", *frames_read, strerror(-r));
			goto out;
		}
	}
	if (progress && *frames_read)
		fputs("\r\033[K", stderr); /* clear the progress line */
	if (r < 0)
		goto out;
	r = rm_census_read(&c, res);
	if (r) {
		rm_errf(err, errlen, "cannot read the census: %s", strerror(-r));
		goto out;
	}
	ret = 0;
out:
	rm_capture_close(cap);
	rm_census_close(&c);
	return ret;
}
