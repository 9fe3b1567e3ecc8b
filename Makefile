# falcon - top-level build.
#
#   make              build everything that exists (engine, BPF objects + skeletons, tests)
#   make test         install missing Debian packages, build, run every test
#   make SAN=1 test   the same with AddressSanitizer + UBSan (separate build dir)
#   make memcheck     unit tests under valgrind
#   make fuzz         run every libFuzzer target for FUZZ_SECONDS (default 60) each
#   make soak         the simulator property tests: PDL over SOAK_SEEDS (20000) seeds,
#                     transactions and RDMA over SOAK_RDMA_SEEDS (10000), seeds from 1
#   make soak-ci      the PDL soak (SOAK_SEEDS) from this commit's seed offset (.ci/run)
#   make bench-sim    the congestion-control benchmark table (bench/sim_cc.c)
#   make bench-engine the engine's cost per operation (bench/engine_bench.c); INSTR=1 adds
#                     callgrind instruction counts
#   make bench-psp    PSP seal/open cost per packet beside NULL (bench/psp_bench.c)
#   make bench-netns  falcon-perf beside iperf3 and sockperf on a veth pair (root)
#   make demo         two falcond on 127.0.0.1 and a client through every operation
#   make e2e-chaos    1 GiB of verified RDMA between two namespaces with loss (root)
#   make e2e-overload 32 processes of verified RDMA for 60 s with every core busy (issue 20)
#   make e2e-bigmsg   one WRITE, READ and SEND of 2 GiB (the limit) each, verified, psp and 1 %
#                     loss (make test runs the same at 1 GiB; issue 21)
#   make e2e-chaos-xdp 1 GiB of verified RDMA through a router namespace whose XDP program
#                     drops and duplicates (root)
#   make bench-compare falcon beside TCP, UDP, UCX, libfabric on one veth pair (root);
#                     BENCH_PLACEMENT=pinned|shared, BENCH_POLL, BENCH_ROWS, BENCH_JSON=FILE
#   make bench-compare-selftest  its table and JSON writer with fake figures (no root)
#   make deps         only install missing Debian packages (idempotent; deps-build: only
#                     what building needs, as make demo does)
#   make install      PREFIX, DESTDIR, LIBDIR, SYSCONFDIR (install.mk); make uninstall
#   make deb          the Debian packages into build/deb/ (debian/), lintian over them
#   make clean

.DEFAULT_GOAL := all
SHELL := /bin/bash

SAN ?= 0
BUILD ?= build$(if $(filter 1,$(SAN)),-san)
CC := gcc
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
# NO_RPATH=1: no RUNPATH in the programs and the provider (Debian packages: the library is
# where ld.so looks); otherwise they find libfalcon-client beside them in the build tree
# and where make install puts it
NO_RPATH ?= 0
CLANG ?= clang
BPFTOOL ?= bpftool
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 8

# Debian packages, by what needs them (scripts/deps.sh installs those missing, as root):
#   make deps-build  falcond, falconctl, the library and falcon-perf: what make demo needs
#   make deps        that and what make test runs (below, and DEB_PKGS += further down)
#   make deb-deps    deps-build, libfabric-dev and debhelper, lintian (make deb: the
#                    packages' Build-Depends)
BUILD_PKGS := gcc make pkg-config clang libbpf-dev libxdp-dev bpftool libev-dev libsodium-dev \
	libssl-dev libmicrohttpd-dev libsmartcols-dev libpng-dev
DEB_PKGS := $(BUILD_PKGS) libfabric-dev llvm libclang-rt-dev libcmocka-dev iproute2 valgrind systemd man-db \
	ethtool libfabric-bin curl bash-completion
# promtool checks falcond's /metrics (tests/e2e/test_metrics.sh)
DEB_PKGS += prometheus
PACKAGING_PKGS := debhelper dpkg-dev lintian

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wformat=2 -Wvla
# falcon's version: the programs' --version, the library's file name, the packages
# (debian/changelog says the same; make deb checks)
VERSION := 0.1.0
CFLAGS_BASE := -std=gnu11 -O2 -g $(WARN) -D_GNU_SOURCE -Iinclude -Idaemon/engine -Idaemon \
	-DFALCON_RELEASE='"$(VERSION)"' -MMD -MP
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ifeq ($(SAN),1)
CFLAGS_BASE += $(SAN_FLAGS)
LDFLAGS_BASE := $(SAN_FLAGS)
endif
CFLAGS ?=
ALL_CFLAGS := $(CFLAGS_BASE) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS := $(LDFLAGS_BASE) $(LDFLAGS)

