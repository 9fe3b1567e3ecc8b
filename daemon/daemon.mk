# falcond, libfalcon-client, falconctl, the demo and the examples (included by Makefile).

FALCOND_SRCS := daemon/main.c daemon/loop.c daemon/api.c daemon/cm.c daemon/admin.c daemon/json.c daemon/log.c \
	daemon/notify.c daemon/sec.c daemon/hs.c daemon/poll.c
# --metrics: /metrics over libmicrohttpd, the admin socket's JSON rendered by prom.c
FALCOND_SRCS += daemon/metrics.c daemon/prom.c daemon/jread.c
# --io xdp: the AF_XDP backend and the loader of bpf/falcon_xdp (its skeleton; libxdp, libbpf)
XDP_DAEMON_SRCS := daemon/io_xdp.c daemon/xdp_load.c
XDP_LIBS := -lxdp -lbpf -lelf -lz
FALCOND_SRCS += $(XDP_DAEMON_SRCS)
$(BUILD)/daemon/xdp_load.o: $(BUILD)/bpf/falcon_xdp.skel.h
$(BUILD)/daemon/xdp_load.o $(BUILD)/daemon/loop.o $(BUILD)/daemon/main.o: ALL_CFLAGS += -I$(BUILD)/bpf
$(BUILD)/tests/unit/test_io_xdp: $(BUILD)/daemon/io_xdp.o $(BUILD)/bpf/xsk_meta_test.skel.h
$(BUILD)/tests/unit/test_io_xdp: UNIT_EXTRA := $(BUILD)/daemon/io_xdp.o $(XDP_LIBS)
$(BUILD)/tests/unit/test_io_xdp: UNIT_CFLAGS := -I$(BUILD)/bpf
FALCOND_OBJS := $(FALCOND_SRCS:%.c=$(BUILD)/%.o)
FALCOND := $(BUILD)/daemon/falcond

$(FALCOND): $(FALCOND_OBJS) $(NODE_LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(FALCOND_OBJS) -o $@ $(NODE_LIB) $(ENGINE_LIB) $(ALL_LDFLAGS) -lev -lsodium -lcrypto -lpthread \
		$(XDP_LIBS) -lmicrohttpd

# the client library: position-independent, only falcon_* exported (symbol version map)
CLIENT_VERSION := $(VERSION)
CLIENT_SONAME := libfalcon-client.so.0
CLIENT_LIB := $(BUILD)/lib/libfalcon-client.so
$(BUILD)/lib/client.pic.o: lib/client.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(CLIENT_LIB): $(BUILD)/lib/client.pic.o lib/libfalcon-client.map
	$(CC) -shared -Wl,-soname,$(CLIENT_SONAME) -Wl,--version-script=lib/libfalcon-client.map \
		-Wl,--no-undefined $< -o $@.$(CLIENT_VERSION) $(ALL_LDFLAGS) -lpthread
	ln -sf $(notdir $@).$(CLIENT_VERSION) $(BUILD)/lib/$(CLIENT_SONAME)
	ln -sf $(notdir $@).$(CLIENT_VERSION) $@

FALCONCTL := $(BUILD)/cli/falconctl
# falconctl: its tables through libsmartcols (as lsblk), the trace chart through libpng,
# the JSON reader and the Prometheus text shared with falcond (daemon/jread.c, prom.c)
FALCONCTL_OBJS := $(BUILD)/daemon/hs.o $(BUILD)/cli/plot.o $(BUILD)/daemon/jread.o \
	$(BUILD)/daemon/prom.o
$(FALCONCTL): cli/falconctl.c $(FALCONCTL_OBJS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< $(FALCONCTL_OBJS) -o $@ $(ALL_LDFLAGS) -lsodium -lsmartcols -lpng

# programs over the client library find it beside them in the build tree, and installed
# (install.mk's LIBDIR) one directory up from BINDIR
CLIENT_LINK := -L$(BUILD)/lib -lfalcon-client $(if $(filter 1,$(NO_RPATH)),,\
	-Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/../lib/$(MULTIARCH)') -lpthread
EXAMPLE_BINS := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
$(BUILD)/examples/%: examples/%.c $(CLIENT_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(ALL_LDFLAGS) $(CLIENT_LINK)

FALCON_PERF := $(if $(wildcard bench/falcon_perf.c),$(BUILD)/bench/falcon-perf)
$(BUILD)/bench/falcon-perf: bench/falcon_perf.c $(CLIENT_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(ALL_LDFLAGS) $(CLIENT_LINK) -lm

# many RC QPs between two daemons: setup time, RSS and round-robin rate per QP (bench-qps)
MANY_QPS := $(BUILD)/bench/many_qps
$(MANY_QPS): bench/many_qps.c $(CLIENT_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(ALL_LDFLAGS) $(CLIENT_LINK)

DAEMON_ALL := $(FALCOND) $(CLIENT_LIB) $(FALCONCTL) \
	$(EXAMPLE_BINS) $(FALCON_PERF) $(MANY_QPS)

# end-to-end test programs (tests/e2e/*.sh run them against live daemons)
E2E_BINS := $(BUILD)/tests/e2e/e2e_client $(BUILD)/tests/e2e/api_abuse $(BUILD)/tests/e2e/qp_types \
	$(BUILD)/tests/e2e/notify_recv $(BUILD)/tests/e2e/pkt_tool $(BUILD)/tests/e2e/api_contract \
	$(BUILD)/tests/e2e/bigmsg $(BUILD)/tests/e2e/why_client $(BUILD)/tests/e2e/limits
$(BUILD)/tests/e2e/%: tests/e2e/%.c $(CLIENT_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(ALL_LDFLAGS) -L$(BUILD)/lib -lfalcon-client \
		-Wl,-rpath,'$$ORIGIN/../../lib' -lpthread
DAEMON_ALL += $(E2E_BINS)
