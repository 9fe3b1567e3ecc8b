# SPDX-License-Identifier: Apache-2.0
# bash completion for falcond(8): its long options (from falcond --help, so that a new
# option completes without an edit here) and the values of those that take a word
_falcond() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	-c|--config|--key|--api-socket|--admin-socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--runtime-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--io) COMPREPLY=($(compgen -W "auto xdp udp" -- "$cur")); return ;;
	--security) COMPREPLY=($(compgen -W "psp none" -- "$cur")); return ;;
	--log-level) COMPREPLY=($(compgen -W "error warn info debug" -- "$cur")); return ;;
	--cc) COMPREPLY=($(compgen -W "swift off" -- "$cur")); return ;;
	--rue) COMPREPLY=($(compgen -W "auto thread inline" -- "$cur")); return ;;
	--poll) COMPREPLY=($(compgen -W "sleep adaptive busy" -- "$cur")); return ;;
	--sched) COMPREPLY=($(compgen -W "other fifo: rr:" -- "$cur")); compopt -o nospace; return ;;
	--psp-cipher) COMPREPLY=($(compgen -W "auto aes-256-gcm chacha20-poly1305" -- "$cur")); return ;;
	--metrics) COMPREPLY=($(compgen -W "127.0.0.1:9470 [::1]:9470" -- "$cur")); return ;;
	--listen|--port|--cm-port|--instance|--peer|--fault-*|--max-*|--mtu|--cm-*|--*-us|--*-s|--cpu|--pending-resp|--pull-defer|--conn-data-credits)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		local opts
		opts=$("${COMP_WORDS[0]}" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
		COMPREPLY=($(compgen -W "${opts:---help --version}" -- "$cur"))
	fi
}
complete -F _falcond falcond
