#!/bin/sh
# Installs the Debian packages btrsim needs, only those missing; silent when all are present.
# Called by `make deps`. Idempotent. Needs root (or sudo) only when something is missing.
set -eu

PKGS="pkg-config clang lld-14 libsqlite3-dev sqlite3 zlib1g-dev libfiu-dev fiu-utils afl++ lcov
libisal-dev libzstd-dev liblzo2-dev libxxhash-dev libcriterion-dev btrfs-progs linux-libc-dev
util-linux libsodium-dev attr bc chromium"

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
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "deps: done"
