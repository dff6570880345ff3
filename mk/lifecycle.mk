# Epoch lifecycle and service (issue 8): the systemd template unit
# rocemeter@IFACE.service, the annotated example configuration, and the
# tests of the configuration parser, idle expiry, reload, shutdown, capture
# discontinuity and sd_notify readiness.
SBINDIR        ?= $(PREFIX)/sbin
SYSCONFDIR     ?= /etc
DOCDIR         ?= $(PREFIX)/share/doc/rocemeter
SYSTEMD_UNITDIR ?= $(PREFIX)/lib/systemd/system

CHECK_PROGS    += $(BUILD)/tests/test_config
CHECK_SCRIPTS  += tests/test_lifecycle.py

# The unit with the installation paths filled in.
$(BUILD)/systemd/rocemeter@.service: systemd/rocemeter@.service.in
	@mkdir -p $(@D)
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' $< > $@.tmp
	mv $@.tmp $@

# The paths depend on the variables, not only on the .in file: regenerate always.
.PHONY: install-systemd $(BUILD)/systemd/rocemeter@.service
install: install-systemd
install-systemd: $(BUILD)/systemd/rocemeter@.service
	install -D -m 0644 $< '$(DESTDIR)$(SYSTEMD_UNITDIR)/rocemeter@.service'
	install -D -m 0644 docs/rocemeter.conf.example '$(DESTDIR)$(SYSCONFDIR)/rocemeter/example.conf'
