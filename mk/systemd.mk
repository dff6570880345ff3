# systemd/: the template unit rocemeter@IFACE.service, generated with the
# installation paths, and the annotated example configuration.
SBINDIR        ?= $(PREFIX)/sbin
SYSCONFDIR     ?= /etc
DOCDIR         ?= $(PREFIX)/share/doc/rocemeter
SYSTEMD_UNITDIR ?= $(PREFIX)/lib/systemd/system


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
