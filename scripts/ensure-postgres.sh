#!/usr/bin/env bash
# Make sure the PostgreSQL server binaries (initdb, postgres, pg_ctl, ...)
# are installed, for `execledger dev` (make run) and the tests of
# internal/pgcluster, which start a private cluster from them.
#
# Idempotent and fast when they are already there: it only looks for
# /usr/lib/postgresql/*/bin/postgres. Otherwise it installs Debian's
# "postgresql" package (apt-get update + apt-get install), as root or
# through sudo, waiting up to APT_LOCK_WAIT seconds (default 600) for
# another apt-get or dpkg to release the package locks
# (scripts/apt-get.sh).
#
# Note: the Debian package also creates and starts a system cluster
# (port 5432, /var/run/postgresql). execledger does not use it: its own
# cluster runs on a random port with its socket inside its data directory.
set -euo pipefail
apt_get="$(dirname "$0")/apt-get.sh"

find_server() {
	local bin
	for bin in /usr/lib/postgresql/*/bin/postgres; do
		if [[ -x "$bin" && -x "$(dirname "$bin")/initdb" ]]; then
			echo "$bin"
		fi
	done | sort -V | tail -n 1
}

if server="$(find_server)" && [[ -n "$server" ]]; then
	echo "ensure-postgres: PostgreSQL server already installed: $("$server" --version) ($(dirname "$server"))"
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-postgres: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin and no apt-get;" \
		"install the PostgreSQL server with your package manager" >&2
	exit 1
fi

sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "ensure-postgres: installing PostgreSQL needs root: run this script as root (or install sudo)" >&2
		exit 1
	fi
	sudo=(sudo)
fi

echo "ensure-postgres: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin; installing package postgresql"
echo "ensure-postgres: apt-get update"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive APT_LOCK_WAIT="${APT_LOCK_WAIT:-600}" bash "$apt_get" update -q
echo "ensure-postgres: apt-get install -y postgresql"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive APT_LOCK_WAIT="${APT_LOCK_WAIT:-600}" bash "$apt_get" install -y -q --no-install-recommends postgresql

if server="$(find_server)" && [[ -n "$server" ]]; then
	echo "ensure-postgres: installed $("$server" --version) ($(dirname "$server"))"
else
	echo "ensure-postgres: apt-get install postgresql finished but no /usr/lib/postgresql/*/bin/postgres was found" >&2
	exit 1
fi
