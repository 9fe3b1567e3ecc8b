# tests/sim/sim.mk - the deterministic simulator (tests/sim/sim.h). Included by the
# top-level Makefile; uses only BUILD, CC, ALL_CFLAGS, ALL_LDFLAGS and ENGINE_LIB.
#
#   SIM_SRCS  simulator sources (no test mains): link them into every simulation test
#   SIM_OBJS  the same, compiled by the generic $(BUILD)/%.o rule
#   SIM_BINS  simulation test programs; the test target runs `--suite sim $(SIM_BINS)`
#
# A simulation test program: tests/sim/test_NAME.c linked with $(SIM_OBJS) and
# $(ENGINE_LIB), compiled with -Itests -Itests/sim (see the rule below).

SIM_SRCS := tests/sim/sim_rng.c tests/sim/sim_link.c tests/sim/sim_world.c
SIM_OBJS := $(SIM_SRCS:%.c=$(BUILD)/%.o)
SIM_LIBS := -lcmocka -lm

SIM_BINS += $(BUILD)/tests/sim/test_sim_core

$(BUILD)/tests/sim/test_sim_core: tests/sim/test_sim_core.c $(SIM_OBJS) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/sim $< $(SIM_OBJS) -o $@ $(ENGINE_LIB) \
		$(ALL_LDFLAGS) $(SIM_LIBS)

# The simulator's link as a node backend (sim_io.c) and the node property test.
SIM_IO_OBJS := $(BUILD)/tests/sim/sim_io.o

$(BUILD)/tests/sim/sim_io.o: tests/sim/sim_io.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/sim -c $< -o $@

SIM_BINS += $(BUILD)/tests/sim/test_node_sim

$(BUILD)/tests/sim/test_node_sim: tests/sim/test_node_sim.c $(SIM_IO_OBJS) $(SIM_OBJS) \
		$(NODE_LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/sim $< $(SIM_IO_OBJS) $(SIM_OBJS) -o $@ \
		$(NODE_LIB) $(ENGINE_LIB) $(ALL_LDFLAGS) $(SIM_LIBS)
