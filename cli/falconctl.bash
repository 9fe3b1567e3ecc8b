# SPDX-License-Identifier: Apache-2.0
# bash completion for falconctl(8)
_falconctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i words=()
	case $prev in
	-s|--socket|-o|--output) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	-r|--runtime-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	esac
	# the words after the options
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-s|--socket|-r|--runtime-dir|-o|--output) ((i++)) ;;
		-*) ;;
		*) words+=("${COMP_WORDS[i]}") ;;
		esac
	done
	case ${#words[@]} in
	0) COMPREPLY=($(compgen -W "status peer conn qp mr client stats xdp key -j --json -s --socket -r --runtime-dir" -- "$cur")) ;;
	1) case ${words[0]} in
	   peer|qp|mr|client) COMPREPLY=($(compgen -W "list" -- "$cur")) ;;
	   conn) COMPREPLY=($(compgen -W "list show trace" -- "$cur")) ;;
	   key) COMPREPLY=($(compgen -W "generate show rotate" -- "$cur")) ;;
	   esac ;;
	2) if [ "${words[0]} ${words[1]}" = "key show" ]; then
		COMPREPLY=($(compgen -f -- "$cur"))
	   elif [ "${words[0]}" = conn ] && [ "${words[1]}" != list ]; then
		local ids
		ids=$(falconctl -j conn list 2>/dev/null | grep -o '"id":[0-9]*' | cut -d: -f2)
		COMPREPLY=($(compgen -W "$ids" -- "$cur"))
	   fi ;;
	esac
}
complete -F _falconctl falconctl
