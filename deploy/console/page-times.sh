#!/usr/bin/env bash
# Times every console page on a bench database: RECEIPTS receipts (1,000,000) over TENANTS tenants
# (200): the measured tenant has a fifth of them, in every state, the others share the rest; each
# tenant has a workspace; a replay job, an audit trail, keys. A release `doorman admin serve`
# logged in as a doorman_admin member; each page fetched ROUNDS times (21) after one warm-up,
# signed in as a support key; prints the median and the slowest, in ms.
# Usage: deploy/console/page-times.sh [ROUNDS]   (`just bench-console` builds the binary first)
#        RECEIPTS=100000 TENANTS=2 deploy/console/page-times.sh   (a smaller database)
#        BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5460/doorman deploy/console/page-times.sh
#            (an existing, empty database instead of a new one on TEST_DATABASE_URL's server: a
#            Citus coordinator's, as `just bench-console-citus` runs it; `doorman migrate`
#            distributes the receipts there)
set -euo pipefail
rounds="${1:-21}"
receipts="${RECEIPTS:-1000000}"
tenant_count="${TENANTS:-200}"
[ "$tenant_count" -ge 2 ] || { echo "TENANTS must be at least 2" >&2; exit 2; }
doorman="${DOORMAN:-target/release/doorman}"
server="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
server="${server%/*}"
name="doorman_console_bench_$$"
if [ -n "${BENCH_DATABASE_URL:-}" ]; then
    server="${BENCH_DATABASE_URL%/*}"
    name="${BENCH_DATABASE_URL##*/}"
fi
export DATABASE_URL="$server/$name"
export DOORMAN_ENCRYPTION_KEYS="bench:$(head -c 32 /dev/urandom | base64 -w0)"
export DOORMAN_AGENT_ALLOW_PRIVATE=true RUST_LOG=warn
work=$(mktemp -d)
cleanup() {
    [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    if [ -z "${BENCH_DATABASE_URL:-}" ]; then
        psql -qX "$server/postgres" -c "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" >/dev/null 2>&1 || true
        psql -qX "$server/postgres" -c "DROP ROLE IF EXISTS console_bench_admin" >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
[ -n "${BENCH_DATABASE_URL:-}" ] || psql -qX "$server/postgres" -c "CREATE DATABASE \"$name\""
"$doorman" migrate >/dev/null 2>&1
# NOINHERIT, so the pool takes the role by SET ROLE, as on one server; on Citus a login inherits
# its group role (Citus reaches the workers as the login: docs/operations.md).
inherit=NOINHERIT
[ -z "${BENCH_DATABASE_URL:-}" ] || inherit=INHERIT
psql -qX "$server/$name" -c "DROP ROLE IF EXISTS console_bench_admin" -c "CREATE ROLE console_bench_admin LOGIN $inherit; GRANT doorman_admin TO console_bench_admin" >/dev/null
key=$("$doorman" admin keys create --name bench-support --read-payloads 2>/dev/null)
tenants=()
for n in 1 2; do
    t=$("$doorman" tenant add --name "Bench $n" 2>/dev/null)
    "$doorman" workspace link --tenant "$t" --team-id "TBENCH$n" >/dev/null 2>&1
    DOORMAN_AGENT_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw "$doorman" agent set --tenant "$t" --url http://127.0.0.1:9/agent >/dev/null 2>&1
    tenants+=("$t")
done
t="${tenants[0]}"
# The other tenants, written directly (each with a workspace): the CLI's three commands per
# tenant would take minutes for 200.
psql -qX "$DATABASE_URL" <<SQL
INSERT INTO tenants (id, name)
SELECT gen_random_uuid(), 'Bulk ' || g FROM generate_series(3, $tenant_count) AS g;
INSERT INTO messaging_workspaces (tenant_id, platform, team_id)
SELECT id, 'slack', 'TBULK' || substr(name, 6) FROM tenants WHERE name LIKE 'Bulk %';
SQL
# A fifth of the receipts for the measured tenant, the rest shared by the others in turn; of
# each tenant's, 1 in 10 failed and 1 in 1,000 unfinished (by g / 5, so each tenant has every
# state), one every 6 s back from now.
psql -qX "$DATABASE_URL" <<SQL
CREATE TEMP TABLE bench_tenants AS
SELECT row_number() OVER (ORDER BY name) - 1 AS n, id FROM tenants WHERE id <> '$t'::uuid;
INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at, handled_at, failure_reason, failed_at)
SELECT CASE WHEN g % 5 = 0 THEN '$t'::uuid ELSE b.id END, 'slack', 'EvBench' || g,
       CASE WHEN g % 3 = 0 THEN 'message' ELSE 'app_mention' END, 0,
       now() - g * interval '6 seconds',
       CASE WHEN g / 5 % 10 <> 0 AND g / 5 % 1000 <> 1 THEN now() - g * interval '6 seconds' + interval '40 ms' END,
       CASE WHEN g / 5 % 10 = 0 THEN 'agent answered HTTP 500' END,
       CASE WHEN g / 5 % 10 = 0 THEN now() - g * interval '6 seconds' + interval '40 ms' END
FROM generate_series(1, $receipts) AS g
JOIN bench_tenants AS b ON b.n = g % ($tenant_count - 1);
-- What a serving process's background work does every few seconds: unfinished receipts claimed
-- before the stranded threshold are marked, so the stranded list finds them by their mark.
SELECT doorman_sweep_receipts(now() - interval '10 minutes');
-- A week of activity for every tenant, as the serving processes' flushes leave it (the charts
-- and the overview read this rollup, never the receipts).
INSERT INTO messaging_activity_hours (tenant_id, hour, delivered, failed, dispatch_ms, dispatch_ms_max)
SELECT t.id, date_trunc('hour', now()) - h * interval '1 hour', 100 + h % 7, (h + length(t.name)) % 11,
       4000 + h, 90 + h % 30
