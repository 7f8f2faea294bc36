#!/usr/bin/env bash
# Runs the quick start of docs/admin-api.md as written, with `doorman` from target/debug (or
# $CARGO_TARGET_DIR/debug) on the PATH. A few words change so that it never meets another run or
# a developer's own setup: the database `doorman` (a fresh one, on TEST_DATABASE_URL's server),
# the login roles `doorman_admin_login` and `doorman_app_login` (fresh ones, dropped after) and
# the ports 3001 and 3000 of the two processes (free ones). Fails unless the block succeeds and
# ends by printing the agent it set.
set -euo pipefail
cd "$(dirname "$0")/../.."

doorman_bin=${DOORMAN_BIN:-${CARGO_TARGET_DIR:-target}/debug/doorman}
[ -x "$doorman_bin" ] || cargo build --quiet --locked --bin doorman
command -v jq >/dev/null || {
    echo "installing jq (the quick start reads ids with it)" >&2
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends jq >/dev/null
}

suffix="qs_$$_$RANDOM"
db="doorman_$suffix"
role="doorman_admin_login_$suffix"
app_role="doorman_app_login_$suffix"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
serve_port=$(free_port)
server=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
host_port=${server#*@}
host_port=${host_port%%/*}
work=$(mktemp -d)
case "$doorman_bin" in /*) ;; *) doorman_bin="$PWD/$doorman_bin" ;; esac
mkdir -p "$work/bin" && ln -s "$doorman_bin" "$work/bin/doorman"

# The first ```sh block under "## Quick start".
python3 - docs/admin-api.md >"$work/quick-start.sh" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text[text.index("## Quick start"):]
print(re.search(r"```sh\n(.*?)```", section, re.S).group(1))
PY
sed -i -e "s#127.0.0.1:5432/doorman\b#$host_port/$db#g" -e "s#DATABASE doorman'#DATABASE $db'#" \
    -e "s#doorman_admin_login#$role#g" -e "s#doorman_app_login#$app_role#g" \
    -e "s#127.0.0.1:3001#127.0.0.1:$port#g" -e "s#127.0.0.1:3000#127.0.0.1:$serve_port#g" "$work/quick-start.sh"

cleanup() {
    # The block leaves `doorman admin serve` running in its process group: end the group.
    [ -n "${block:-}" ] && kill -- "-$block" 2>/dev/null || true
    sleep 0.5
    psql "$server" -qc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 || true
    psql "$server" -qc "DROP ROLE IF EXISTS \"$role\"" >/dev/null 2>&1 || true
    psql "$server" -qc "DROP ROLE IF EXISTS \"$app_role\"" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# The servers' own addresses and metrics addresses come from the environment (the block relies
# on the defaults, which another process on this machine may hold). setsid: a process group of
# its own, so that the servers it starts end with it.
PATH="$work/bin:$PATH" DOORMAN_ADMIN_BIND="127.0.0.1:$port" DOORMAN_ADMIN_METRICS_BIND=127.0.0.1:0 \
    DOORMAN_BIND="127.0.0.1:$serve_port" DOORMAN_METRICS_BIND=127.0.0.1:0 \
    setsid bash -euo pipefail "$work/quick-start.sh" >"$work/out" 2>"$work/err" &
block=$!
( sleep 120; kill -- "-$block" 2>/dev/null ) &
watchdog=$!
status=0
wait "$block" || status=$?
kill "$watchdog" 2>/dev/null || true
printed=$(cat "$work/out")
expected='{"url":"http://127.0.0.1:8080/slack","paused":false,"signing_secret_set":true,"failing_since":null,"disabled_at":null}'
# curl prints no newline after a body: the agent read back is how the output ends.
if [ "$status" != 0 ] || [[ "$printed" != *"$expected" ]]; then
    echo "the quick start failed (status $status); it printed:" >&2
    cat "$work/out" >&2
    echo "--- its errors and the server's log:" >&2
    cat "$work/err" >&2
    exit 1
fi
echo "the quick start in docs/admin-api.md ran as written: the agent read back is $expected"