# ---------------------------------------------------------------------------
# engine: the sans-I/O protocol engine and the wire codecs (daemon/engine/)
# ---------------------------------------------------------------------------
ENGINE_SRCS := $(wildcard daemon/engine/*.c)
ENGINE_OBJS := $(ENGINE_SRCS:%.c=$(BUILD)/%.o)
ENGINE_LIB := $(BUILD)/libfcengine.a

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(ENGINE_LIB): $(ENGINE_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# node: one Falcon endpoint, the engine behind an I/O backend (daemon/node.c), shared by
# falcond, the simulator tests and the benchmarks
NODE_SRCS := daemon/node.c daemon/io_udp.c daemon/fault.c daemon/encap_null.c daemon/rue_thread.c \
	daemon/encap_psp.c
NODE_OBJS := $(NODE_SRCS:%.c=$(BUILD)/%.o)
NODE_LIB := $(BUILD)/libfcnode.a

$(NODE_LIB): $(NODE_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# ---------------------------------------------------------------------------
# BPF: bpf/NAME.bpf.c -> NAME.bpf.o -> NAME.skel.h (vmlinux.h from running kernel)
# ---------------------------------------------------------------------------
# Product programs live in bpf/; test-only programs (vectors run under
# BPF_PROG_TEST_RUN) in tests/bpf/. Both land in $(BUILD)/bpf/.
BPF_SRCS := $(wildcard bpf/*.bpf.c) $(wildcard tests/bpf/*.bpf.c)
BPF_NAMES := $(notdir $(BPF_SRCS:%.bpf.c=%))
BPF_OBJS := $(BPF_NAMES:%=$(BUILD)/bpf/%.bpf.o)
BPF_SKELS := $(BPF_NAMES:%=$(BUILD)/bpf/%.skel.h)
VMLINUX_H := $(BUILD)/bpf/vmlinux.h
BPF_CFLAGS := -target bpf -O2 -g -Wall -Wextra -Werror -Wno-unused-function \
	-D__TARGET_ARCH_x86 -I$(BUILD)/bpf -Iinclude -Ibpf -Itests -MMD -MP

$(VMLINUX_H):
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bpf/%.bpf.o: tests/bpf/%.bpf.c $(VMLINUX_H)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@.tmp && mv $@.tmp $@

# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:%.c=$(BUILD)/%)
BPFTEST_SRCS := $(wildcard tests/bpf/test_*.c)
BPFTEST_BINS := $(BPFTEST_SRCS:%.c=$(BUILD)/%)
TEST_LIBS := -lcmocka -lsodium -lcrypto -lpthread

$(UNIT_BINS): $(BUILD)/tests/unit/%: tests/unit/%.c $(NODE_LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests $(UNIT_CFLAGS) $< -o $@ $(NODE_LIB) $(ENGINE_LIB) $(UNIT_EXTRA) \
		$(ALL_LDFLAGS) $(TEST_LIBS)

# unit tests of daemon modules outside the node library link their objects
$(BUILD)/tests/unit/test_hs: $(BUILD)/daemon/hs.o
$(BUILD)/tests/unit/test_hs: UNIT_EXTRA := $(BUILD)/daemon/hs.o
$(BUILD)/tests/unit/test_log: $(BUILD)/daemon/log.o
$(BUILD)/tests/unit/test_log: UNIT_EXTRA := $(BUILD)/daemon/log.o
# and so do those of falconctl's modules (cli/)
$(BUILD)/tests/unit/test_plot: $(BUILD)/cli/plot.o
$(BUILD)/tests/unit/test_plot: UNIT_EXTRA := $(BUILD)/cli/plot.o -lpng
$(BUILD)/tests/unit/test_plot: UNIT_CFLAGS := -Icli
# and the admin JSON reader and Prometheus renderer (daemon/jread.c, prom.c)
$(BUILD)/tests/unit/test_prom: $(BUILD)/daemon/jread.o $(BUILD)/daemon/prom.o
$(BUILD)/tests/unit/test_prom: UNIT_EXTRA := $(BUILD)/daemon/jread.o $(BUILD)/daemon/prom.o

$(BPFTEST_BINS): $(BUILD)/tests/bpf/%: tests/bpf/%.c $(ENGINE_LIB) $(BPF_SKELS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -I$(BUILD)/bpf $< -o $@ $(ENGINE_LIB) $(ALL_LDFLAGS) \
		-lbpf -lelf -lz $(TEST_LIBS)

# deterministic simulator (tests/sim/sim.mk) and the simulation tests built on it
SIM_BINS :=
include tests/sim/sim.mk
include tests/sim/txn.mk
include tests/sim/rdma.mk
SIM_BINS += $(BUILD)/tests/sim/test_pdl_sim

$(BUILD)/tests/sim/test_pdl_sim: tests/sim/test_pdl_sim.c $(SIM_OBJS) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/sim $< $(SIM_OBJS) -o $@ $(ENGINE_LIB) \
		$(ALL_LDFLAGS) $(SIM_LIBS)

# the daemon, the client library, falconctl, examples (daemon/daemon.mk)
include daemon/daemon.mk
# the libfabric provider (fabric/fabric.mk)
include fabric/fabric.mk
# the libibverbs ABI over the client library (verbs/verbs.mk)
include verbs/verbs.mk
# make install / uninstall and the directories they use (install.mk)
include install.mk
# an MPI program over it (Open MPI's ofi MTL), run by tests/e2e/test_mpi.sh; built when
# mpicc is there (make deps installs it)
DEB_PKGS += openmpi-bin libopenmpi-dev
MPICC ?= mpicc
MPI_TEST_BIN := $(BUILD)/tests/mpi/mpi_falcon
$(MPI_TEST_BIN): tests/mpi/mpi_falcon.c
	@mkdir -p $(@D)
	$(MPICC) -std=gnu11 -O2 -g $(WARN) $< -o $@
ifneq ($(shell command -v $(MPICC) 2>/dev/null),)
all: $(MPI_TEST_BIN)
endif

# benchmarks (bench/bench.mk): the congestion-control benchmark runs in the simulator
BENCH_BINS :=
include bench/bench.mk

# libFuzzer targets: always clang with ASan + UBSan, engine sources compiled in.
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES := $(FUZZ_SRCS:tests/fuzz/%.c=%)
FUZZ_BINS := $(FUZZ_NAMES:%=build-fuzz/%)
FUZZ_CFLAGS := -std=gnu11 -O1 -g $(WARN) -D_GNU_SOURCE -Iinclude -Idaemon/engine -Itests \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

build-fuzz/%: tests/fuzz/%.c $(ENGINE_SRCS) $(wildcard daemon/engine/*.h include/falcon/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) $< $(ENGINE_SRCS) -o $@

# Simulator seeds in `make test` (and `make soak-ci`) start at an offset derived from the
# commit, so each commit explores seeds no earlier one ran: the first 7 hex digits of the
# commit times 2^20 (no two commits' ranges overlap below 2^20 seeds). Outside a git
# checkout, or with SIM_FIRST=1 given, the fixed range from seed 1. A failing seed prints
# its replay command either way.
SIM_FIRST ?= $(shell h=$$(git rev-parse --short=7 HEAD 2>/dev/null) && \
	printf '%#x' $$(( 0x$$h << 20 )) || echo 1)

# ---------------------------------------------------------------------------
# Wireshark: the Lua dissector (tools/wireshark/falcon.lua), installed into
# $(WIRESHARK_LUA_DIR) (install.mk: LIBDIR/wireshark/plugins, for PREFIX=/usr the global
# Lua plugin folder of Debian's Wireshark), and falcon-dump, the same fields read by the
# project's decoders, which tests/e2e/test_dissector.sh compares with tshark's
# ---------------------------------------------------------------------------
DEB_PKGS += tshark
FALCON_DUMP := $(BUILD)/tools/falcon-dump
$(FALCON_DUMP): tools/falcon-dump.c $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(ENGINE_LIB) $(ALL_LDFLAGS)
all: $(FALCON_DUMP) $(BUILD)/tests/e2e/dissector_load

# ---------------------------------------------------------------------------
# top-level targets
# ---------------------------------------------------------------------------
.PHONY: bench-qps demo deps-build deb-deps e2e-bigmsg e2e-chaos e2e-chaos-xdp e2e-overload bench-compare bench-compare-selftest bench-psp bench-netns bench-deps all deps test test-unit test-bpf fuzz fuzz-smoke memcheck soak soak-ci bench-sim bench-engine clean

all: $(ENGINE_LIB) $(NODE_LIB) $(DAEMON_ALL) $(FABRIC_ALL) $(BPF_OBJS) $(BPF_SKELS) $(UNIT_BINS) $(BPFTEST_BINS) $(SIM_BINS) $(BENCH_BINS)

deps:
	@scripts/deps.sh $(DEB_PKGS)

deps-build:
	@scripts/deps.sh $(BUILD_PKGS)

deb-deps:
	@scripts/deps.sh $(BUILD_PKGS) libfabric-dev $(PACKAGING_PKGS)

# the other stacks the netns benchmark measures falcon against
BENCH_PKGS := iperf3 sockperf ucx-utils libfabric-bin gnuplot-nox
# jq: bench-compare writes and checks its BENCH_JSON with it, and make test's suite bench
# (tests/bench/test_compare.sh) checks that writer; in deps, which bench-deps runs first
DEB_PKGS += jq
bench-deps: deps
	@scripts/deps.sh $(BENCH_PKGS)

# `make test` = deps, build, then every suite; one summary line at the end.
test: deps
	@$(MAKE) --no-print-directory all $(FUZZ_BINS)
	@echo "simulator seeds from $(SIM_FIRST) (commit offset; SIM_FIRST=1 for the fixed range)"
	@FALCON_SIM_FIRST=$(SIM_FIRST) tests/run-tests.sh \
		--suite unit $(UNIT_BINS) \
		--suite bpf $(BPFTEST_BINS) \
		--suite sim $(SIM_BINS) \
		--suite sim-xdp --args "--xdp" $(BUILD)/tests/sim/test_pdl_sim \
		--suite cc --args "--assert" $(BUILD)/bench/sim_cc \
		--suite e2e --wrap "env BUILD=$(BUILD)" tests/e2e/test_loopback.sh tests/e2e/test_netns.sh \
		tests/e2e/test_service.sh tests/e2e/test_security.sh tests/e2e/test_dissector.sh \
		tests/e2e/test_router.sh tests/e2e/test_fabric.sh tests/e2e/test_xdp.sh tests/e2e/test_mpi.sh \
		tests/e2e/test_overload.sh tests/e2e/test_stall.sh tests/e2e/test_poll.sh \
		tests/e2e/test_api_contract.sh tests/e2e/test_bigmsg.sh tests/e2e/test_errors.sh \
		tests/e2e/test_install.sh tests/e2e/test_cli.sh tests/e2e/test_metrics.sh \
		tests/e2e/test_scale.sh tests/e2e/test_verbs.sh \
		--suite bench tests/bench/test_compare.sh \
		$(if $(filter 1,$(SAN)),,--suite memcheck --wrap "env FALCON_TEST_QUICK=1 valgrind -q --suppressions=tests/valgrind.supp --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite" $(UNIT_BINS)) \
		--suite fuzz --fuzz $(FUZZ_SMOKE_SECONDS) $(FUZZ_BINS)

# make demo: two falcond on 127.0.0.1 and a client through every operation (no root)
demo: deps-build
	@$(MAKE) --no-print-directory $(FALCOND) $(FALCONCTL) $(BUILD)/examples/demo
	@BUILD=$(BUILD) scripts/demo.sh

# the chaos run of the e2e test at full length: 1 GiB of verified WRITEs and READs between
# two namespaces with drop 5 %, duplicate 1 %, reorder 2 % in the daemons (root)
E2E_CHAOS_MIB ?= 1024
e2e-chaos: all
	@E2E_CHAOS_MIB=$(E2E_CHAOS_MIB) E2E_ROTATE_S=60 BUILD=$(BUILD) tests/e2e/test_netns.sh

# issue 20 at full length: E2E_OVERLOAD_PROCS (32) processes with an RC QP each, verified
# WRITE, READ and atomics for E2E_OVERLOAD_S seconds while busy loops hold every core, under
# security none and psp (no root: two falcond on 127.0.0.1); make test runs it for 12 s
E2E_OVERLOAD_S ?= 60
e2e-overload: all
	@E2E_OVERLOAD_S=$(E2E_OVERLOAD_S) BUILD=$(BUILD) tests/e2e/test_overload.sh

# issue 21 at the message limit: E2E_BIGMSG_MIB (2048: 2^31 bytes, InfiniBand's) per WR,
# WRITE, READ and SEND verified under psp and 1 % loss, then by copy (no root; make test
# runs tests/e2e/test_bigmsg.sh at 1024)
E2E_BIGMSG_MIB ?= 2048
e2e-bigmsg: all
	@E2E_BIGMSG_MIB=$(E2E_BIGMSG_MIB) BUILD=$(BUILD) tests/e2e/test_bigmsg.sh

test-unit: all
	@tests/run-tests.sh --suite unit $(UNIT_BINS)

test-bpf: all
	@tests/run-tests.sh --suite bpf $(BPFTEST_BINS)

memcheck: all
	@tests/run-tests.sh --suite memcheck \
		--wrap "env FALCON_TEST_QUICK=1 valgrind -q --suppressions=tests/valgrind.supp --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite" \
		$(UNIT_BINS)

# The engine's cost per operation: two nodes in memory on one core (bench/engine_bench.c);
# INSTR=1 adds instructions per operation counted by callgrind (bench/instr.sh).
bench-engine: $(BUILD)/bench/engine_bench
	$(BUILD)/bench/engine_bench
	$(if $(filter 1,$(INSTR)),bench/instr.sh $(BUILD)/bench/engine_bench)

# Many RC QPs between two falcond on 127.0.0.1 (no root; bench/many_qps.sh): BENCH_QPS_N
# (10,000) QPs, setup time and each daemon's resident memory per QP, 8 B WRITEs round
# robin over all of them at depth 64 against one QP in the same run; then 65,536 QPs
# (the most a daemon holds) set up and their memory (BENCH_QPS_MAX=0 skips it).
BENCH_QPS_N ?= 10000
BENCH_QPS_MAX ?= 65536
bench-qps: $(FALCOND) $(FALCONCTL) $(MANY_QPS)
	@BUILD=$(BUILD) BENCH_QPS_N=$(BENCH_QPS_N) BENCH_QPS_MAX=$(BENCH_QPS_MAX) bench/many_qps.sh

# The encapsulation's cost per packet: PSP seal and open per cipher beside the NULL
# encapsulation, at 64 B, 1 KiB and 4 KiB (bench/psp_bench.c).
bench-psp: $(BUILD)/bench/psp_bench
	$(BUILD)/bench/psp_bench

# falcon through falcond beside the kernel's TCP and UDP (iperf3, sockperf) on one veth
# pair between two namespaces, in the same run (root; bench/netns_compare.sh)
bench-netns: bench-deps all
	@BUILD=$(BUILD) bench/netns_compare.sh

# ---------------------------------------------------------------------------
# the test router: three namespaces A - R - B, an XDP chaos program on R's ports
# (tests/bpf/falcon_router.bpf.c, its controller tests/e2e/router_ctl.c,
# scripts/netns-router.sh, tests/e2e/test_router.sh), and bench/compare.sh
# ---------------------------------------------------------------------------
ROUTER_CTL := $(BUILD)/tests/e2e/router_ctl
$(ROUTER_CTL): tests/e2e/router_ctl.c tests/bpf/falcon_router.h $(BUILD)/bpf/falcon_router.skel.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -I$(BUILD)/bpf $< -o $@ $(ALL_LDFLAGS) -lbpf -lelf -lz
DAEMON_ALL += $(ROUTER_CTL)
# (all's prerequisites were expanded above, before this +=: name it here too)
all: $(ROUTER_CTL)

# the router chaos run at full length: E2E_ROUTER_MIB (1 GiB) of verified WRITEs and READs
# through the router dropping 5 % and duplicating 1 % of the Falcon packets (root)
E2E_ROUTER_MIB ?= 1024
e2e-chaos-xdp: all
	@E2E_ROUTER_MIB=$(E2E_ROUTER_MIB) BUILD=$(BUILD) tests/e2e/test_router.sh

# falcon beside kernel TCP/UDP, UCX and libfabric on one veth pair, one table, ratios,
# a chart (root; bench/compare.sh writes docs/performance.md's comparison section)
bench-compare: bench-deps all
	@BUILD=$(BUILD) bench/compare.sh

# bench-compare's placement, poll-mode fallback, table and JSON writer with fake figures
# (no root, under a second; also in make test as suite bench)
bench-compare-selftest:
	@tests/run-tests.sh --suite bench tests/bench/test_compare.sh

# Congestion control in the simulator: N = 2, 8, 32 flows through one bottleneck (table).
bench-sim: $(BUILD)/bench/sim_cc
	$(BUILD)/bench/sim_cc

# Long simulator runs: SOAK_SEEDS seeds of the PDL property test (with a summary table)
# and SOAK_RDMA_SEEDS of the transaction-sublayer and RDMA property tests.
SOAK_SEEDS ?= 20000
SOAK_RDMA_SEEDS ?= 10000
soak: $(BUILD)/tests/sim/test_pdl_sim $(BUILD)/tests/sim/test_txn_sim $(BUILD)/tests/sim/test_rdma_sim
	$(BUILD)/tests/sim/test_pdl_sim --seeds $(SOAK_SEEDS) --summary
	$(BUILD)/tests/sim/test_txn_sim --seeds $(SOAK_RDMA_SEEDS)
	$(BUILD)/tests/sim/test_rdma_sim --seeds $(SOAK_RDMA_SEEDS)

# The PDL soak from the commit's seed offset: new seeds on every commit (.ci/run).
soak-ci: $(BUILD)/tests/sim/test_pdl_sim
	$(BUILD)/tests/sim/test_pdl_sim --first $(SIM_FIRST) --seeds $(SOAK_SEEDS) --summary

fuzz: $(FUZZ_BINS)
	@tests/run-tests.sh --suite fuzz --fuzz $(FUZZ_SECONDS) $(FUZZ_BINS)

fuzz-smoke: $(FUZZ_BINS)
	@tests/run-tests.sh --suite fuzz --fuzz $(FUZZ_SMOKE_SECONDS) $(FUZZ_BINS)

clean:
	rm -rf build build-san build-fuzz

-include $(shell find build build-san build-fuzz -path build/deb -prune -o -name '*.d' -type f -print 2>/dev/null)

# the API fuzz target runs a whole daemon in the fuzzer's process (tests/fuzz/fuzz_api.c)
FUZZ_DAEMON_SRCS := $(XDP_DAEMON_SRCS) daemon/loop.c daemon/poll.c daemon/api.c daemon/cm.c daemon/admin.c daemon/json.c daemon/sec.c daemon/hs.c \
	daemon/log.c $(NODE_SRCS)
build-fuzz/fuzz_api: tests/fuzz/fuzz_api.c $(ENGINE_SRCS) $(FUZZ_DAEMON_SRCS) $(BUILD)/bpf/falcon_xdp.skel.h \
		$(wildcard daemon/*.h daemon/engine/*.h include/falcon/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -Idaemon -I$(BUILD)/bpf $< $(FUZZ_DAEMON_SRCS) $(ENGINE_SRCS) -o $@ -lev -lsodium -lcrypto -lpthread $(XDP_LIBS)

# the PSP encapsulation's open and seal (tests/fuzz/fuzz_encap_psp.c), libsodium and
# libcrypto linked
build-fuzz/fuzz_encap_psp: tests/fuzz/fuzz_encap_psp.c daemon/encap_psp.c $(ENGINE_SRCS) \
		$(wildcard daemon/*.h daemon/engine/*.h include/falcon/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -Idaemon $< daemon/encap_psp.c $(ENGINE_SRCS) -o $@ -lsodium -lcrypto

# the admin JSON reader and the Prometheus renderer (tests/fuzz/fuzz_prom.c)
build-fuzz/fuzz_prom: tests/fuzz/fuzz_prom.c daemon/jread.c daemon/prom.c daemon/jread.h daemon/prom.h
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -Idaemon $< daemon/jread.c daemon/prom.c -o $@

# the handshake fuzz target links the handshake module and libsodium (tests/fuzz/fuzz_hs.c)
build-fuzz/fuzz_hs: tests/fuzz/fuzz_hs.c daemon/hs.c daemon/hs.h
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -Idaemon $< daemon/hs.c -o $@ -lsodium
