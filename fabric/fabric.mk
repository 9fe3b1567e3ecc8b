# The libfabric provider libfalcon-fi.so (fabric/) and its tests (included by Makefile).
# libfabric loads it from FI_PROVIDER_PATH=$(BUILD)/fabric (fi_info -l lists "falcon").

FABRIC_SRCS := $(wildcard fabric/*.c)
FABRIC_OBJS := $(FABRIC_SRCS:%.c=$(BUILD)/%.pic.o)
FABRIC_PROV := $(BUILD)/fabric/libfalcon-fi.so

$(BUILD)/fabric/%.pic.o: fabric/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(FABRIC_PROV): $(FABRIC_OBJS) $(CLIENT_LIB) fabric/fabric.mk
	$(CC) -shared -Wl,--no-undefined $(FABRIC_OBJS) -o $@ $(ALL_LDFLAGS) -L$(BUILD)/lib \
		-lfalcon-client $(if $(filter 1,$(NO_RPATH)),,-Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/..') \
		-lfabric -lpthread

# one small program per capability, run against two live daemons by tests/e2e/test_fabric.sh
FABRIC_TEST_SRCS := $(wildcard tests/fabric/fi_*.c)
FABRIC_TEST_BINS := $(FABRIC_TEST_SRCS:%.c=$(BUILD)/%)
$(FABRIC_TEST_BINS): $(BUILD)/tests/fabric/%: tests/fabric/%.c tests/fabric/fitest.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/fabric $< -o $@ $(ALL_LDFLAGS) -lfabric -lpthread

FABRIC_ALL := $(FABRIC_PROV) $(FABRIC_TEST_BINS)

# the provider's API under libFuzzer (tests/fuzz/fuzz_fabric.c): the provider and the client
# library compiled into the target, a falcond (--io udp) started by it
build-fuzz/fuzz_fabric: tests/fuzz/fuzz_fabric.c $(FABRIC_SRCS) fabric/ffi.h lib/client.c \
		$(wildcard include/falcon/*.h) $(FALCOND)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -Ifabric -DFUZZ_FALCOND='"$(abspath $(FALCOND))"' $< $(FABRIC_SRCS) \
		lib/client.c -o $@ -lfabric -lpthread
