# bench/bench.mk - benchmarks. Included by the top-level Makefile (after tests/sim/sim.mk);
# uses only BUILD, CC, ALL_CFLAGS, ALL_LDFLAGS, ENGINE_LIB, SIM_OBJS and SIM_LIBS.
#
#   BENCH_BINS  benchmark programs
#
# sim_cc: congestion control in the deterministic simulator (N flows through one
# bottleneck, Swift RUE). `sim_cc` prints the table, `sim_cc --assert` checks the targets.

BENCH_BINS += $(BUILD)/bench/sim_cc

$(BUILD)/bench/sim_cc: bench/sim_cc.c $(SIM_OBJS) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/sim $< $(SIM_OBJS) -o $@ $(ENGINE_LIB) \
		$(ALL_LDFLAGS) $(SIM_LIBS)

# engine_bench: two nodes joined in memory on one core (the engine's cost per operation)
BENCH_BINS += $(BUILD)/bench/engine_bench

$(BUILD)/bench/engine_bench: bench/engine_bench.c $(NODE_LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests $< -o $@ $(NODE_LIB) $(ENGINE_LIB) $(ALL_LDFLAGS)

# psp_bench: the encapsulation's cost per packet, PSP ciphers beside NULL (make bench-psp)
BENCH_BINS += $(BUILD)/bench/psp_bench

$(BUILD)/bench/psp_bench: bench/psp_bench.c $(NODE_LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(NODE_LIB) $(ENGINE_LIB) $(ALL_LDFLAGS) -lsodium -lcrypto