FROM tenants AS t, generate_series(0, 7 * 24 - 1) AS h;
ANALYZE;
SQL
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
DATABASE_URL="${server/postgres@/console_bench_admin@}/$name" \
    "$doorman" admin serve --bind "127.0.0.1:$port" --metrics-bind 127.0.0.1:0 >"$work/admin.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -fsS "$base/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$base/readyz" >/dev/null || { echo "doorman admin serve did not start:" >&2; cat "$work/admin.log" >&2; exit 1; }
# A replay job of the last two hours' failed events (24), so the job pages have something to show.
curl -fsS -X POST -H "Authorization: Bearer $key" -H 'content-type: application/json' \
    -d "{\"failed_since\": \"$(date -u -d '-2 hours' +%Y-%m-%dT%H:%M:%SZ)\"}" \
    "$base/admin/v1/tenants/$t/replays" >"$work/job.json"
job=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/job.json")
curl -fsS -o /dev/null -c "$work/jar" -H "Origin: $base" --data-urlencode "key=$key" "$base/console/sign-in"
since=$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M)
pages=(
    "/console/tenants"
    "/console/tenants?search=bench"
    "/console/tenants?search=TBULK7"  # by a workspace's team id
    "/console/events?event_id=EvBench10"  # an event by its id, across the 200 tenants
    "/console/events?event_id=EvNowhere"  # an id no tenant has
    "/console/overview"  # the tenants failing most, with their counts (the rollup) and troubled agents
    "/console/tenants/$t"  # with its activity: failures in 24 h and three charts (the rollup)
    "/console/tenants/$t/events?state=handled"
    "/console/tenants/$t/events?state=failed"
    "/console/tenants/$t/events?state=in_flight"
    "/console/tenants/$t/events?state=stranded"
    "/console/tenants/$t/events?state=all"
    "/console/tenants/$t/events?state=handled&type=message&since=$since"
    "/console/tenants/$t/events/EvBench10"  # the measured tenant's (g % 5 = 0), handled
    "/console/tenants/$t/replays"
    "/console/tenants/$t/replays/$job"
    "/console/audit"
    "/console/audit?tenant=$t"
    "/console/audit?action=tenant.create"
    "/console/keys"
)
csrf=$(curl -fsS -b "$work/jar" "$base/console/tenants/$t" | grep -o 'name="csrf" value="[^"]*"' | head -n1 | sed 's/.*value="//; s/"$//')
[ -n "$csrf" ] || { echo "no form token on the tenant page" >&2; exit 1; }
# POSTs that change nothing: a bulk retry's preview (a dry run), of two ticked events and of the
# failed list's filter at the most a job takes (1,000).
posts=(
    "/console/tenants/$t/replays/preview|state=failed&event_id=EvBench50&event_id=EvBench100"
    "/console/tenants/$t/replays/preview|state=failed&limit=1000"
)
# The admin API's own reads behind the new pages, with the key.
api=(
    "/admin/v1/overview"
    "/admin/v1/tenants/$t/activity?hours=168"
    "/admin/v1/events?event_id=EvBench10"
)
# One line: the median and the slowest of ROUNDS fetches (curl ARGS… URL) after a warm-up.
time_it() {
    local label=$1
    shift
    curl -s -o /dev/null "$@"   # warm-up
    local times=() status="" out
    for _ in $(seq 1 "$rounds"); do
        out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$@")
        status="${out% *}"
        times+=("${out#* }")
    done
    local sorted median max
    sorted=$(printf '%s\n' "${times[@]}" | sort -n)
    median=$(echo "$sorted" | sed -n "$(( (rounds + 1) / 2 ))p")
    max=$(echo "$sorted" | tail -n1)
    awk -v p="${label//$t/\{tenant\}}" -v m="$median" -v x="$max" -v s="$status" 'BEGIN { printf "%-72s %8.1f %8.1f %6s\n", p, m * 1000, x * 1000, s }'
}
printf '%-72s %8s %8s %6s\n' page "median" "max" status
for page in "${pages[@]}"; do
    time_it "$page" -b "$work/jar" "$base$page"
done
for post in "${posts[@]}"; do
    page="${post%%|*}"
    time_it "POST $page (${post#*|})" -b "$work/jar" -H "Origin: $base" --data "csrf=$csrf&${post#*|}" "$base$page"
done
for page in "${api[@]}"; do
    time_it "$page" -H "Authorization: Bearer $key" "$base$page"
done
