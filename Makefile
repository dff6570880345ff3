# rocemeter - RoCEv2 PSN sequence observation with eBPF, IPFIX export over TLS 1.3.
#
#   make            build BPF objects, skeletons and the rocemeter binary
#   make deps       install build and test dependencies (Debian 12, apt-get)
#   make check      install missing dependencies, build, run every test, then check-sanitize
#   make check-sanitize  the unit programs and replay again under ASan+UBSan (build/san/)
#   make bench      run the benchmarks (figures, never assertions)
#   make demo       the main job end to end (see README.md)
#   make install    install under $(DESTDIR)$(PREFIX)
#   make deb        the Debian package (debian/, dpkg-buildpackage) under build/deb/
#   make vmlinux    regenerate vmlinux/vmlinux.h from the running kernel's BTF
#
# One fragment per source folder in mk/*.mk appends to ROCEMETER_SRCS, BPF_NAMES, TEST_BPF_NAMES,
# CHECK_PROGS, CHECK_SCRIPTS and BENCH_PROGS; this file holds the rules.

# CPPFLAGS and LDFLAGS are the caller's (dpkg-buildflags: fortify, relro, bindnow).
# Installation directories, one definition each (make install, mk/systemd.mk).
PREFIX          ?= /usr/local
DESTDIR         ?=
SBINDIR         ?= $(PREFIX)/sbin
LIBDIR          ?= $(PREFIX)/lib/rocemeter
MANDIR          ?= $(PREFIX)/share/man
DOCDIR          ?= $(PREFIX)/share/doc/rocemeter
BASHCOMPDIR     ?= $(PREFIX)/share/bash-completion/completions
SYSCONFDIR      ?= /etc
SYSTEMD_UNITDIR ?= $(PREFIX)/lib/systemd/system
BUILD     ?= build
CC        ?= gcc
CLANG     ?= clang
BPFTOOL   ?= bpftool
PYTHON    ?= /usr/bin/python3

CFLAGS    ?= -O2 -g
CFLAGS    += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE \
             -Iinclude -Iuser -I$(BUILD) $(shell pkg-config --cflags glib-2.0 2>/dev/null)
# SANITIZE: compiler flags of a sanitizer build (make check-sanitize sets it), added to every object.
CFLAGS    += $(SANITIZE)
LDLIBS    += -lbpf -lelf -lz -lssl -lcrypto -lpcap -lsqlite3 -linih -lsystemd -lglib-2.0 -lpthread
# The BPF programs' target architecture (bpf_tracing.h's register names) from the build host's,
# by libbpf's names; ARCH=arm64 and so on for another one.
ARCH      ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/i.86/x86/' -e 's/aarch64.*/arm64/' \
                 -e 's/ppc64.*/powerpc/' -e 's/riscv64/riscv/' -e 's/loongarch64/loongarch/')
ARCH      := $(ARCH)
BPF_CFLAGS = -target bpf -mcpu=v3 -g -O2 -Wall -Werror -Wno-unused-function \
             -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Iinclude -Ibpf

.DEFAULT_GOAL := all
# A recipe that fails leaves no half-written target behind.
.DELETE_ON_ERROR:
ROCEMETER_SRCS := user/main.c
BPF_NAMES      :=
TEST_BPF_NAMES :=
CHECK_PROGS    :=
CHECK_SCRIPTS  :=
SAN_SCRIPTS    :=
BENCH_PROGS    :=
TEST_LDLIBS    := -lcmocka

include $(sort $(wildcard mk/*.mk))

BPF_OBJS  := $(patsubst %,$(BUILD)/%.bpf.o,$(BPF_NAMES))
BPF_SKELS := $(patsubst %,$(BUILD)/%.skel.h,$(BPF_NAMES))
# The BPF programs of tests and benchmarks (selftests/progs/, never installed), built beside them.
TEST_BPF_OBJS  := $(patsubst %,$(BUILD)/selftests/progs/%.bpf.o,$(TEST_BPF_NAMES))
TEST_BPF_SKELS := $(patsubst %,$(BUILD)/selftests/progs/%.skel.h,$(TEST_BPF_NAMES))
ROCEMETER_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(ROCEMETER_SRCS))

.PHONY: all deps check bench demo install vmlinux clean
all: $(BPF_OBJS) $(BPF_SKELS) $(TEST_BPF_OBJS) $(TEST_BPF_SKELS) $(BUILD)/rocemeter $(BUILD)/libexec/rocemeter

# Header dependencies come from the compilers (-MMD -MP: build/**/*.d).
DEPFLAGS   = -MMD -MP -MT $@ -MF $@.d

$(BUILD)/%.bpf.o: bpf/%.bpf.c vmlinux/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@
$(BUILD)/selftests/progs/%.bpf.o: selftests/progs/%.bpf.c vmlinux/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

# The skeleton of NAME.bpf.o is struct NAME, wherever the object is.
$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$(notdir $*)) > $@.tmp && mv $@.tmp $@

