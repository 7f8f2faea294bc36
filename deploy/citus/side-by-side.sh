#!/usr/bin/env bash
# An earlier binary and today's, side by side on one PostgreSQL and on a local Citus cluster
# (local-cluster.sh: a coordinator and two workers on this machine), alternating, with the CPU
# seconds each cluster node used over each run (cpu-by-node.py; node0 is the coordinator).
# `just bench-citus-against REV` builds REV's binary and runs this.
#
# Usage: side-by-side.sh OLD_BINARY [ROUNDS] [SHAPES]   (today's release binaries must be built)
#   SHAPES: the load generator's --shape (default busy,mixed); the busy shape offers 200,000
#   unique events, more than a run takes.
set -euo pipefail
old=${1:?usage: side-by-side.sh OLD_BINARY [ROUNDS] [SHAPES]}
rounds=${2:-2}
shapes=${3:-busy,mixed}
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d /tmp/doorman-side.XXXX)
bash "$here/deploy/citus/local-cluster.sh" up "$dir" 5490 2 >/dev/null
trap 'bash "$here/deploy/citus/local-cluster.sh" down "$dir"' EXIT
node() { echo "postgres://postgres@127.0.0.1:$1/postgres"; }
report() { grep -E "^== |^answers|2xx/s|µs per handled|acknowledged deliveries/s|PostgreSQL CPU|^verdict|^floor" || true; }
for round in $(seq 1 "$rounds"); do
    for bin in "$old" "$here/target/release/doorman"; do
        echo "=== round $round: $bin on one PostgreSQL"
        "$here/target/release/doorman-loadgen" --server "$bin" --edge-seconds 0 --shape "$shapes" \
            --busy-events 200000 2>&1 | report
        echo "=== round $round: $bin on Citus"
        before=$(python3 "$here/deploy/citus/cpu-by-node.py" "$dir")
        "$here/target/release/doorman-loadgen" --server "$bin" --edge-seconds 0 --shape "$shapes" \
            --busy-events 200000 --database-server "$(node 5490)" \
            --citus-workers "$(node 5491),$(node 5492)" 2>&1 | report
        echo "CPU seconds by node over the run:"
        join <(echo "$before") <(python3 "$here/deploy/citus/cpu-by-node.py" "$dir") |
            awk '{ printf "  %s %.2f\n", $1, $3 - $2 }'
    done
done
