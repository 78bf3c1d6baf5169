#!/usr/bin/env bash
# Measures the figures of docs/scaling.md on this machine, on private
# PostgreSQL servers of its own under /tmp (nothing else is touched):
#
#   1. a primary alone: `execledger bench --mode burndown` of N requests
#      (executor, read models and sealer, as serve runs them), then the
#      WAL written, every ledger table's size, the rows, dead tuples and
#      vacuums, per request;
#   2. the same primary with a synchronous streaming standby
#      (pg_basebackup, synchronous_standby_names): the same burndown, to
#      show what synchronous replication costs in throughput.
#
# Usage: scripts/capacity.sh [N]   (default 20000; output in $OUT, default
# /tmp/execledger-capacity.txt). Takes a few minutes. Needs the PostgreSQL
# server binaries (scripts/ensure-postgres.sh) and Go.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-20000}"
OUT="${OUT:-/tmp/execledger-capacity.txt}"
PG_BIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
go build -o bin/execledger ./cmd/execledger

dir="$(mktemp -d /tmp/execledger-capacity-XXXXXX)"
chmod 0755 "$dir"
as_pg() {
	if [[ "$(id -u)" == 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}
if [[ "$(id -u)" == 0 ]]; then chown postgres "$dir"; fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
p1="$(free_port)"
p2="$(free_port)"
stop_all() {
	for d in standby primary; do
		if [[ -f "$dir/$d/postmaster.pid" ]]; then as_pg "$PG_BIN/pg_ctl" -D "$dir/$d" -m fast -w stop >/dev/null 2>&1 || true; fi
	done
	rm -rf "$dir"
}
trap stop_all EXIT

start() { # name port [settings...]
	local name="$1" port="$2"
	shift 2
	as_pg "$PG_BIN/pg_ctl" -D "$dir/$name" -l "$dir/$name.log" -w \
		-o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir $*" start >/dev/null
}
url() { echo "postgres://postgres@127.0.0.1:$1/${2:-postgres}?sslmode=disable"; }
sql() { psql "$1" -qAtX -c "$2"; }

as_pg "$PG_BIN/initdb" -D "$dir/primary" --auth=trust --username=postgres -E UTF8 --locale=C >/dev/null
start primary "$p1"
primary="$(url "$p1")"

# measure LABEL: one burndown on the primary, and what it left behind.
measure() {
	local label="$1" before after db
	before="$(sql "$primary" "SELECT pg_current_wal_lsn()")"
	DATABASE_URL="$primary" bin/execledger bench --system execledger --mode burndown --n "$N" --keep --json >"$dir/$label.json"
	after="$(sql "$primary" "SELECT pg_current_wal_lsn()")"
	db="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["database"])' "$dir/$label.json")"
	# Sustained load at half the burndown's rate: the read models' and
	# the sealer's lag with headroom.
	rate="$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["runs"][0]["requests_per_second"] / 2))' "$dir/$label.json")"
	DATABASE_URL="$primary" bin/execledger bench --system execledger --mode continuous --duration 20s --rate "$rate" --json >"$dir/$label-continuous.json"
	{
		echo "== $label: $N requests, $(sql "$primary" "SHOW server_version"), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
		python3 - "$dir/$label.json" "$dir/$label-continuous.json" <<'EOF'
import json, sys
for s in [run for f in sys.argv[1:] for run in json.load(open(f))["runs"]]:
    l = s["latency_ms"]
    print("%s: %.0f requests/s; submit to final p50 %.0f ms, p99 %.0f ms; %.2f events per request" % (
        s["mode"], s["requests_per_second"], l["p50"], l["p99"], s.get("events_per_request", 0)))
    for k in ("projection_lag_ms", "sealer_lag_ms"):
        if s.get(k):
            print("  %s: p50 %.0f, p99 %.0f, max %.0f" % (k, s[k]["p50"], s[k]["p99"], s[k]["max"]))
EOF
		echo "WAL written: $(sql "$primary" "SELECT pg_size_pretty(pg_wal_lsn_diff('$after', '$before'))") ($(sql "$primary" "SELECT round(pg_wal_lsn_diff('$after', '$before') / $N)") bytes per request)"
		echo "events: $(sql "$(url "$p1" "$db")" "SELECT count(*) FROM ledger.events") ($(sql "$(url "$p1" "$db")" "SELECT round(count(*)::numeric / $N, 2) FROM ledger.events") per request)"
		echo "database: $(sql "$(url "$p1" "$db")" "SELECT pg_size_pretty(pg_database_size(current_database()))") ($(sql "$(url "$p1" "$db")" "SELECT round(pg_database_size(current_database())::numeric / $N)") bytes per request, the empty schema included)"
		echo "tables (total with indexes and TOAST, bytes per request, live rows, dead rows, autovacuums, autoanalyzes):"
		psql "$(url "$p1" "$db")" -qAtX -F' | ' -c "SELECT c.relname, pg_size_pretty(pg_total_relation_size(c.oid)),
		       round(pg_total_relation_size(c.oid)::numeric / $N), s.n_live_tup, s.n_dead_tup, s.autovacuum_count, s.autoanalyze_count
		FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
		WHERE c.relnamespace = 'ledger'::regnamespace AND pg_total_relation_size(c.oid) > 100000
		ORDER BY pg_total_relation_size(c.oid) DESC" | sed 's/^/  /'
		echo
	} | tee -a "$OUT"
	sql "$primary" "DROP DATABASE $db"
}

: >"$OUT"
measure "primary alone"

# A synchronous standby.
as_pg "$PG_BIN/pg_basebackup" -D "$dir/standby" -h 127.0.0.1 -p "$p1" -U postgres -X stream -c fast -w
printf "primary_conninfo = 'host=127.0.0.1 port=%s user=postgres application_name=standby1'\n" "$p1" | as_pg tee -a "$dir/standby/postgresql.auto.conf" >/dev/null
as_pg touch "$dir/standby/standby.signal"
start standby "$p2" "-c hot_standby_feedback=on"
sql "$primary" "ALTER SYSTEM SET synchronous_standby_names = 'standby1'"
sql "$primary" "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 100); do
	[[ "$(sql "$primary" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" == 1 ]] && break
	sleep 0.2
done
measure "primary with a synchronous standby"
echo "results in $OUT"
