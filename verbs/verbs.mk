# The libibverbs ABI over libfalcon-client (issue 24; included by Makefile): $(BUILD)/verbs/
# holds libibverbs.so.1, which unmodified verbs programs load instead of rdma-core's through
# falcon-run (verbs/falcon-run.in), and falcon-run itself.
# infiniband/verbs.h (the ABI's structs) comes from libibverbs-dev; ibverbs-utils and
# perftest are the programs tests/e2e/test_verbs.sh runs over it.
DEB_PKGS += libibverbs-dev ibverbs-utils perftest

VERBS_SRCS := verbs/device.c verbs/objects.c verbs/qp.c verbs/stubs.c
VERBS_OBJS := $(VERBS_SRCS:%.c=$(BUILD)/%.pic.o)
VERBS_LIB := $(BUILD)/verbs/libibverbs.so.1
FALCON_RUN := $(BUILD)/verbs/falcon-run

$(BUILD)/verbs/%.pic.o: verbs/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

# the client library found beside it in the build tree ($ORIGIN/../lib) and installed
# ($ORIGIN/.., the library directory above $(PREFIX)/lib/falcon-verbs)
$(VERBS_LIB): $(VERBS_OBJS) verbs/libibverbs.map $(CLIENT_LIB)
	$(CC) -shared -Wl,-soname,libibverbs.so.1 -Wl,--version-script=verbs/libibverbs.map \
		-Wl,--no-undefined $(VERBS_OBJS) -o $@ $(ALL_LDFLAGS) -L$(BUILD)/lib -lfalcon-client \
		$(if $(filter 1,$(NO_RPATH)),,-Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/..') -lpthread

$(FALCON_RUN): verbs/falcon-run.in
	@mkdir -p $(@D)
	sed -e 's|@VERBS_DIR@|$$(cd "$$(dirname "$$0")" \&\& pwd)|' $< > $@ && chmod 755 $@

DAEMON_ALL += $(VERBS_LIB) $(FALCON_RUN)
all: $(VERBS_LIB) $(FALCON_RUN)

# make install / uninstall: install.mk's manifest (LIBDIR/falcon-verbs, falcon-run, its page)

# tests/e2e/test_verbs.sh's misbehaving verbs program: built against rdma-core's headers
# and library like any verbs program, run over falcon's through falcon-run
VERBS_ABUSE := $(BUILD)/tests/e2e/verbs_abuse
$(VERBS_ABUSE): tests/e2e/verbs_abuse.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(ALL_LDFLAGS) -libverbs
all: $(VERBS_ABUSE)
