# SPDX-License-Identifier: Apache-2.0
# bash completion for falcon-perf: options, their values, and host names as HOST
_falcon_perf() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	-t|--test) COMPREPLY=($(compgen -W "write read send atomic" -- "$cur")); return ;;
	-m|--mode) COMPREPLY=($(compgen -W "bw lat" -- "$cur")); return ;;
	-s|--size) COMPREPLY=($(compgen -W "8 64 4K 64K 1M" -- "$cur")); return ;;
	-S|--socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	-d|--depth|-q|--qps|-n|--iters|-D|--duration|-w|--warmup|-p|--service) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "-t --test -m --mode -s --size -a --sweep -d --depth -q --qps
			-n --iters -D --duration -w --warmup -p --service -S --socket -e --event
			-j --json -V --version -h --help" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -A hostname -- "$cur"))
}
complete -F _falcon_perf falcon-perf
