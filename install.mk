# install.mk - where falcon installs, make install, make uninstall (included by Makefile).
#
#   make && make install                       PREFIX=/usr/local, configuration in /etc
#   make install PREFIX=$HOME/x                as an ordinary user: everything under $HOME/x
#   make install DESTDIR=/tmp/stage PREFIX=/usr   staged (debian/rules does this)
#   make uninstall (same variables)            removes what install put there
#
# Every directory has a variable of the GNU names (make install LIBDIR=... overrides one).
# LIBDIR is Debian's multiarch directory, where ld.so, pkg-config, libfabric (its
# providers in LIBDIR/libfabric) and Wireshark (its Lua plugins in
# LIBDIR/wireshark/plugins) look; SYSCONFDIR is /etc for the system prefixes /usr and
# /usr/local, PREFIX/etc for any other. The systemd unit, sysusers.d and tmpfiles.d files
# go where systemd reads them for /usr (systemd.pc), under PREFIX otherwise.
# The steps after an install (group, directories, key, ldconfig, the service) are in
# README.md, "Installing".

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/falcon
SYSCONFDIR ?= $(if $(filter /usr /usr/local,$(PREFIX)),/etc,$(PREFIX)/etc)
FI_PROVIDER_DIR ?= $(LIBDIR)/libfabric
WIRESHARK_LUA_DIR ?= $(LIBDIR)/wireshark/plugins
SYSTEMD_UNIT_DIR ?= $(if $(filter /usr,$(PREFIX)),$(or $(shell pkg-config \
	--variable=systemdsystemunitdir systemd 2>/dev/null),/lib/systemd/system),$(PREFIX)/lib/systemd/system)
SYSUSERS_DIR ?= $(PREFIX)/lib/sysusers.d
TMPFILES_DIR ?= $(PREFIX)/lib/tmpfiles.d
BASH_COMPLETION_DIR ?= $(DATADIR)/bash-completion/completions

# Files made for the install from templates, with the directories above filled in.
INST ?= $(BUILD)/install
$(INST)/falcon-client.pc: lib/falcon-client.pc.in FORCE
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(CLIENT_VERSION)|' $< > $@
$(INST)/falcond.service: systemd/falcond.service.in FORCE
	@mkdir -p $(@D)
	$(call unit_of,$(SBINDIR),$(SYSCONFDIR)) > $@
# the configuration names its key where this install keeps it
$(INST)/falcond.conf: systemd/falcond.conf.example FORCE
	@mkdir -p $(@D)
	sed -e 's|^# key /etc/falcon/falcond.key .*|key $(SYSCONFDIR)/falcon/falcond.key|' $< > $@
# falcon-run with the directory its libibverbs.so.1 is installed in
$(INST)/falcon-run: verbs/falcon-run.in FORCE
	@mkdir -p $(@D)
	sed -e 's|@VERBS_DIR@|$(LIBDIR)/falcon-verbs|' $< > $@
$(INST)/falcon.tmpfiles: systemd/falcon.tmpfiles FORCE
	@mkdir -p $(@D)
	sed -e 's| /etc/falcon | $(SYSCONFDIR)/falcon |' $< > $@
.PHONY: FORCE
FORCE:

# the systemd unit with its paths: $(call unit_of,SBINDIR,SYSCONFDIR)
unit_of = sed -e 's|@SBINDIR@|$(1)|' -e 's|@SYSCONFDIR@|$(2)|' systemd/falcond.service.in