# Every object waits for the skeletons: which ones a file includes is known
# only after its first compilation.
$(BUILD)/user/%.o: user/%.c | $(BPF_SKELS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# The subcommands: build/libexec/rocemeter, installed as $(LIBDIR)/rocemeter.
$(BUILD)/libexec/rocemeter: $(ROCEMETER_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The `rocemeter` command: a static launcher (user/launch/launch.c) that blocks the daemons'
# signals before any dynamic loader runs, then executes the one above. Its own flags, never
# the sanitizers' (no static link with them); $(LIBDIR) compiled in, rebuilt when it changes.
LAUNCH_CFLAGS ?= -O2 -g
$(BUILD)/launch-libdir: FORCE
	@mkdir -p $(@D)
	@echo '$(LIBDIR)' | cmp -s - $@ || echo '$(LIBDIR)' > $@
$(BUILD)/rocemeter: user/launch/launch.c user/common/signals.h $(BUILD)/launch-libdir
	$(CC) $(CPPFLAGS) $(LAUNCH_CFLAGS) -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iuser \
		-DRM_LIBDIR='"$(LIBDIR)"' $(LDFLAGS) -static -o $@ $<
.PHONY: FORCE
FORCE:

# Test programs and benchmarks: tests/unit/ (no root), selftests/bpf/,
# selftests/system/, selftests/bench/, helpers in tests/lib/, their BPF
# programs in selftests/progs/; each is linked with every rocemeter object
# except main.o.
LIB_OBJS = $(filter-out $(BUILD)/user/main.o,$(ROCEMETER_OBJS))
TEST_CFLAGS = -Itests/lib $(TEST_CFLAGS_$*)
$(BUILD)/tests/%: tests/%.c $(LIB_OBJS) | $(BPF_SKELS) $(TEST_BPF_SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(TEST_CFLAGS) $(DEPFLAGS) -o $@ $< $(LIB_OBJS) $(TEST_LDLIBS) $(LDLIBS)
$(BUILD)/selftests/%: selftests/%.c $(LIB_OBJS) | $(BPF_SKELS) $(TEST_BPF_SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(TEST_CFLAGS) $(DEPFLAGS) -o $@ $< $(LIB_OBJS) $(TEST_LDLIBS) $(LDLIBS)

deps:
	@scripts/deps.sh

check: deps all $(CHECK_PROGS)
	@scripts/run-tests $(CHECK_PROGS) $(CHECK_SCRIPTS)
	@$(MAKE) --no-print-directory check-sanitize

# The unit programs and a replay subset again, built under ASan and UBSan in $(BUILD)/san (the
# `rocemeter` launcher stays a plain static program; the binary it executes is instrumented). Any
# report stops the program that made it (halt_on_error, no recovery), so the test fails. Not
# test_seqobs_random (minutes under ASan; its engine is test_seqobs's); the replay tests run
# every shared capture through `rocemeter replay` and compare with the plain build (SAN_SCRIPTS,
# mk/replay.mk). About 5 minutes on a quiet 2-core host, most of it the build.
SAN_BUILD   = $(BUILD)/san
SAN_FLAGS   = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_UNIT    = $(filter-out %/test_seqobs_random,\
                $(patsubst $(BUILD)/%,$(SAN_BUILD)/%,$(filter $(BUILD)/tests/unit/%,$(CHECK_PROGS))))
SAN_ENV     = ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
              ROCEMETER_SANITIZED=1 ROCEMETER_PLAIN=$(CURDIR)/$(BUILD)/rocemeter BUILD=$(SAN_BUILD)
.PHONY: check-sanitize
check-sanitize: all
	@$(MAKE) --no-print-directory -s BUILD=$(SAN_BUILD) SANITIZE="$(SAN_FLAGS)" all $(SAN_UNIT)
	@$(SAN_ENV) scripts/run-tests $(SAN_UNIT) $(SAN_SCRIPTS)

bench: deps all $(BENCH_PROGS)
	@scripts/bench $(BENCH_PROGS)

# The build's command lines are not the demo's output (-s); warnings and errors still show.
demo: deps
	@$(MAKE) -s --no-print-directory all
	@scripts/demo

install: all
	install -D -m 0755 $(BUILD)/rocemeter $(DESTDIR)$(SBINDIR)/rocemeter
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0755 $(BUILD)/libexec/rocemeter $(DESTDIR)$(LIBDIR)/rocemeter
	install -m 0644 $(BUILD)/meter.bpf.o $(BUILD)/flowlabel.bpf.o $(DESTDIR)$(LIBDIR)/
	install -D -m 0644 docs/rocemeter.8 $(DESTDIR)$(MANDIR)/man8/rocemeter.8
	install -m 0644 $(wildcard docs/man/*.8) $(DESTDIR)$(MANDIR)/man8/
	install -D -m 0644 completion/rocemeter $(DESTDIR)$(BASHCOMPDIR)/rocemeter
	install -d $(DESTDIR)$(DOCDIR)
	install -m 0644 README.md $(filter-out docs/README.md docs/rocemeter.8 docs/man docs/clickhouse docs/prometheus,$(wildcard docs/*)) $(DESTDIR)$(DOCDIR)/
	install -m 0644 docs/README.md $(DESTDIR)$(DOCDIR)/index.md
	install -d $(DESTDIR)$(DOCDIR)/prometheus
	install -m 0644 docs/prometheus/rocemeter-rules.yml $(DESTDIR)$(DOCDIR)/prometheus/
	install -d $(DESTDIR)$(DOCDIR)/clickhouse
	install -m 0644 $(wildcard docs/clickhouse/*.sql) $(DESTDIR)$(DOCDIR)/clickhouse/

# Not the copy of the tree that `make deb` builds in, nor the sanitizer build (its own make).
-include $(shell find $(BUILD) \( -path $(BUILD)/deb -o -path $(BUILD)/san \) -prune -o -type f -name '*.d' -print 2>/dev/null)

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/vmlinux.h.tmp
	mv vmlinux/vmlinux.h.tmp vmlinux/vmlinux.h

clean:
	rm -rf $(BUILD)
