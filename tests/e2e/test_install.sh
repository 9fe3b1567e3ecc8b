#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make install as an ordinary user (issue 26): `make install PREFIX=$HOME/x` by a user who
# owns nothing but their home succeeds, writes nothing outside $HOME, puts every part
# there (the Wireshark plugin and the libfabric provider too), the installed programs run
# and find the installed library, pkg-config finds it; `make uninstall` then leaves
# nothing behind. As root the test makes a throwaway user (removed on exit); as an
# ordinary user it runs as that user in a temporary directory.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
e2e_init e2e-install
SRC=$PWD

U= UHOME= TMPD=
cleanup() {
	[ -n "$U" ] && userdel -r "$U" >/dev/null 2>&1
	[ -n "$TMPD" ] && rm -rf "$TMPD"
}
trap cleanup EXIT

# the build first (as whoever runs the test), so the user only installs
case "$BUILD" in *-san) SANV=1 ;; *) SANV=0 ;; esac
make --no-print-directory -s SAN=$SANV BUILD="$BUILD" programs >/dev/null ||
	{ e2e_fail "make programs"; e2e_done; exit 1; }

if [ "$(id -u)" = 0 ]; then
	U=fci$$
	useradd -m -d "/home/$U" -s /bin/bash "$U" || { U=; e2e_fail "useradd"; e2e_done; exit 1; }
	UHOME=/home/$U
	as_user() { runuser -u "$U" -- env -i HOME="$UHOME" PATH=/usr/bin:/bin "$@"; }
else
	TMPD=$(mktemp -d "${TMPDIR:-/tmp}/falcon-inst.XXXXXX")
	UHOME=$TMPD
	as_user() { env HOME="$UHOME" "$@"; }
fi
X=$UHOME/x
MA=$(gcc -print-multiarch)
san=0
case "$BUILD" in *-san) san=1 ;; esac
mk() { as_user make --no-print-directory -s -C "$SRC" SAN=$san BUILD="$BUILD" INST="$UHOME/.inst" PREFIX="$X" "$@"; }

out=$(mk install 2>&1)
rc=$?
[ $rc = 0 ] && e2e_ok "make install PREFIX=\$HOME/x as $(as_user id -un)" ||
	{ e2e_fail "make install PREFIX=\$HOME/x (rc $rc)"; echo "$out"; }

