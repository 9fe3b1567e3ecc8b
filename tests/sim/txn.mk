# tests/sim/txn.mk - the transaction sublayer's simulation test (spec 6.6.1 - 6.6.5 flows
# and the property test). Included by the top-level Makefile after tests/sim/sim.mk;
# uses BUILD, CC, ALL_CFLAGS, ALL_LDFLAGS, SIM_OBJS, SIM_LIBS and ENGINE_LIB.

SIM_BINS += $(BUILD)/tests/sim/test_txn_sim

$(BUILD)/tests/sim/test_txn_sim: tests/sim/test_txn_sim.c $(SIM_OBJS) $(ENGINE_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/sim $< $(SIM_OBJS) -o $@ $(ENGINE_LIB) \
		$(ALL_LDFLAGS) $(SIM_LIBS)
