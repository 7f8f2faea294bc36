#!/usr/bin/env bash
# A local Citus cluster to try Doorman on, or to benchmark it (`just bench-citus`): a coordinator
# and WORKERS workers, each its own initdb directory under DIR and its own port (PORT, PORT+1,
# …), started with the machine's PostgreSQL 15 and Citus (`just citus`), joined as
# docs/operations.md's "Running on Citus" says. Not for production: trust authentication on
# 127.0.0.1 only.
#
#   deploy/citus/local-cluster.sh up   [DIR] [PORT] [WORKERS]   # prints the coordinator's URL
#   deploy/citus/local-cluster.sh add  [DIR] [PORT]              # one more worker, joined
#   deploy/citus/local-cluster.sh down [DIR]
#
# `up` makes the `doorman` database with the extension on every node; point DATABASE_URL at the
# coordinator and run `doorman migrate` to distribute the receipts.
set -euo pipefail
action=${1:?usage: local-cluster.sh up|add|down [DIR] [PORT] [WORKERS]}
dir=${2:-/tmp/doorman-citus}
port=${3:-5460}
workers=${4:-2}
bin=/usr/lib/postgresql/15/bin
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# Node N: its data directory (made on first use), started, the database and the extension.
start_node() {
    local n=$1 data="$dir/node$1" node_port=$((port + $1))
    if [ ! -d "$data" ]; then
        as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust >/dev/null
        cat >>"$data/postgresql.conf" <<EOF
port = $node_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
shared_preload_libraries = 'citus'
# Two-phase commit of a transaction that writes on two workers needs prepared transactions.
max_prepared_transactions = 100
# Every coordinator backend may open a connection to each worker.
max_connections = 300
# Shards move by logical replication (citus_rebalance_start), writable while they are copied.
wal_level = logical
# A worker that does not answer is given up well inside Doorman's 1.5 s statement timeout.
citus.node_connection_timeout = 1000
EOF
    fi
    as_postgres "$bin/pg_ctl" -D "$data" -l "$data/log" -w start >/dev/null
    psql -qX "postgres://postgres@127.0.0.1:$node_port/postgres" -c "CREATE DATABASE doorman" 2>/dev/null || true
    psql -qX "postgres://postgres@127.0.0.1:$node_port/doorman" -c "CREATE EXTENSION IF NOT EXISTS citus" >/dev/null
}

case "$action" in
down)
    for data in "$dir"/node*; do
        [ -d "$data" ] && as_postgres "$bin/pg_ctl" -D "$data" -m fast stop >/dev/null 2>&1 || true
    done
    rm -rf "$dir"
    ;;
up)
    [ -f "$bin/../lib/citus.so" ] || { echo "Citus is not installed: run just citus" >&2; exit 1; }
    mkdir -p "$dir" && chown postgres "$dir" 2>/dev/null || true
    for n in $(seq 0 "$workers"); do start_node "$n"; done
    coordinator="postgres://postgres@127.0.0.1:$port/doorman"
    psql -qXAt "$coordinator" -c "SELECT citus_set_coordinator_host('127.0.0.1', $port)" >/dev/null
    for n in $(seq 1 "$workers"); do
        psql -qXAt "$coordinator" -c "SELECT citus_add_node('127.0.0.1', $((port + n)))" >/dev/null
    done
    echo "$coordinator"
    ;;
add)
    n=$(find "$dir" -maxdepth 1 -name 'node*' | wc -l)
    start_node "$n"
    psql -qXAt "postgres://postgres@127.0.0.1:$port/doorman" -c "SELECT citus_add_node('127.0.0.1', $((port + n)))" >/dev/null
    echo "worker $n on port $((port + n)) added; move shards to it with SELECT citus_rebalance_start()"
    ;;
*)
    echo "usage: local-cluster.sh up|add|down [DIR] [PORT] [WORKERS]" >&2; exit 2
    ;;
esac