# every part under PREFIX
missing=
for f in sbin/falcond bin/falconctl bin/falcon-perf "lib/$MA/libfalcon-client.so.0" \
	"lib/$MA/libfalcon-client.so" "lib/$MA/pkgconfig/falcon-client.pc" include/falcon/falcon.h \
	"lib/$MA/libfabric/libfalcon-fi.so" "lib/$MA/wireshark/plugins/falcon.lua" \
	lib/systemd/system/falcond.service lib/sysusers.d/falcon.conf lib/tmpfiles.d/falcon.conf \
	etc/falcon/falcond.conf share/man/man8/falcond.8 share/man/man3/libfalcon-client.3 \
	share/bash-completion/completions/falconctl share/bash-completion/completions/falcond \
	share/bash-completion/completions/falcon-perf; do
	[ -e "$X/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && e2e_ok "every part under \$HOME/x (wireshark plugin and provider too)" ||
	e2e_fail "missing under \$HOME/x:$missing"
grep -q "^ExecStart=$X/sbin/falcond --config $X/etc/falcon/falcond.conf" \
	"$X/lib/systemd/system/falcond.service" &&
	grep -q "^key $X/etc/falcon/falcond.key" "$X/etc/falcon/falcond.conf" &&
	e2e_ok "the unit and the configuration name the installed paths" ||
	e2e_fail "the unit or the configuration name other paths"

# nothing written outside the home (as root: every file the user owns)
if [ -n "$U" ]; then
	outside=$(find / -xdev \( -path /proc -o -path /sys \) -prune -o -user "$U" -print 2>/dev/null |
		grep -v "^$UHOME" | head -5)
	[ -z "$outside" ] && e2e_ok "nothing of the user's outside \$HOME" ||
		e2e_fail "the user wrote outside \$HOME: $outside"
fi

# the installed programs run, find the installed library, and pkg-config finds it
v=$(as_user "$X/bin/falconctl" --version 2>&1) && grep -q '^falconctl [0-9]' <<<"$v" &&
	as_user "$X/sbin/falcond" --version | grep -q '^falcond [0-9]' &&
	as_user "$X/bin/falcon-perf" --version | grep -q '^falcon-perf [0-9]' &&
	e2e_ok "installed falconctl, falcond, falcon-perf --version ($v)" ||
	e2e_fail "installed programs: $v"
libs=$(as_user env PKG_CONFIG_PATH="$X/lib/$MA/pkgconfig" pkg-config --libs falcon-client 2>&1 | xargs)
[ "$libs" = "-L$X/lib/$MA -lfalcon-client" ] && e2e_ok "pkg-config --libs falcon-client: $libs" ||
	e2e_fail "pkg-config --libs falcon-client: $libs"
# a sanitizer build of the provider loads into fi_info only with its runtimes preloaded
san_env=()
[ "$san" = 1 ] && san_env=(LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
	ASAN_OPTIONS=detect_leaks=0)
prov=$(as_user env "${san_env[@]}" FI_PROVIDER_PATH="$X/lib/$MA/libfabric" fi_info -l 2>&1 |
	grep -c '^falcon:')
[ "$prov" = 1 ] && e2e_ok "fi_info -l with FI_PROVIDER_PATH=\$HOME/x/lib/$MA/libfabric lists falcon" ||
	e2e_fail "fi_info -l does not list the installed provider"

# the README's steps without root: a key, falcond on UDP from the installed configuration,
# falconctl reaching it
port=$(( 20000 + ($$ * 7) % 12000 ))
as_user "$X/bin/falconctl" key generate -o "$X/etc/falcon/falcond.key" >/dev/null &&
as_user mkdir -p "$UHOME/run" &&
as_user sh -c "echo \$\$ >'$UHOME/pid'; exec '$X/sbin/falcond' -c '$X/etc/falcon/falcond.conf' \
	--runtime-dir '$UHOME/run' --io udp --port $port --cm-port $((port + 1)) 2>'$UHOME/falcond.log'" &
for _ in $(seq 100); do [ -S "$UHOME/run/falconctl.sock" ] && break; sleep 0.05; done
st=$(as_user "$X/bin/falconctl" -r "$UHOME/run" -j status 2>&1)
[ -s "$UHOME/pid" ] && kill -TERM "$(cat "$UHOME/pid")"
wait
grep -q '"security":"psp"' <<<"$st" &&
	e2e_ok "installed falcond started from its configuration and key; falconctl status reaches it" ||
	{ e2e_fail "installed falcond: $st"; cat "$UHOME/falcond.log"; }
rm -f "$X/etc/falcon/falcond.key"

# uninstall: nothing left below PREFIX
out=$(mk uninstall 2>&1)
rc=$?
left=$(find "$X" -mindepth 1 2>/dev/null | head -5)
[ $rc = 0 ] && [ -z "$left" ] && e2e_ok "make uninstall leaves nothing under \$HOME/x" ||
	{ e2e_fail "make uninstall (rc $rc) left: $left"; echo "$out"; }
# an operator's key and changed configuration stay, and are named
mk install >/dev/null 2>&1
as_user "$X/bin/falconctl" key generate -o "$X/etc/falcon/falcond.key" >/dev/null
echo "# mine" >>"$X/etc/falcon/falcond.conf"
out=$(mk uninstall 2>&1)
left=$(cd "$X" 2>/dev/null && find . -type f | sort | tr '\n' ' ')
[ "$left" = "./etc/falcon/falcond.conf ./etc/falcon/falcond.key " ] &&
	grep -q "falcond.conf was changed: kept" <<<"$out" &&
	e2e_ok "uninstall keeps the key and a changed configuration, and says so" ||
	e2e_fail "uninstall with a key and a changed configuration left: $left; said: $out"
e2e_done
