// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_verify_budget.c - the verifier's work on the meter's programs
 * (bpf/meter.bpf.c) at the default W = 2^22 stays within a budget (root).
 *
 * Verification is the start-up of every `rocemeter replay` and of every
 * attach: about 1 us of kernel time per verified instruction on the
 * development VM. The kernel reports the count it verified for each program
 * (bpf_prog_info.verified_insns): a count, not a timing, the same on every
 * run of one kernel and compiler. At W = 2^22 a clear's level-2 scan written
 * as a bounded loop made the verifier walk the rest of the clear once per
 * exit of that loop (docs/benchmarks.md "Replay start-up"): replay's batch
 * program took 315,130 instructions (0.45-0.6 s of start-up), rocemeter_ctl
 * 85,364, rocemeter_xdp 850,715. The budgets below are twice what the same
 * programs take at W = 1,024, where that scan has one word: the verifier's
 * work must not grow with W.
 *
 * Replay's start-up has a budget of its own (docs/benchmarks.md "Targets": at most 0.1 s for a
 * capture of a few frames): its two programs together at most
 * REPLAY_BUDGET instructions, some 0.08 s at the 2 us per instruction of the
 * loaded development VM. They took 78,148 + 6,406 before the parser's
 * cursor was re-anchored per header and the engine's inputs went through
 * map memory (docs/benchmarks.md "Replay start-up": 25,681 + 5,073 after).
 */
#define REPLAY_BUDGET 40000
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "meter/meter.h"
#include "rocemeter/seqobs.h"
#include "selftest.h"

/* What the kernel verified for the program fd (0 if it cannot say). */
static uint32_t verified(int fd)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.verified_insns;
}

/* Load the meter at W (replay's batch program or the attached one); the verified counts. */
static void load(uint32_t window, int replay, uint32_t *prog, uint32_t *ctl)
{
	struct rm_meter_settings s = { .window = window, .max_contexts = 1024, .max_windows = 2, .provision_all = 1 };
	struct rm_meter_load_opts o = { .replay = replay, .replay_batch = replay };
	struct rm_meter m;
	char err[512];

	if (rm_meter_load_ex(&m, &s, &o, err, sizeof(err)))
		fail_msg("cannot load the meter at W = %u: %s", window, err);
	*prog = verified(replay ? m.replay_fd : m.xdp_fd);
	*ctl = verified(m.ctl_fd);
	rm_meter_unload(&m);
	assert_true(*prog > 0 && *ctl > 0);
}

static void check(int replay)
{
	uint32_t small_prog, small_ctl, big_prog, big_ctl;

	load(1024, replay, &small_prog, &small_ctl);
	load(RM_WINDOW_MAX, replay, &big_prog, &big_ctl);
	print_message("# %s: W = 1,024: %u (ctl %u); W = 2^22: %u (ctl %u) verified instructions\n",
		      replay ? "rocemeter_replay" : "rocemeter_xdp", small_prog, small_ctl, big_prog, big_ctl);
	assert_in_range(big_prog, 1, 2 * small_prog);
	assert_in_range(big_ctl, 1, 2 * small_ctl);
}

static void test_replay_budget(void **state)
{
	check(1);
}

static void test_replay_startup_budget(void **state)
{
	uint32_t prog, ctl;

	load(RM_WINDOW_MAX, 1, &prog, &ctl);
	print_message("# replay's start-up at W = 2^22: %u + %u verified instructions (budget %u)\n", prog, ctl,
		      REPLAY_BUDGET);
	assert_in_range(prog + ctl, 1, REPLAY_BUDGET);
}

static void test_attach_budget(void **state)
{
	check(0);
}

int main(void)
{
	rm_selftest_require_root("BPF programs");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_budget),
		cmocka_unit_test(test_replay_startup_budget),
		cmocka_unit_test(test_attach_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
