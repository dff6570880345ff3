/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * census_run.h - the connection census over capture files (`rocemeter
 * connections FILE...`): every frame, in file order, through the census
 * program (user/census/census.h) with BPF_PROG_TEST_RUN, read with libpcap
 * (user/capture/capture.h).
 */
#ifndef ROCEMETER_CENSUS_RUN_H
#define ROCEMETER_CENSUS_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "census/census.h"
#include "common/config.h"
#include "common/params.h"

/*
 * The options by which the census's commands over captures (`connections`,
 * `flowlabel spread -r`) take mirrored captures: --config FILE (its
 * [capture] section) and --encapsulation LIST, into the const char *
 * fields cfg_ and encap_ of struct T; one table entry each, for
 * rm_census_capture_setup().
 */
#define RM_CENSUS_CAPTURE_OPTS(T, cfg_, encap_)                                                                 \
	RM_OPT("config", 'c', "FILE", RM_OPT_ARG,                                                               \
	       "the [capture] section of FILE: the mirror\nencapsulations to take off, and observation_point\n" \
	       "lines (a key's obs N is line N's session's)",                                                   \
	       RM_OPT_AT(T, cfg_)),                                                                             \
		RM_OPT("encapsulation", 'e', "LIST", RM_OPT_ARG,                                                \
		       "mirror encapsulations to take off, over [capture]:\nplain, erspan (erspan1, erspan2, "  \
		       "erspan3), vxlan,\nrspan, comma separated, or auto (all); sessions no\nline names get "  \
		       "observation points of their own",                                                       \
		       RM_OPT_AT(T, encap_))

/*
 * The [capture] of the census's next loads (rm_census_set_capture()): the
 * defaults, then FILE's section when config is not NULL (the whole file is
 * checked: FILE:LINE and the reason), then --encapsulation LIST over it
 * (mirror_sessions = auto with "auto"). cfg must outlive those censuses.
 * Returns 0, or -1 with one message in err.
 */
int rm_census_capture_setup(struct rm_config_file *cfg, const char *config, const char *encapsulation, char *err,
			    size_t errlen);

/*
 * Check every file first (capture.h: nothing is counted from a file set
 * with a bad file), then run the frames of files[0..nfiles-1] through a
 * census with a table of max_connections keys; frames shorter than an
 * Ethernet header are read but not run (the kernel runs no program on
 * them). progress: a progress line on stderr, for a terminal. Returns 0
 * with *res (rm_census_result_free()) and *frames_read filled, or -1 with
 * one message in err.
 */
int rm_census_captures(char *const *files, int nfiles, uint32_t max_connections, int progress,
		       struct rm_census_result *res, uint64_t *frames_read, char *err, size_t errlen);

/*
 * The hint for a census of capture files that read frames (frames_read)
 * but no BTH while only plain frames are parsed (capture settings c): the
 * frames may be mirror copies whose encapsulation was not given. NULL when
 * it does not apply. For `connections` and `flowlabel spread -r`.
 */
const char *rm_census_plain_hint(const struct rm_census_result *res, uint64_t frames_read,
				 const struct rm_capture_settings *c);

#endif
