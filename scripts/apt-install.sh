#!/usr/bin/env bash
# apt-install.sh [--non-free] PKG...: installs the Debian packages that are
# missing, updating the package lists first. With --non-free, the Debian
# archive's contrib and non-free components are enabled first where the
# sources lack them (nvidia-cuda-toolkit lives in non-free). Uses sudo when
# not root.
set -euo pipefail
nonfree=0
if [ "${1:-}" = "--non-free" ]; then
	nonfree=1
	shift
fi
missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

if [ "$nonfree" = 1 ]; then
	# deb822 sources (Debian 12 and later): extend each Components line of
	# the Debian archive's entries.
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -e "$f" ] || continue
		grep -q 'deb.debian.org\|security.debian.org' "$f" || continue
		grep -q '^Components:.*non-free\( \|$\)' "$f" && continue
		echo "apt-install: enabling contrib non-free in $f"
		$sudo sed -i -E '/^Components:/{/ contrib( |$)/!s/$/ contrib/; / non-free( |$)/!s/$/ non-free/}' "$f"
	done
	# One-line sources.
	if [ -e /etc/apt/sources.list ] && grep -qE '^deb .*debian' /etc/apt/sources.list &&
		! grep -qE '^deb .*debian.* non-free( |$)' /etc/apt/sources.list; then
		echo "apt-install: enabling contrib non-free in /etc/apt/sources.list"
		$sudo sed -i -E '/^deb .*debian/{/ contrib( |$)/!s/$/ contrib/; / non-free( |$)/!s/$/ non-free/}' /etc/apt/sources.list
	fi
fi

# A machine whose image was cut off mid-install refuses every apt-get
# install until the interrupted packages are configured; finishing them
# is what dpkg itself asks for, and does nothing when none are pending.
$sudo dpkg --configure -a
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
