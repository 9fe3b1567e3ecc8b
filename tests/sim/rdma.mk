# tests/sim/rdma.mk - the RDMA ULP in the deterministic simulator: the Falcon 6.6.1-6.6.5
# flows as scenarios, then the property test against tests/rdma_model.h. Include it from
# the top-level Makefile after tests/sim/sim.mk (it uses SIM_OBJS, SIM_IO_OBJS, SIM_LIBS, BUILD,
# CC, ALL_CFLAGS, ALL_LDFLAGS, NODE_LIB and ENGINE_LIB). Run: $(BUILD)/tests/sim/test_rdma_sim
# [--seeds N] [--seed S] [--summary]; FALCON_TEST_QUICK=1 runs a tenth of the seeds.

SIM_BINS += $(BUILD)/tests/sim/test_rdma_sim

$(BUILD)/tests/sim/test_rdma_sim: tests/sim/test_rdma_sim.c tests/rdma_model.h $(SIM_IO_OBJS) \
		$(SIM_OBJS) $(NODE_LIB) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/sim $< $(SIM_IO_OBJS) $(SIM_OBJS) -o $@ $(NODE_LIB) \
		$(ENGINE_LIB) $(ALL_LDFLAGS) $(SIM_LIBS)
