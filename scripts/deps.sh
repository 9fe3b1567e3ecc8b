#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# deps.sh PKG... - install the Debian packages of the list that are missing (apt-get, as
# root); says which, does nothing when all are there. Used by make deps / bench-deps.
set -u
missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
if [ "$(id -u)" != 0 ]; then
	echo "deps: need root to install ${missing[*]} (run 'make deps' as root once)" >&2
	exit 1
fi
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