# What goes where (scripts/install.sh reads it: f MODE SRC DEST, l TARGET DEST,
# c MODE SRC DEST for configuration, d DIR). Package by package as debian/ splits it.
define INSTALL_MANIFEST
f 755 $(FALCOND) $(SBINDIR)/falcond
f 755 $(FALCONCTL) $(BINDIR)/falconctl
f 755 $(FALCON_PERF) $(BINDIR)/falcon-perf
f 644 $(INST)/falcond.service $(SYSTEMD_UNIT_DIR)/falcond.service
f 644 systemd/falcon.sysusers $(SYSUSERS_DIR)/falcon.conf
f 644 $(INST)/falcon.tmpfiles $(TMPFILES_DIR)/falcon.conf
f 644 docs/man/falcond.8 $(MANDIR)/man8/falcond.8
f 644 docs/man/falconctl.8 $(MANDIR)/man8/falconctl.8
f 644 docs/man/falcond.conf.5 $(MANDIR)/man5/falcond.conf.5
f 644 docs/man/falcon-perf.1 $(MANDIR)/man1/falcon-perf.1
f 644 cli/falconctl.bash $(BASH_COMPLETION_DIR)/falconctl
f 644 daemon/falcond.bash $(BASH_COMPLETION_DIR)/falcond
f 644 bench/falcon-perf.bash $(BASH_COMPLETION_DIR)/falcon-perf
f 644 systemd/falcond.conf.example $(DOCDIR)/falcond.conf.example
d $(SYSCONFDIR)/falcon
c 640 $(INST)/falcond.conf $(SYSCONFDIR)/falcon/falcond.conf
f 644 $(CLIENT_LIB).$(CLIENT_VERSION) $(LIBDIR)/libfalcon-client.so.$(CLIENT_VERSION)
l libfalcon-client.so.$(CLIENT_VERSION) $(LIBDIR)/$(CLIENT_SONAME)
l libfalcon-client.so.$(CLIENT_VERSION) $(LIBDIR)/libfalcon-client.so
f 644 $(INST)/falcon-client.pc $(LIBDIR)/pkgconfig/falcon-client.pc
f 644 include/falcon/falcon.h $(INCLUDEDIR)/falcon/falcon.h
f 644 include/falcon/api.h $(INCLUDEDIR)/falcon/api.h
f 644 include/falcon/queue.h $(INCLUDEDIR)/falcon/queue.h
f 644 docs/man/libfalcon-client.3 $(MANDIR)/man3/libfalcon-client.3
f 644 examples/demo.c $(DOCDIR)/examples/demo.c
f 644 examples/rc_pingpong.c $(DOCDIR)/examples/rc_pingpong.c
f 644 $(FABRIC_PROV) $(FI_PROVIDER_DIR)/libfalcon-fi.so
f 644 $(VERBS_LIB) $(LIBDIR)/falcon-verbs/libibverbs.so.1
f 755 $(INST)/falcon-run $(BINDIR)/falcon-run
f 644 docs/man/falcon-run.1 $(MANDIR)/man1/falcon-run.1
f 644 tools/wireshark/falcon.lua $(WIRESHARK_LUA_DIR)/falcon.lua
endef

# the products alone (no tests): what install and the Debian packages need
PROGRAMS := $(FALCOND) $(FALCONCTL) $(FALCON_PERF) $(CLIENT_LIB) $(FABRIC_PROV) $(VERBS_LIB)
programs: $(PROGRAMS)

install: $(PROGRAMS) $(INST)/falcon-client.pc $(INST)/falcond.service $(INST)/falcond.conf \
		$(INST)/falcon.tmpfiles $(INST)/falcon-run
	$(file >$(INST)/manifest,$(INSTALL_MANIFEST))
	scripts/install.sh install $(INST)/manifest "$(DESTDIR)"

# the Wireshark dissector alone (tests/e2e/test_dissector.sh)
install-wireshark:
	install -D -m 644 tools/wireshark/falcon.lua $(DESTDIR)$(WIRESHARK_LUA_DIR)/falcon.lua

# what install put there, nothing else: an operator's changed configuration and the
# identity key stay (and are named)
uninstall: $(INST)/falcond.conf
	$(file >$(INST)/manifest,$(INSTALL_MANIFEST))
	scripts/install.sh uninstall $(INST)/manifest "$(DESTDIR)" $(PREFIX) \
		$(if $(filter $(PREFIX)/%,$(SYSCONFDIR)),,$(SYSCONFDIR))

# the install variables, for scripts and tests: make -s install-dirs [PREFIX=...]
install-dirs:
	@$(foreach v,PREFIX BINDIR SBINDIR LIBDIR INCLUDEDIR MANDIR DOCDIR SYSCONFDIR \
		FI_PROVIDER_DIR WIRESHARK_LUA_DIR SYSTEMD_UNIT_DIR SYSUSERS_DIR TMPFILES_DIR \
		BASH_COMPLETION_DIR,echo $(v)=$($(v));)

.PHONY: programs install install-wireshark uninstall install-dirs

# ---------------------------------------------------------------------------
# make deb: the Debian packages (debian/) built from a copy of the tree in
# $(DEB_DIR)/src (dpkg-buildpackage writes its .deb files into the parent of the tree it
# builds: $(DEB_DIR)), then lintian over them; fails on a lintian error or when
# debian/changelog's version is not the Makefile's VERSION.
# ---------------------------------------------------------------------------
DEB_DIR ?= $(BUILD)/deb
deb: deb-deps
	@v=$$(dpkg-parsechangelog -S Version); [ "$$v" = "$(VERSION)" ] || \
		{ echo "debian/changelog says $$v, the Makefile's VERSION $(VERSION)" >&2; exit 1; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git ls-files -z -co --exclude-standard | \
			tar --null --ignore-failed-read -T - -cf - 2>/dev/null; \
	else \
		tar --exclude='./build*' --exclude='./.git' -cf - .; \
	fi | tar -xf - -C $(DEB_DIR)/src
	cd $(DEB_DIR)/src && dpkg-buildpackage -us -uc -b
	lintian --fail-on error --info $(DEB_DIR)/*.changes
	@ls -l $(DEB_DIR)/*.deb
.PHONY: deb
