#!/usr/bin/env bash
# Everything `make test` needs on a fresh Debian machine, installed and
# started by the project itself:
#   - the PostgreSQL server binaries (scripts/ensure-postgres.sh);
#   - a PostgreSQL server the tests can create databases on: TEST_DATABASE_URL
#     when set, else 127.0.0.1:5432 as user postgres. When nothing answers
#     there, the Debian cluster is started (or created, then started);
#   - docker-compose, to validate docker-compose.yml (there is no Docker
#     engine here: the file is checked, not run);
#   - bubblewrap, for the sandbox tests (tier C and the seccomp filter);
#   - curl, the client tier C's egress tests run inside the sandbox;
#   - make and git, launchers the sandbox tests show confined;
#   - chromium, the headless browser the web console's tests drive
#     (internal/console, through the DevTools protocol);
#   - wabt, whose wat2wasm builds the WebAssembly text modules the fuel
#     metering tests (internal/wasm/meter) run;
#   - node and npm, and the MCP TypeScript SDK from npm in testdata/mcp-node
#     (npm ci from its package-lock.json), the independent client of the
#     execledger mcp end-to-end test;
#   - prometheus (with promtool), which the dashboards test runs on a free
#     port with its own configuration and data directory. The Debian package
#     would also start and enable a system Prometheus on :9090; that one is
#     kept from starting and disabled, since nothing here uses it.
# Idempotent; fast when all is in place. When another apt-get or dpkg
# holds the package locks, it waits for them, up to APT_LOCK_WAIT seconds
# (default 600; scripts/apt-get.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-postgres.sh

apt_updated=
apt_install() {
	if [[ -z "$apt_updated" ]]; then
		echo "ensure-test-deps: apt-get update"
		DEBIAN_FRONTEND=noninteractive bash scripts/apt-get.sh update -q
		apt_updated=1
	fi
	echo "ensure-test-deps: apt-get install -y $*"
	DEBIAN_FRONTEND=noninteractive bash scripts/apt-get.sh install -y -q --no-install-recommends "$@"
}

command -v docker-compose >/dev/null 2>&1 || apt_install docker-compose
command -v psql >/dev/null 2>&1 || apt_install postgresql-client
command -v bwrap >/dev/null 2>&1 || apt_install bubblewrap
command -v curl >/dev/null 2>&1 || apt_install curl
command -v make >/dev/null 2>&1 || apt_install make
command -v git >/dev/null 2>&1 || apt_install git
command -v wat2wasm >/dev/null 2>&1 || apt_install wabt
command -v node >/dev/null 2>&1 || apt_install nodejs
command -v npm >/dev/null 2>&1 || apt_install npm
command -v chromium >/dev/null 2>&1 || apt_install chromium

# The npm client of the MCP end-to-end test, again whenever the lock file
# is newer than what was installed.
mcp_node=testdata/mcp-node
if [[ ! -f "$mcp_node/node_modules/.package-lock.json" || "$mcp_node/package-lock.json" -nt "$mcp_node/node_modules/.package-lock.json" ]]; then
	echo "ensure-test-deps: npm ci in $mcp_node"
	npm ci --prefix "$mcp_node" --no-audit --no-fund
fi

# without_service_starts runs a command with service starts refused by
# policy-rc.d (invoke-rc.d and deb-systemd-invoke obey it), unless a
# policy-rc.d is already there, as in most containers.
without_service_starts() {
	local added= rc=0
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\n# ensure-test-deps.sh: no service starts during its install\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 0755 /usr/sbin/policy-rc.d
		added=1
	fi
	"$@" || rc=$?
	if [[ -n "$added" ]]; then
		rm -f /usr/sbin/policy-rc.d
	fi
	return "$rc"
}

if ! command -v prometheus >/dev/null 2>&1; then
	without_service_starts apt_install prometheus
	# The package enables its systemd unit and its init script for the next
	# boot; a running systemd may have started it despite policy-rc.d.
	if [[ -d /run/systemd/system ]]; then
		systemctl disable --now prometheus.service >/dev/null 2>&1 || true
	elif command -v systemctl >/dev/null 2>&1; then
		systemctl disable prometheus.service >/dev/null 2>&1 || true
	fi
	if [[ -x /etc/init.d/prometheus ]]; then
		update-rc.d prometheus disable >/dev/null 2>&1 || true
	fi
fi

url="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"
if psql "$url" -qAtc 'SELECT 1' >/dev/null 2>&1; then
	echo "ensure-test-deps: PostgreSQL answers at ${url%%\?*}"
	exit 0
fi
if [[ -n "${TEST_DATABASE_URL:-}" ]]; then
	echo "ensure-test-deps: TEST_DATABASE_URL is set but nothing answers there" >&2
	exit 1
fi

# Start the system cluster on 5432.
version="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -q "^$version main$"; then
	echo "ensure-test-deps: creating PostgreSQL $version cluster main"
	pg_createcluster "$version" main -- --auth-local=trust --auth-host=trust
fi
echo "ensure-test-deps: starting PostgreSQL $version cluster main"
pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
for _ in $(seq 1 60); do
	if psql "$url" -qAtc 'SELECT 1' >/dev/null 2>&1; then
		echo "ensure-test-deps: PostgreSQL answers at ${url%%\?*}"
		exit 0
	fi
	sleep 0.5
done
echo "ensure-test-deps: PostgreSQL does not answer at ${url%%\?*}; see /var/log/postgresql/" >&2
exit 1
