# SPDX-License-Identifier: Apache-2.0
# bash completion for falconctl(8). Connection ids and -o's columns come from falconctl
# itself, asked with the -s / -r (and -j-free) options already on the line, so that
# `falconctl -r /tmp/x/a conn show <TAB>` lists the ids of the daemon behind /tmp/x/a.
_falconctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i words=() daemon=()
	# the words after the options, and the options that name the daemon
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-s|--socket|-r|--runtime-dir)
			daemon+=("${COMP_WORDS[i]}" "${COMP_WORDS[i+1]}"); ((i++)) ;;
		--socket=*|--runtime-dir=*) daemon+=("${COMP_WORDS[i]}") ;;
		-o|--output) ((i++)) ;;
		-*) ;;
		*) words+=("${COMP_WORDS[i]}") ;;
		esac
	done
	case $prev in
	-s|--socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	-r|--runtime-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	-o|--output)
		case "${words[0]:-} ${words[1]:-}" in
		"key generate"*|"conn trace"*) COMPREPLY=($(compgen -f -- "$cur")) ;;
		"stats "*) COMPREPLY=($(compgen -W "prometheus" -- "$cur")) ;;
		*)	# the columns the command's help lists, after any already typed
			local cols pre=
			cols=$(falconctl "${words[0]:-conn}" "${words[1]:-list}" --help 2>/dev/null |
				sed -n '/^columns/,$ s/^  [* ] \([a-z_0-9]*\) .*/\1/p')
			[[ $cur == *,* ]] && pre=${cur%,*},
			[[ $cur == +* && -z $pre ]] && pre=+
			COMPREPLY=($(compgen -P "$pre" -W "$cols" -- "${cur#"$pre"}"))
			compopt -o nospace 2>/dev/null ;;
		esac
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "-j --json -o --output -s --socket -r --runtime-dir -h --help
			-V --version" -- "$cur"))
		return
	fi
	case ${#words[@]} in
	0) COMPREPLY=($(compgen -W "status peer conn qp mr client stats xdp key" -- "$cur")) ;;
	1) case ${words[0]} in
	   peer|qp|mr|client) COMPREPLY=($(compgen -W "list" -- "$cur")) ;;
	   conn) COMPREPLY=($(compgen -W "list show trace" -- "$cur")) ;;
	   key) COMPREPLY=($(compgen -W "generate show rotate" -- "$cur")) ;;
	   esac ;;
	2) if [ "${words[0]} ${words[1]}" = "key show" ]; then
		COMPREPLY=($(compgen -f -- "$cur"))
	   elif [ "${words[0]}" = conn ] && [ "${words[1]}" != list ]; then
		local ids
		ids=$(falconctl "${daemon[@]}" -j conn list 2>/dev/null | grep -o '"id":[0-9]*' |
			cut -d: -f2)
		COMPREPLY=($(compgen -W "$ids" -- "$cur"))
	   fi ;;
	esac
}
complete -F _falconctl falconctl
