#!/usr/bin/env bash
# A worker added and the shards rebalanced onto it while Doorman serves (docs/operations.md,
# "Adding a worker while serving"): a local cluster of a coordinator and two workers
# (local-cluster.sh) plus a third node started but not yet in the cluster; the load generator's
# mixed shape against the cluster; once the load is under way, the third node joins the bench
# database's cluster (`citus_add_node`) and `citus_rebalance_start()` moves shards to it while
# the load goes on. Prints when the rebalance started and finished, how many shards moved, and
# the load generator's report (acknowledged per second, 503s, lost, doubled), and the prepared
# transactions left on each node.
#
# Usage: rebalance-under-load.sh [DIR] [PORT] [LOADGEN ARGS…]   (release binaries must be built)
set -euo pipefail
dir=${1:-/tmp/doorman-rebalance}
port=${2:-5480}
shift 2 || true
here=$(cd "$(dirname "$0")/../.." && pwd)
cluster="$here/deploy/citus/local-cluster.sh"
bash "$cluster" up "$dir" "$port" 2 >/dev/null
trap 'bash "$cluster" down "$dir"' EXIT
# The third node: started and joined to the `doorman` database's cluster by `add`; the bench
# database's cluster (made fresh by the load generator) gets it below.
bash "$cluster" add "$dir" "$port" >/dev/null
node() { echo "postgres://postgres@127.0.0.1:$1/postgres"; }
bench="postgres://postgres@127.0.0.1:$port/doorman_bench"
new=$((port + 3))

"$here/target/release/doorman-loadgen" --server "$here/target/release/doorman" --edge-seconds 0 \
    --rounds 1 --database-server "$(node "$port")" \
    --citus-workers "$(node $((port + 1))),$(node $((port + 2)))" "$@" >"$dir/loadgen.log" 2>&1 &
load=$!

# Under way: receipts are being claimed in the bench database.
for _ in $(seq 1 600); do
    n=$(psql -qXAt "$bench" -c "SELECT count(*) FROM messaging_event_receipts" 2>/dev/null || echo 0)
    [ "${n:-0}" -gt 2000 ] && break
    sleep 0.2
done
psql -qX "$(node "$new")" -c "CREATE DATABASE doorman_bench"
psql -qX "postgres://postgres@127.0.0.1:$new/doorman_bench" -c "CREATE EXTENSION citus"
start=$(date +%s.%N)
psql -qXAt "$bench" -c "SELECT citus_add_node('127.0.0.1', $new)" >/dev/null
psql -qXAt "$bench" -c "SELECT citus_rebalance_start()" >/dev/null
echo "rebalance started with $(psql -qXAt "$bench" -c "SELECT count(*) FROM messaging_event_receipts") receipts"
# Until it ends, or the load does (the load generator drops its database when it is done).
state=unfinished moved=0
while kill -0 "$load" 2>/dev/null; do
    state=$(psql -qXAt "$bench" -c "SELECT state FROM citus_rebalance_status()" 2>/dev/null || echo unfinished)
    moved=$(psql -qXAt "$bench" -c "SELECT count(*) FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
                                     WHERE n.nodeport = $new" 2>/dev/null || echo "$moved")
    case "$state" in finished|failed|cancelled) break ;; esac
    sleep 0.2
done
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v st="$state" -v m="$moved" \
    'BEGIN { printf "rebalance %s after %.1f s (or when the load ended); %d shard placements on the new worker by then\n", st, e - s, m }'
wait "$load" || true
cat "$dir/loadgen.log"
# A batch sent to a tenant's old node while its shard moved commits in two phases: none may be
# left prepared on any node once the load is over.
for n in 0 1 2 3; do
    echo "node$n: $(psql -qXAt "$(node $((port + n)))" -c "SELECT count(*) FROM pg_prepared_xacts") prepared transactions left"
done
