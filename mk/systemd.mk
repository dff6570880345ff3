# systemd/: the template unit rocemeter@IFACE.service and rocemeter-collect.service,
# generated with the installation paths, the drop-in for hosts with udev
# (rocemeter-device.conf, installed with the documentation), and the annotated
# example configuration. selftests/system/test_service.py boots them under a live
# systemd in a container (scripts/container-root).
# The installation directories are the Makefile's.
SYSTEMD_UNITS  := rocemeter@.service rocemeter-collect.service

# The units with the installation paths filled in (a static pattern rule: the
# targets are phony, which an implicit rule would not build).
$(addprefix $(BUILD)/systemd/,$(SYSTEMD_UNITS)): $(BUILD)/systemd/%.service: systemd/%.service.in
	@mkdir -p $(@D)
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' $< > $@.tmp
	mv $@.tmp $@

# The paths depend on the variables, not only on the .in files: regenerate always.
.PHONY: install-systemd $(addprefix $(BUILD)/systemd/,$(SYSTEMD_UNITS))
install: install-systemd
install-systemd: $(addprefix $(BUILD)/systemd/,$(SYSTEMD_UNITS))
	install -D -m 0644 $(BUILD)/systemd/rocemeter@.service '$(DESTDIR)$(SYSTEMD_UNITDIR)/rocemeter@.service'
	install -D -m 0644 $(BUILD)/systemd/rocemeter-collect.service \
		'$(DESTDIR)$(SYSTEMD_UNITDIR)/rocemeter-collect.service'
	install -D -m 0644 systemd/rocemeter-device.conf '$(DESTDIR)$(DOCDIR)/rocemeter-device.conf'
	install -D -m 0644 docs/rocemeter.conf.example '$(DESTDIR)$(SYSCONFDIR)/rocemeter/example.conf'
	install -D -m 0644 docs/collect.conf.example '$(DESTDIR)$(SYSCONFDIR)/rocemeter/collect.conf.example'

# The live systemd test needs debootstrap and systemd-nspawn (make deps).
CHECK_SCRIPTS  += selftests/system/test_service.py
