#!/usr/bin/env bash
# apt-get.sh ARGS...: apt-get ARGS, waiting for the locks of another
# apt-get or dpkg instead of failing at once, for at most APT_LOCK_WAIT
# seconds (default 600) in all.
#
# apt-get waits for dpkg's locks itself when told to
# (-o DPkg::Lock::Timeout), but not for the others it takes, such as
# /var/lib/apt/lists/lock, which `apt-get update` holds while it
# downloads: when apt-get fails because a lock is held, it is run again
# every APT_LOCK_POLL seconds (default 5) until the bound, saying which
# lock it waits for.
set -euo pipefail

bound="${APT_LOCK_WAIT:-600}"
poll="${APT_LOCK_POLL:-5}"
deadline=$((SECONDS + bound))
errors="$(mktemp)"
trap 'rm -f "$errors"' EXIT

while :; do
	left=$((deadline - SECONDS))
	if ((left < 1)); then
		left=1
	fi
	rc=0
	LC_ALL=C apt-get -o DPkg::Lock::Timeout="$left" "$@" 2>"$errors" || rc=$?
	cat "$errors" >&2
	if ((rc == 0)); then
		exit 0
	fi
	lock="$(grep -o 'Could not get lock [^ ]*' "$errors" | head -n 1 | sed 's/^Could not get lock //; s/[.]$//')" || true
	if [[ -z "$lock" ]]; then
		exit "$rc"
	fi
	if ((SECONDS >= deadline)); then
		echo "apt-get.sh: $lock is still held after ${bound}s (APT_LOCK_WAIT); giving up" >&2
		exit "$rc"
	fi
	echo "apt-get.sh: waiting for $lock, held by another apt-get or dpkg ($((deadline - SECONDS))s left of APT_LOCK_WAIT=${bound}s)" >&2
	sleep "$poll"
done
