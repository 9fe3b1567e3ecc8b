#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# install.sh install|uninstall MANIFEST ROOT STOP... - make install and make uninstall
# (install.mk): one manifest, so uninstall removes exactly what install put there.
#
# MANIFEST lines (paths below ROOT, which is $(DESTDIR), usually empty):
#   f MODE SRC DEST   a file
#   l TARGET DEST     a symbolic link DEST -> TARGET
#   c MODE SRC DEST   a configuration file: installed only where none exists (an
#                     operator's file is never overwritten); uninstalled only while it
#                     is still the one installed (identical to SRC), else kept and said
#   d DEST            a directory of its own (the configuration directory)
# uninstall then removes every directory left empty, walking up from each path, never
# above the STOP directories (ROOT-relative: $(PREFIX) and $(SYSCONFDIR)) nor at them.
# A key that falconctl key generate wrote into the configuration directory keeps it.
set -eu
mode=$1 manifest=$2 root=$3
shift 3
stops=("$@")

is_stop() {
	local s
	[ "$1" = / ] || [ "$1" = "$root" ] || [ "$1" = . ] && return 0
	for s in "${stops[@]}"; do
		[ "$1" = "$root$s" ] && return 0
	done
	return 1
}

prune() { # DIR: remove it and its parents while they are empty, up to a stop
	local d=$1
	while ! is_stop "$d" && [ -d "$d" ] && rmdir "$d" 2>/dev/null; do
		d=$(dirname "$d")
	done
}

case $mode in
install)
	while read -r kind a b c; do
		case $kind in
		f) install -D -m "$a" "$b" "$root$c" ;;
		l) mkdir -p "$(dirname "$root$b")"; ln -sfn "$a" "$root$b" ;;
		c) if [ -e "$root$c" ]; then
			echo "install: $c exists: kept (the new default is $b)"
		   else
			install -D -m "$a" "$b" "$root$c"
		   fi ;;
		d) install -d "$root$a" ;;
		esac
	done <"$manifest"
	;;
uninstall)
	dirs=()
	while read -r kind a b c; do
		case $kind in
		f) rm -f "$root$c"; dirs+=("$(dirname "$root$c")") ;;
		l) rm -f "$root$b"; dirs+=("$(dirname "$root$b")") ;;
		c) if [ -e "$root$c" ] && ! cmp -s "$b" "$root$c"; then
			echo "uninstall: $c was changed: kept"
		   else
			rm -f "$root$c"
		   fi
		   dirs+=("$(dirname "$root$c")") ;;
		d) dirs+=("$root$a") ;;
		esac
	done <"$manifest"
	for d in "${dirs[@]}"; do
		prune "$d"
	done
	printf '%s\n' "${dirs[@]}" | sort -u | while read -r d; do
		case $d in
		*/falcon) [ -d "$d" ] && echo "uninstall: $d is not empty: kept ($(ls -A "$d" | tr '\n' ' '))" ;;
		esac
	done
	;;
*)
	echo "usage: install.sh install|uninstall MANIFEST ROOT STOP..." >&2
	exit 2
	;;
esac
exit 0
