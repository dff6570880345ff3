# debian/: the Debian package, built by the Debian tools (debhelper, dpkg-buildpackage)
# from a copy of the tree under build/deb/, so that the tree stays clean; the
# .deb, .buildinfo and .changes land in build/deb/. selftests/system/test_deb.py
# builds it, runs lintian and installs it into the container of test_service.py.
DEB_VERSION := $(shell dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null)
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null)
DEB_DIR     := $(BUILD)/deb
DEB_FILE    := $(DEB_DIR)/rocemeter_$(DEB_VERSION)_$(DEB_ARCH).deb

.PHONY: deb
# The copy holds the files git knows (tracked, and new ones not ignored), as they are in the tree.
# The inner build is a fresh one: none of this make's variables reach it.
deb:
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/rocemeter-$(DEB_VERSION)
	git ls-files -z -c -o --exclude-standard | xargs -0 cp --parents -t $(DEB_DIR)/rocemeter-$(DEB_VERSION)
	cd $(DEB_DIR)/rocemeter-$(DEB_VERSION) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		dpkg-buildpackage -b -us -uc >../build.log 2>&1 || { tail -n 30 ../build.log; exit 1; }
	@echo "deb: $(DEB_FILE)"

# The package depends on libjs-d3, whose D3 report --format html reads (no root).
CHECK_SCRIPTS  += tests/unit/test_deb_depends.py
CHECK_SCRIPTS  += selftests/system/test_deb.py
