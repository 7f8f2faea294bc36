#!/usr/bin/env bash
# What a claim batch costs on Citus by how it is cut and how its functions are written (ADR 22,
# docs/benchmarks.md): pgbench calls doorman_claim_receipts (and doorman_write_outcomes) on a
# migrated, distributed `doorman` database (a coordinator made by local-cluster.sh, then
# `doorman migrate`) with 16 fresh events per call,
#   span:       one call, 8 events of a tenant on worker 1 and 8 of one on worker 2
#               (committed in two phases across the workers);
#   per-tenant: the same 16 events as two calls, one per tenant, each its own transaction
#               (each on one worker, committed in one phase);
#   one-worker: one call, 16 events of the worker-1 tenant (one shard, one phase);
#   sixteen:    one call, one event for each of 16 tenants (the mixed load's batches);
#   outcomes:   sixteen, then doorman_write_outcomes completing the same 16 events.
# Each shape runs with the functions Citus gets (`routed`: postgres/sql/functions/*.citus.sql, one
# routed statement per event) and with one PostgreSQL's set-based ones (`set-based`: the plain
# files beside them), alternately, ROUNDS times; the routed ones are left in place.
# Prints events/s. Usage: batch-bench.sh COORDINATOR_URL [SECONDS] [CLIENTS] [ROUNDS]
set -euo pipefail
url=${1:?usage: batch-bench.sh COORDINATOR_URL [SECONDS] [CLIENTS] [ROUNDS]}
seconds=${2:-10}
clients=${3:-8}
rounds=${4:-2}
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
q() { psql -qXAt "$url" -c "$1"; }
sql_functions="$here/crates/doorman-adapters/src/postgres/sql/functions"
routed() { cat "$sql_functions"/*.citus.sql | psql -qX -v ON_ERROR_STOP=1 "$url"; }
set_based() { psql -qX -v ON_ERROR_STOP=1 "$url" -f "$work/set-based.sql"; }
trap 'routed; rm -rf "$work"' EXIT

# One tenant whose receipts' shard is on each of the first two workers.
tenant_on() {
    local port=$1
    for _ in $(seq 1 200); do
        local t
        t=$(q "SELECT gen_random_uuid()")
        local at
        at=$(q "SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
                WHERE p.shardid = get_shard_id_for_distribution_column('messaging_event_receipts', '$t'::uuid)")
        if [ "$at" = "$port" ]; then echo "$t"; return; fi
    done
    echo "no tenant hashed to the worker on $port" >&2; exit 1
}
mapfile -t ports < <(q "SELECT nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0 ORDER BY nodeport LIMIT 2")
[ "${#ports[@]}" = 2 ] || { echo "need two workers" >&2; exit 1; }
a=$(tenant_on "${ports[0]}")
b=$(tenant_on "${ports[1]}")

# A call claiming N events: tenants, platforms, ids (unique per client and transaction; $3, if
# given, adds a random suffix), claim ids, types, attempts, times, no payloads.
ids() { # $1: N; $2: a suffix expression or nothing
    echo "ARRAY(SELECT 'Ev' || :client_id || 'x' || :r || 'x' || g $2 FROM generate_series(1, $1) g)"
}
call() { # $1: a SQL array of N tenants; $2: N
    cat <<EOF
SELECT count(*) FROM doorman_claim_receipts(
    $1,
    array_fill('slack'::text, ARRAY[$2]),
    $(ids "$2" "|| 'x' || md5(random()::text)"),
    ARRAY(SELECT gen_random_uuid() FROM generate_series(1, $2)),
    array_fill('message'::text, ARRAY[$2]),
    array_fill(1, ARRAY[$2]),
    array_fill(now(), ARRAY[$2]),
    array_fill(NULL::text, ARRAY[$2]));
EOF
}
fill() { echo "array_fill('$1'::uuid, ARRAY[$2])"; }
# Sixteen fixed tenants (their shards spread over the workers), one event each.
sixteen="(SELECT array_agg(('00000000-0000-0000-0000-0000000000' || g)::uuid ORDER BY g) FROM generate_series(10, 25) g)"
{ echo '\set r random(1, 2000000000)'; call "$(fill "$a" 8) || $(fill "$b" 8)" 16; } >"$work/span.sql"
{ echo '\set r random(1, 2000000000)'; call "$(fill "$a" 8)" 8; call "$(fill "$b" 8)" 8; } >"$work/per-tenant.sql"
{ echo '\set r random(1, 2000000000)'; call "$(fill "$a" 16)" 16; } >"$work/one-worker.sql"
{ echo '\set r random(1, 2000000000)'; call "$sixteen" 16; } >"$work/sixteen.sql"
{
    echo '\set r random(1, 2000000000)'
    call "$sixteen" 16 | sed "s/ || 'x' || md5(random()::text)//"
    cat <<EOF
SELECT doorman_write_outcomes($sixteen, array_fill('slack'::text, ARRAY[16]), $(ids 16 ""),
    array_fill(now(), ARRAY[16]), array_fill(NULL::text, ARRAY[16]), array_fill(NULL::timestamptz, ARRAY[16]));
EOF
} >"$work/outcomes.sql"

# One PostgreSQL's definitions of the batch functions Citus has its own forms of.
cat "$sql_functions"/doorman_claim_receipts.sql "$sql_functions"/doorman_claim_requests.sql \
    "$sql_functions"/doorman_write_outcomes.sql >"$work/set-based.sql"

for round in $(seq 1 "$rounds"); do
    for functions in routed set-based; do
        "${functions/-/_}"
        for shape in span per-tenant one-worker sixteen outcomes; do
            tps=$(pgbench -n -M simple -c "$clients" -j 2 -T "$seconds" -f "$work/$shape.sql" "$url" 2>/dev/null |
                awk '/^tps = / { print $3 }')
            # Every shape claims 16 events per transaction script.
            awk -v r="$round" -v f="$functions" -v s="$shape" -v t="$tps" -v c="$clients" -v d="$seconds" \
                'BEGIN { printf "round %s  %-9s  %-10s %8.0f events/s  (%s clients, %s s)\n", r, f, s, t * 16, c, d }'
        done
    done
done
q "TRUNCATE messaging_event_receipts, messaging_event_payloads"
