#!/bin/sh
# Installs the Debian packages btrsim needs, only those missing; silent when all are present.
# Called by `make deps`. Idempotent. Needs root (or sudo) only when something is missing.
set -eu

PKGS="pkg-config clang lld-14 libsqlite3-dev sqlite3 zlib1g-dev libfiu-dev fiu-utils afl++ lcov
libisal-dev libzstd-dev liblzo2-dev libxxhash-dev libcriterion-dev btrfs-progs linux-libc-dev
util-linux libsodium-dev libfuse3-dev fuse3 attr acl bc chromium python3 e2fsprogs btrfs-compsize duperemove
xfsprogs git rsync fio slurm-wlm munge libssl-dev"

# How long to wait for another apt-get or dpkg (unattended-upgrades, a
# second make deps) to let go of the dpkg lock before giving up.
LOCK_WAIT=${DEPS_LOCK_WAIT:-600}

# The pid and name of a running package manager, or nothing.
apt_holder() {
	for c in /proc/[0-9]*/comm; do
		n=$(cat "$c" 2>/dev/null) || continue
		case "$n" in
		apt|apt-get|aptitude|dpkg|unattended-upgr*)
			p=${c#/proc/}
			echo "${p%/comm} $n"
			return 0 ;;
		esac
	done
	return 1
}

# Waits (a line saying so) while another package manager runs.
wait_for_apt() {
	h=$(apt_holder) || return 0
	echo "deps: waiting for ${h#* } (pid ${h%% *}) to release the dpkg lock (up to ${LOCK_WAIT} s)"
	t=0
	while apt_holder >/dev/null; do
		if [ "$t" -ge "$LOCK_WAIT" ]; then
			echo "deps: the dpkg lock is still held after ${LOCK_WAIT} s; try again later" >&2
			return 1
		fi
		sleep 1
		t=$((t + 1))
	done
	echo "deps: the dpkg lock is free"
}

if [ "${1:-}" = "--wait-lock" ]; then # (tests/cli/test_deps.sh)
	wait_for_apt
	exit
fi

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*"ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0

echo "deps: installing:$missing"
if [ "$(id -u)" -eq 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1; then
	SUDO="sudo"
else
	echo "deps: missing packages:$missing; run 'make deps' as root" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
wait_for_apt
# apt's own lock timeout covers one that starts in between.
LOCK="-o DPkg::Lock::Timeout=$LOCK_WAIT"
# shellcheck disable=SC2086
$SUDO apt-get $LOCK update -qq
# shellcheck disable=SC2086
$SUDO apt-get $LOCK install -y -qq --no-install-recommends $missing >/dev/null
echo "deps: done"
