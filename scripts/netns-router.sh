# SPDX-License-Identifier: Apache-2.0
# netns-router.sh - sourced by the router tests: three network namespaces A - R - B, two
# veth pairs (MTU 9000), R forwarding IPv4 between A's and B's subnets; the sibling of
# netns-pair.sh (one pair, no router). Named after the caller's pid and NR_PREFIX (default
# fxr) so runs do not meet. Traffic between them never leaves this machine. Needs root.
#
#   . scripts/netns-router.sh
#   nr_up          creates NR_NS_A / NR_NS_R / NR_NS_B; host addresses NR_ADDR_A, NR_ADDR_B;
#                  R's ports NR_IF_RA (toward A) and NR_IF_RB (toward B); 0 or 1
#   nr_down        removes them (idempotent; call it from an EXIT trap)
#
# The hosts' veths have GRO on: a frame that an XDP program on R redirects into a veth is
# dropped unless the veth at the other end has NAPI, which GRO (or an XDP program there)
# turns on. They also compute transport checksums in software (tx checksum offload off):
# a veth leaves the UDP checksum to be completed (CHECKSUM_PARTIAL), the kernel's forwarding
# keeps that state with the packet, but a frame redirected by XDP loses it and would arrive
# with a checksum that B's UDP refuses (InCsumErrors). R knows A's and B's MACs from the start (permanent neighbour entries), so its FIB
# lookups (bpf_fib_lookup) find the next hop from the first packet.

NR_PREFIX=${NR_PREFIX:-fxr}
NR_NS_A=$NR_PREFIX-a-$$ NR_NS_R=$NR_PREFIX-r-$$ NR_NS_B=$NR_PREFIX-b-$$
NR_IF_A=${NR_PREFIX}a$$ NR_IF_RA=${NR_PREFIX}ra$$ NR_IF_RB=${NR_PREFIX}rb$$ NR_IF_B=${NR_PREFIX}b$$
NR_NET=$(( $$ % 120 * 2 ))
NR_ADDR_A=10.203.$NR_NET.1 NR_ADDR_RA=10.203.$NR_NET.254
NR_ADDR_B=10.203.$((NR_NET + 1)).1 NR_ADDR_RB=10.203.$((NR_NET + 1)).254

nr_down() { # whatever still runs inside them first (a server a test did not stop)
	local ns pids
	for ns in "$NR_NS_A" "$NR_NS_R" "$NR_NS_B"; do
		pids=$(ip netns pids "$ns" 2>/dev/null)
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	return 0
}

nr_up() {
	ip netns add "$NR_NS_A" && ip netns add "$NR_NS_R" && ip netns add "$NR_NS_B" &&
	ip link add "$NR_IF_A" netns "$NR_NS_A" type veth peer name "$NR_IF_RA" netns "$NR_NS_R" &&
	ip link add "$NR_IF_B" netns "$NR_NS_B" type veth peer name "$NR_IF_RB" netns "$NR_NS_R" &&
	ip -n "$NR_NS_A" link set lo up && ip -n "$NR_NS_R" link set lo up &&
	ip -n "$NR_NS_B" link set lo up &&
	ip -n "$NR_NS_A" link set "$NR_IF_A" mtu 9000 up &&
	ip -n "$NR_NS_R" link set "$NR_IF_RA" mtu 9000 up &&
	ip -n "$NR_NS_R" link set "$NR_IF_RB" mtu 9000 up &&
	ip -n "$NR_NS_B" link set "$NR_IF_B" mtu 9000 up &&
	ip -n "$NR_NS_A" addr add "$NR_ADDR_A/24" dev "$NR_IF_A" &&
	ip -n "$NR_NS_R" addr add "$NR_ADDR_RA/24" dev "$NR_IF_RA" &&
	ip -n "$NR_NS_R" addr add "$NR_ADDR_RB/24" dev "$NR_IF_RB" &&
	ip -n "$NR_NS_B" addr add "$NR_ADDR_B/24" dev "$NR_IF_B" &&
	ip -n "$NR_NS_A" route add "${NR_ADDR_B%.*}.0/24" via "$NR_ADDR_RA" &&
	ip -n "$NR_NS_B" route add "${NR_ADDR_A%.*}.0/24" via "$NR_ADDR_RB" &&
	ip netns exec "$NR_NS_R" sysctl -qw net.ipv4.ip_forward=1 &&
	ip netns exec "$NR_NS_A" ethtool -K "$NR_IF_A" gro on tx off >/dev/null &&
	ip netns exec "$NR_NS_B" ethtool -K "$NR_IF_B" gro on tx off >/dev/null &&
	ip -n "$NR_NS_R" neigh replace "$NR_ADDR_A" dev "$NR_IF_RA" nud permanent \
		lladdr "$(nr_mac "$NR_NS_A" "$NR_IF_A")" &&
	ip -n "$NR_NS_R" neigh replace "$NR_ADDR_B" dev "$NR_IF_RB" nud permanent \
		lladdr "$(nr_mac "$NR_NS_B" "$NR_IF_B")"
}

nr_mac() { # ns ifname
	ip -n "$1" -o link show dev "$2" | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2
}
