# SPDX-License-Identifier: Apache-2.0
# netns-pair.sh - sourced by the e2e tests and the benchmarks: two network namespaces
# joined by a veth pair (MTU 9000, or NP_MTU), named after the caller's pid (and NP_PREFIX,
# default fe2e) so runs do not meet. Traffic between them never leaves this machine.
# Needs root.
#
#   . scripts/netns-pair.sh
#   np_up          creates NP_NS_A / NP_NS_B with NP_ADDR_A / NP_ADDR_B; 0 or 1
#   np_down        removes them (idempotent; call it from an EXIT trap)

NP_PREFIX=${NP_PREFIX:-fe2e}
NP_MTU=${NP_MTU:-9000}
NP_NS_A=$NP_PREFIX-a-$$ NP_NS_B=$NP_PREFIX-b-$$
NP_IF_A=${NP_PREFIX:0:3}a$$ NP_IF_B=${NP_PREFIX:0:3}b$$
NP_ADDR_A=10.77.$(( $$ % 250 )).1
NP_ADDR_B=10.77.$(( $$ % 250 )).2

np_down() { # whatever still runs inside them first (a server a test did not stop)
	local ns pids
	for ns in "$NP_NS_A" "$NP_NS_B"; do
		pids=$(ip netns pids "$ns" 2>/dev/null)
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	return 0
}

np_up() {
	ip netns add "$NP_NS_A" && ip netns add "$NP_NS_B" &&
	ip link add "$NP_IF_A" netns "$NP_NS_A" type veth peer name "$NP_IF_B" netns "$NP_NS_B" &&
	ip -n "$NP_NS_A" link set lo up && ip -n "$NP_NS_B" link set lo up &&
	ip -n "$NP_NS_A" link set "$NP_IF_A" mtu "$NP_MTU" up &&
	ip -n "$NP_NS_B" link set "$NP_IF_B" mtu "$NP_MTU" up &&
	ip -n "$NP_NS_A" addr add "$NP_ADDR_A/24" dev "$NP_IF_A" &&
	ip -n "$NP_NS_B" addr add "$NP_ADDR_B/24" dev "$NP_IF_B"
}
