# Doorman's recipes. `just --list` shows them; the README says which to run when.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The server the tests create their databases on.
export TEST_DATABASE_URL := env("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")

default:
    @just --list

# `--all-targets` leaves out doc tests, so they run second (the sealed Job's compile-fail
# tests are among them).
# Run every test: the alert rules' (promtool), then the workspace's (needs PostgreSQL and
# Chromium: see `just postgres`, `just browser`, `just axe`; the Citus tests need `just citus`,
# the error-classification test `just locales`), then the
# admin API's contract (`just api-contract`), then docs/admin-api.md's quick start as written.
test: postgres browser axe alerts pgbouncer previous-release citus locales
    cargo test --workspace --all-targets --locked
    cargo test --workspace --doc --locked
    just api-contract
    bash deploy/quick-start/run.sh

# The committed copy is checked by a test; regenerate it after changing a handler or a document.
# Write the admin API's OpenAPI document to docs/admin-api.json.
openapi:
    cargo run --quiet --locked --bin doorman -- admin openapi > docs/admin-api.json

# openapi-spec-validator on the served document, a Python client generated from it
# (openapi-python-client) onboarding a tenant, then Schemathesis (PyPI, both installed when
# missing) against a live `doorman admin serve` on a fresh database seeded with three tenants
# (workspaces, agents, events handled, failed, stranded and in flight), with a key for every
# tenant: every operation, every check (`--checks all`: status codes, schemas, headers,
# content types, schema-valid requests accepted and schema-violating ones refused, 405 for
# other methods, auth, created resources found), examples, coverage, fuzzing and the stateful
# phase, for CONTRACT_SECONDS (150 by default). deploy/schemathesis/hooks.py points half of the
# valid event and workspace ids at the seeded ones.
# Check the admin API against its OpenAPI document.
api-contract: postgres
    #!/usr/bin/env bash
    set -euo pipefail
    if ! command -v st >/dev/null; then
        echo "installing schemathesis from PyPI" >&2
        pip install --quiet "schemathesis==4.32.5" || pip install --quiet --user "schemathesis==4.32.5"
        hash -r
    fi
    if ! command -v openapi-python-client >/dev/null; then
        echo "installing openapi-python-client from PyPI" >&2
        pip install --quiet "openapi-python-client==0.29.1" || pip install --quiet --user "openapi-python-client==0.29.1"
        hash -r
    fi
    if ! command -v openapi-spec-validator >/dev/null; then
        echo "installing openapi-spec-validator from PyPI" >&2
        pip install --quiet "openapi-spec-validator==0.9.0" || pip install --quiet --user "openapi-spec-validator==0.9.0"
        hash -r
    fi
    export PATH="$HOME/.local/bin:$PATH"
    cargo build --quiet --locked --bin doorman
    target="${CARGO_TARGET_DIR:-target}"
    doorman="$target/debug/doorman"
    server="${TEST_DATABASE_URL%/*}"
    name="doorman_contract_$$"
    export DATABASE_URL="$server/$name"
    export DOORMAN_ENCRYPTION_KEYS="contract:$(head -c 32 /dev/urandom | base64 -w0)"
    export DOORMAN_AGENT_ALLOW_PRIVATE=true RUST_LOG="${CONTRACT_LOG:-warn}"
    psql "$server/postgres" -qc "CREATE DATABASE \"$name\""
    work=$(mktemp -d)
    cleanup() {
        [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
        if [ -n "${CONTRACT_KEEP_DB:-}" ]; then echo "kept database $name (CONTRACT_KEEP_DB)" >&2
        else psql "$server/postgres" -qc "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" || true; fi
        cp "$work/admin.log" "$target/api-contract-admin.log" 2>/dev/null || true   # kept for a look after a failure
        rm -rf "$work"
    }
    trap cleanup EXIT
    "$doorman" migrate >/dev/null
    key=$("$doorman" admin keys create --name schemathesis)
    # The seed: three tenants as an operator makes them, and receipts in every state.
    seeds=()
    for n in 1 2 3; do
        t=$("$doorman" tenant add --name "Seeded $n")
        "$doorman" workspace link --tenant "$t" --team-id "TSEED$n" >/dev/null
        "$doorman" workspace link --tenant "$t" --team-id "TGRID$n" --enterprise-id "EGRID$n" >/dev/null
        DOORMAN_AGENT_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw "$doorman" agent set --tenant "$t" --url http://127.0.0.1:9/agent >/dev/null
        "$doorman" tenant retain-payloads --tenant "$t" on >/dev/null
        psql -qX "$DATABASE_URL" -c "INSERT INTO messaging_event_receipts
            (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at, handled_at, failure_reason, failed_at) VALUES
            ('$t', 'slack', 'EvHandled$n', 'app_mention', 0, now() - interval '1 hour', now() - interval '59 minutes', NULL, NULL),
            ('$t', 'slack', 'EvFailed$n', 'app_mention', 0, now() - interval '30 minutes', NULL, 'agent answered HTTP 500', now() - interval '29 minutes'),
            ('$t', 'slack', 'EvStranded$n', 'message', 0, now() - interval '20 minutes', NULL, NULL, NULL),
            ('$t', 'slack', 'EvFlight$n', 'message', 0, now(), NULL, NULL, NULL);
            INSERT INTO messaging_installations (tenant_id, platform, team_id, is_enterprise_install, app_id, bot_user_id, scopes)
            VALUES ('$t', 'slack', 'TSEED$n', false, 'A0CONTRACT', 'U0CONTRACT', 'chat:write')"
        seeds+=("{\"tenant\": \"$t\", \"teams\": [\"TSEED$n\", \"TGRID$n\"], \"events\": [\"EvHandled$n\", \"EvFailed$n\", \"EvStranded$n\", \"EvFlight$n\"]}")
    done
    (IFS=,; echo "[${seeds[*]}]") > "$work/seed.json"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$doorman" admin serve --bind "127.0.0.1:$port" --metrics-bind 127.0.0.1:0 --slack-client-id 1.2 \
        --slack-client-secret contract --public-url https://doorman.example \
        --console-url "http://127.0.0.1:$port" >"$work/admin.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do
        curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    # The served document against the OpenAPI specification (unique operationIds among it).
    curl -fsS "http://127.0.0.1:$port/admin/v1/openapi.json" >"$work/openapi.json"
    openapi-spec-validator "$work/openapi.json"
    # A Python client generated from it onboards (and offboards) a tenant: deploy/client/onboard.py.
    openapi-python-client generate --path "$work/openapi.json" --meta none --fail-on-warning \
        --output-path "$work/doorman_admin_client" >/dev/null
    PYTHONPATH="$work" python3 deploy/client/onboard.py "http://127.0.0.1:$port" "$key"
    # One worker: with two threads, Hypothesis's parsing of its own sources (Python 3.11's ast)
    # once stopped an operation's phase with "AST constructor recursion depth mismatch", a
    # runtime error of the tool's, not a finding about the API.
    DOORMAN_CONTRACT_SEED="$work/seed.json" SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$PWD/deploy/schemathesis" \
    st --config-file deploy/schemathesis/schemathesis.toml run "http://127.0.0.1:$port/admin/v1/openapi.json" \
        --header "Authorization: Bearer $key" \
        --checks all --phases examples,coverage,fuzzing,stateful \
        --workers 1 --max-time "${CONTRACT_SECONDS:-150}" --no-color \
        || { echo "--- doorman admin serve's log (refused keys left out):" >&2; grep -v "request refused: no valid key" "$work/admin.log" | tail -n 200 >&2; exit 1; }

# Formatting and clippy, warnings as errors.
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets --locked -- -D warnings

# The one copy of the architecture check (CI runs this recipe):
# - doorman-domain stays pure: no database, HTTP, crypto or runtime crate, and no mocks;
# - the doorman binary's crate has no test support in its tree and no diesel crate of its own
#   (operator commands go through the adapters).
# Prove the hexagon: the dependency rules the layers rely on.
check-hexagon: check-modules
    #!/usr/bin/env bash
    set -euo pipefail
    failed=0
    tree() { cargo tree --locked -e normal --prefix none "$@"; }
    domain=$(tree -p doorman-domain)
    if grep -E '^(diesel|diesel-async|diesel_migrations|bb8|actix-web|ring|reqwest|tokio|tokio-postgres|mockall) ' <<<"$domain"; then
        echo "doorman-domain depends on an I/O crate or mockall (listed above)" >&2; failed=1
    fi
    if tree -p doorman-app | grep -E '^doorman-testkit '; then
        echo "doorman-app's normal dependency tree contains the test kit" >&2; failed=1
    fi
    if tree -p doorman-app --depth 1 | grep -E '^(diesel|diesel-async|diesel_migrations|bb8) '; then
        echo "doorman-app depends on a diesel crate directly; go through doorman-adapters" >&2; failed=1
    fi
    if cargo tree --locked -e normal,features -p doorman-app --prefix none | grep -E '^doorman-domain feature "mocks"'; then
        echo "doorman-app builds doorman-domain with its mocks" >&2; failed=1
    fi
    [ "$failed" = 0 ] && echo "hexagon holds: domain pure, no test kit or diesel in doorman-app"
    exit "$failed"

# No two sibling modules of a crate may use each other, directly or around a circle (a parent
# and its children may: a module declares its children and they use its items). And the faces
# of doorman-app (FACES below: the Slack-facing server; the operator's HTTP face and, inside it,
# the admin API and the console; the command line) keep their modules to themselves: no module
# outside a face uses one inside it, so faces share only what lives outside them, and reach each
# other only through a face's front door (its mod.rs and what it re-exports). CI runs it with
# check-hexagon.
# Fail on an import circle between the modules of any crate, or a face using another's insides.
check-modules:
    #!/usr/bin/env python3
    import sys
    sys.argv = [sys.argv[0], "crates"]
    """Import circles between sibling modules of each crate: A uses B and B uses A (directly or
    through other siblings). A parent and its children may refer to each other (a module declares
    its children; children use their parent's items): that is not a circle. Then each crate's
    faces: a module inside a face is used only from inside it."""
    import os, re, sys

    # Each crate's faces, as module paths: everything below one is its own.
    # A face may hold faces (operator/ holds api/ and console/): the innermost is listed first,
    # and a module may use anything of a face it is itself inside.
    FACES = {
        "doorman-app": [("slack",), ("operator", "api"), ("operator", "console"), ("operator",), ("cli",)],
    }

    def module_path(src, path):
        rel = os.path.relpath(path, src)[:-3].split(os.sep)
        if rel[-1] in ("mod", "lib", "main"):
            rel = rel[:-1]
        return tuple(rel)

    USE = re.compile(r'\buse\s+((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)*)(?:::\{([^;]*)\})?', re.S)
    PATH = re.compile(r'\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)')

    def load(crate_src):
        mods = {}
        for root, _, files in os.walk(crate_src):
            for f in files:
                if f.endswith(".rs"):
                    p = os.path.join(root, f)
                    text = open(p).read()
                    text = re.sub(r'#\[cfg\(test\)\]\s*mod tests\s*\{.*', '', text, flags=re.S)  # tests may import freely
                    text = re.sub(r'(?m)^\s*//.*$', '', text)  # a comment's link is not a use
                    mods[module_path(crate_src, p)] = (text, os.path.basename(p) in ("mod.rs", "lib.rs", "main.rs"))
        return mods

    def use_trees(text):
        """Every path a `use` of the crate's own modules names, its braces expanded:
        `use crate::a::{b, c::{d as e}}` names crate::a::b and crate::a::c::d."""
        def expand(tree):
            tree = re.sub(r'\s+', '', tree)
            depth, brace = 0, None
            for i, c in enumerate(tree):
                if c == '{' and depth == 0:
                    brace = i
                depth += c == '{'
                depth -= c == '}'
            if brace is None:
                return [tree]
            prefix, inner, parts, depth, part = tree[:brace], tree[brace + 1:-1], [], 0, ""
            for c in inner + ",":
                if c == ',' and depth == 0:
                    if part:
                        parts.append(part)
                    part = ""
                    continue
                depth += c == '{'
                depth -= c == '}'
                part += c
            out = []
            for sub in parts:
                for path in expand(sub):
                    out.append(prefix[:-2] if path == "self" else prefix + path)
            return out
        found = []
        for m in re.finditer(r'\buse\s+((?:crate|super|self)\b[^;]*);', text):
            found.extend(expand(re.sub(r'\s+as\s+[A-Za-z_][A-Za-z0-9_]*', '', m.group(1))))
        return found

    def resolve(mod, path, known):
        """The module a path names (the longest known module it starts with), or None."""
        parts = [p for p in path.split("::") if p]
        if not parts:
            return None
        # `self` is the module itself and `super` its parent, whether it is a file or a folder.
        if parts[0] == "crate":
            target = parts[1:]
        elif parts[0] == "self":
            target = list(mod) + parts[1:]
        elif parts[0] == "super":
            target = list(mod)
            while parts and parts[0] == "super":
                target, parts = target[:-1], parts[1:]
            target = target + parts
        else:
            return None
        t = tuple(target)
        while t and t not in known:
            t = t[:-1]
        return t

    def face_of(mod, faces):
        return next((f for f in faces if mod[: len(f)] == f), None)

    def used(mod, text, known):
        """Every module of the crate that `mod` names: in a `use` (braces expanded) or in a path."""
        paths = use_trees(text) + [m.group(0) for m in re.finditer(r'\b(?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+', text)]
        return {t for t in (resolve(mod, path, known) for path in paths) if t is not None}

    def trespasses(mods, faces):
        """Uses of a module inside a face (not its front door) from outside that face."""
        known, found = set(mods), set()
        for mod, (text, _) in mods.items():
            for t in used(mod, text, known):
                face = face_of(t, faces) if t else None
                if face and t != face and mod[: len(face)] != face:
                    found.add((mod, t))
        return sorted(found)

    def check(crate_src, mods):
        known = set(mods)
        edges = {}
        for mod, (text, _) in mods.items():
            for t in used(mod, text, known):
                if not t or t == mod:
                    continue
                # lowest common ancestor
                i = 0
                while i < min(len(mod), len(t)) and mod[i] == t[i]:
                    i += 1
                if i == len(mod) or i == len(t):
                    continue  # ancestor / descendant
                a, b = mod[: i + 1], t[: i + 1]
                edges.setdefault(a, set()).add(b)
        # cycles
        cycles = []
        def dfs(node, stack, seen):
            for nxt in edges.get(node, ()):
                if nxt in stack:
                    cycles.append(stack[stack.index(nxt):] + [nxt])
                elif nxt not in seen:
                    seen.add(nxt)
                    dfs(nxt, stack + [nxt], seen)
        for start in list(edges):
            dfs(start, [start], {start})
        return {tuple(sorted(set(c))) : c for c in cycles}

    bad = False
    for crate in sorted(os.listdir(sys.argv[1])):
        src = os.path.join(sys.argv[1], crate, "src")
        if not os.path.isdir(src):
            continue
        mods = load(src)
        for key, cycle in check(src, mods).items():
            bad = True
            print(f"{crate}: " + " -> ".join("::".join(m) or "crate" for m in cycle))
        for user, inside in trespasses(mods, FACES.get(crate, [])):
            bad = True
            face = "::".join(face_of(inside, FACES[crate]))
            print(f"{crate}: {'::'.join(user) or 'crate'} uses {'::'.join(inside)}, inside the face {face}"
                  f" (use what the faces share, or what {face}'s front door re-exports)")
    if not bad:
        print("no import circle between sibling modules in any crate; no face uses another's insides")
    sys.exit(1 if bad else 0)

# The database `just migrate` and `just run` use (override with DATABASE_URL).
export DATABASE_URL := env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/doorman")

# Create the database if it does not exist, then apply pending migrations.
migrate: postgres
    #!/usr/bin/env bash
    set -euo pipefail
    name="${DATABASE_URL##*/}"; name="${name%%\?*}"
    server="${DATABASE_URL%/*}/postgres"
    if [ "$(psql "$server" -Atc "SELECT 1 FROM pg_database WHERE datname = '$name'")" != 1 ]; then
        psql "$server" -qc "CREATE DATABASE \"$name\"" && echo "created database $name"
    fi
    cargo run --quiet --locked --bin doorman -- migrate

# Without SLACK_SIGNING_SECRET a development secret is generated once and kept in
# .doorman-dev-secret; without DOORMAN_ENCRYPTION_KEYS a development key is generated once and
# kept in .doorman-dev-encryption-key (both git-ignored). Agents on http and on this machine
# are allowed (DOORMAN_AGENT_ALLOW_PRIVATE=true): never do that in production.
# Run the service locally: PostgreSQL up, database created and migrated, then serve.
run: migrate
    #!/usr/bin/env bash
    set -euo pipefail
    if [ -z "${SLACK_SIGNING_SECRET:-}" ]; then
        secret_file=.doorman-dev-secret
        if [ ! -s "$secret_file" ]; then
            (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$secret_file")
        fi
        SLACK_SIGNING_SECRET="$(cat "$secret_file")"
        export SLACK_SIGNING_SECRET
        echo "SLACK_SIGNING_SECRET is not set: using the development secret kept in $secret_file" >&2
    fi
    if [ -z "${DOORMAN_ENCRYPTION_KEYS:-}" ]; then
        key_file=.doorman-dev-encryption-key
        if [ ! -s "$key_file" ]; then
            (umask 077; printf 'dev:%s' "$(head -c 32 /dev/urandom | base64 -w0)" > "$key_file")
        fi
        DOORMAN_ENCRYPTION_KEYS="$(cat "$key_file")"
        export DOORMAN_ENCRYPTION_KEYS
        echo "DOORMAN_ENCRYPTION_KEYS is not set: using the development key kept in $key_file" >&2
    fi
    export DOORMAN_AGENT_ALLOW_PRIVATE="${DOORMAN_AGENT_ALLOW_PRIVATE:-true}"
    exec cargo run --quiet --locked --bin doorman -- serve

# The adapters' schema tests render the migrated database (as `diesel print-schema` would, and
# as `pg_dump --schema-only` does) and, asked to, write it; they fail while either is stale.
# Regenerate schema.rs and migrations/schema.sql from the migrations.
schema: postgres
    DOORMAN_WRITE_SCHEMA=1 cargo test --locked -p doorman-adapters --test adapters -- pg_schema::schema_rs_matches_the_migrated_database pg_schema::schema_sql_is_what_the_migrations_build

# Where cargo puts release builds: CARGO_TARGET_DIR's when it is set (a worktree's own), else target.
release := env("CARGO_TARGET_DIR", "target") / "release"

# For each configuration: a fresh database, a fresh release `doorman serve`, the load
# generator (20,000 events, 30% re-delivered, 5% commands) and the SQL floor, in one run; then
# the busy shape (64 connections back to back for 8 s, one tenant, an agent that answers at
# once: only 2xx counts). Arguments pass through, e.g. `just bench --concurrency 8,64,256
# --events 5000`, `--shape busy,overload`, `--shape backlog --rounds 5` (the busy load without
# and with 10,000 due redeliveries of a second tenant, side by side).
# Benchmark the acknowledgement path against the PostgreSQL floor.
bench *ARGS: postgres
    cargo build --release --locked -p doorman-app -p doorman-loadgen
    @# Built in one invocation with the load generator, the server must still hold no test kit.
    @if grep -qaiE 'FaultProxy|fault_proxy|FakeAgent|fake_agent|doorman_testkit' {{release}}/doorman; then \
        echo "{{release}}/doorman contains test-kit code" >&2; exit 1; fi
    {{release}}/doorman-loadgen --server {{release}}/doorman {{ARGS}}

# A local Citus cluster (deploy/citus/local-cluster.sh: a coordinator on 5460, workers on 5461 and
# 5462), then the same load on one PostgreSQL and on the cluster, alternately, ROUNDS times each
# (a fresh bench database and server per run; on the cluster `doorman migrate` distributes the
# receipts). The load generator's PostgreSQL CPU counts every postgres process of the machine (on
# the cluster the coordinator's and both workers'); deploy/citus/cpu-by-node.py splits the
# cluster's by node. docs/benchmarks.md has the figures.
# Benchmark one PostgreSQL against a local Citus cluster, side by side.
bench-citus ROUNDS="2" *ARGS: postgres citus
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --release --locked -p doorman-app -p doorman-loadgen
    dir=$(mktemp -d /tmp/doorman-bench-citus.XXXX)
    bash deploy/citus/local-cluster.sh up "$dir" 5460 2 >/dev/null
    trap 'bash deploy/citus/local-cluster.sh down "$dir"' EXIT
    node() { echo "postgres://postgres@127.0.0.1:$1/postgres"; }
    for round in $(seq 1 {{ROUNDS}}); do
        echo "=== round $round: one PostgreSQL (5432)"
        {{release}}/doorman-loadgen --server {{release}}/doorman --edge-seconds 0 {{ARGS}}
        echo "=== round $round: Citus, a coordinator and 2 workers (5460-5462)"
        before=$(python3 deploy/citus/cpu-by-node.py "$dir")
        {{release}}/doorman-loadgen --server {{release}}/doorman --edge-seconds 0 \
            --database-server "$(node 5460)" --citus-workers "$(node 5461),$(node 5462)" {{ARGS}}
        echo "CPU seconds by node over the round (node0 is the coordinator):"
        join <(echo "$before") <(python3 deploy/citus/cpu-by-node.py "$dir") | awk '{ printf "  %s %.2f\n", $1, $3 - $2 }'
    done

# REV's binary (built into target/bench-base) and today's side by side on one PostgreSQL and on a
# local Citus cluster, with the CPU each cluster node used per run (deploy/citus/side-by-side.sh;
# docs/benchmarks.md, "A tenant's writes on its own node").
bench-citus-against REV ROUNDS="2" SHAPES="busy,mixed": postgres citus
    #!/usr/bin/env bash
    set -euo pipefail
    base=target/bench-base
    rm -rf "$base/src" && mkdir -p "$base"
    git worktree add --detach --force "$base/src" "{{REV}}" >/dev/null
    trap 'git worktree remove --force "$base/src"' EXIT
    cargo build --release --locked --manifest-path "$base/src/Cargo.toml" --target-dir "$base/target" -p doorman-app
    cp "$base/target/release/doorman" "$base/doorman"
    cargo build --release --locked -p doorman-app -p doorman-loadgen
    bash deploy/citus/side-by-side.sh "$base/doorman" {{ROUNDS}} {{SHAPES}}

# Builds REV's `doorman` and load generator (a git revision: a commit, a tag, main~3) into
# target/bench-base, runs REV's binary and today's alternately in one run (two rounds each unless
# ARGS say otherwise), then REV's floor with REV's own load generator (the floor runs the
# adapters linked into the load generator, so an earlier revision's floor needs its own).
# Benchmark an earlier revision against today's build, side by side.
bench-against REV *ARGS: postgres
    #!/usr/bin/env bash
    set -euo pipefail
    base=target/bench-base
    rm -rf "$base/src" && mkdir -p "$base"
    git worktree add --detach --force "$base/src" "{{REV}}" >/dev/null
    trap 'git worktree remove --force "$base/src"' EXIT
    cargo build --release --locked --manifest-path "$base/src/Cargo.toml" --target-dir "$base/target" -p doorman-app -p doorman-loadgen
    cp "$base/target/release/doorman" "$base/doorman"
    cp "$base/target/release/doorman-loadgen" "$base/doorman-loadgen"
    just bench --compare "$base/doorman" {{ARGS}}
    echo "== {{REV}}'s floor, measured by {{REV}}'s load generator (after one more run of its binary)"
    # One round of it, so ARGS' own --rounds is left out (the load generator takes it once).
    args=() skip=0
    for arg in {{ARGS}}; do
        if [ "$skip" = 1 ]; then skip=0; continue; fi
        case "$arg" in --rounds) skip=1; continue ;; --rounds=*) continue ;; esac
        args+=("$arg")
    done
    "$base/doorman-loadgen" --server "$base/doorman" --rounds 1 --edge-seconds 0 "${args[@]}"

# The sweep docs/benchmarks.md reports: concurrency 8/64/256 × payload 1 KiB/16 KiB.
bench-sweep: (bench "--concurrency" "8,64,256" "--payload-bytes" "1024,16384")

# Micro-benchmark of Slack verify + parse (1, 4 and 16 KiB events).
bench-micro:
    cargo bench --locked -p doorman-adapters --bench slack

# Not part of CI (about 25 minutes on 2 cores). Every surviving mutant must be
# killed by a new test or listed with why it is equivalent in docs/testing.md.
# Mutation testing of the domain crate and the Slack adapter, with their own tests.
mutants:
    #!/usr/bin/env bash
    set -euo pipefail
    command -v cargo-mutants >/dev/null || cargo install cargo-mutants --locked
    mkdir -p target/mutants
    cargo mutants --package doorman-domain --output target/mutants/domain -- --lib
    cargo mutants --package doorman-adapters --file 'crates/doorman-adapters/src/slack/**' \
        --output target/mutants/slack -- --lib --test adapters slack

# Needs nothing but stable Rust: RUSTC_BOOTSTRAP lets cargo-fuzz use the sanitizer flags.
# Not part of CI. Findings land in fuzz/artifacts/.
# Fuzz Slack verification and parsing with libFuzzer + ASan, SECONDS per target.
fuzz SECONDS="60":
    #!/usr/bin/env bash
    set -euo pipefail
    command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
    for target in verify parse; do
        RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" --fuzz-dir fuzz -- -max_total_time={{SECONDS}}
    done

# What CI runs: the hexagon check, lint, then the tests.
ci: check-hexagon lint test

# `promtool` comes with Debian's `prometheus` package (installed when missing).
# Check the alert rules and run their unit tests (every alert firing and not firing).
alerts:
    #!/usr/bin/env bash
    set -euo pipefail
    if ! command -v promtool >/dev/null; then
        echo "installing promtool (Debian's prometheus package)" >&2
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends prometheus >/dev/null
    fi
    cd deploy/prometheus
    promtool check rules alerts.yml
    promtool test rules alerts.test.yml

# The rolling-deploy test runs the previous release's `doorman serve` and `receipts replay` on
# today's schema. The revision is in deploy/previous-release (update it when a release is
# deployed). Built from a worktree into this target directory (CARGO_TARGET_DIR, else target),
# so the dependencies both share are compiled once, under its own binary name
# (doorman-previous), so it never takes the place of today's binary.
# Build the previous release's doorman (target/debug/doorman-previous).
previous-release:
    #!/usr/bin/env bash
    set -euo pipefail
    rev=$(cat deploy/previous-release)
    out="${CARGO_TARGET_DIR:-target}"
    src=target/previous-release
    if [ -x "$out/debug/doorman-previous" ] && [ "$(cat "$out/previous-release.rev" 2>/dev/null)" = "$rev" ]; then exit 0; fi
    rm -rf "$src" && mkdir -p target "$out"
    git worktree prune
    git worktree add --quiet --detach --force "$src" "$rev"
    trap 'git worktree remove --force "$src"' EXIT
    sed -i 's/^name = "doorman"$/name = "doorman-previous"/' "$src/crates/doorman-app/Cargo.toml"
    cargo build --quiet --locked --manifest-path "$src/Cargo.toml" --target-dir "$out" --bin doorman-previous
    echo "$rev" > "$out/previous-release.rev"

# The pooler test starts Debian's PgBouncer itself (as the postgres user); make sure it is here.
pgbouncer:
    #!/usr/bin/env bash
    set -euo pipefail
    if command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ]; then exit 0; fi
    echo "installing pgbouncer from Debian's packages" >&2
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends pgbouncer >/dev/null

# The error-classification test logs in with German server messages (Debian's PostgreSQL ships
# them, /usr/share/locale/de/LC_MESSAGES/postgres-*.mo; the server needs the locale on its
# machine). Generated as a directory, not into the locale archive: a server already running
# keeps the archive it mapped at start and would not see it there.
# Make sure the de_DE.UTF-8 locale is generated.
locales:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ -d /usr/lib/locale/de_DE.utf8 ]; then exit 0; fi
    if [ ! -f /usr/share/i18n/locales/de_DE ]; then
        echo "installing locales from Debian's packages" >&2
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends locales >/dev/null
    fi
    echo "generating the de_DE.UTF-8 locale" >&2
    localedef --no-archive -i de_DE -c -f UTF-8 de_DE.UTF-8

# Not part of CI. Runs the failover tests RUNS times in a row with stress-ng keeping both cores busy.
failover-stress RUNS="3": postgres
    #!/usr/bin/env bash
    set -euo pipefail
    if ! command -v stress-ng >/dev/null; then
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends stress-ng >/dev/null
    fi
    cargo test --locked -p doorman-app --test e2e --no-run
    stress-ng --cpu 2 --timeout 0 --quiet &
    trap 'kill $!' EXIT
    for run in $(seq 1 {{RUNS}}); do
        echo "run $run of {{RUNS}}" >&2
        cargo test --locked -p doorman-app --test e2e failover -- --nocapture 2>&1 | grep -E 'failover with|promoted|pause applied|test result|panicked'
    done

# The install flow's browser test drives Debian's Chromium through chromium-driver.
# Make sure headless Chromium and its WebDriver are installed (apt on a fresh Debian machine).
browser:
    #!/usr/bin/env bash
    set -euo pipefail
    if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then exit 0; fi
    echo "installing chromium and chromium-driver from Debian's packages" >&2
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium chromium-driver >/dev/null

# The console's accessibility test runs axe-core (from the npm registry) in the same Chromium;
# it reads target/axe/node_modules/axe-core/axe.min.js (or AXE_CORE).
# Make sure axe-core is installed for the console's accessibility test.
axe:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ -f target/axe/node_modules/axe-core/axe.min.js ]; then exit 0; fi
    if ! command -v npm >/dev/null; then
        echo "installing npm from Debian's packages" >&2
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq npm >/dev/null
    fi
    mkdir -p target/axe
    npm install --prefix target/axe --silent --no-audit --no-fund axe-core@4.10.3

# Screenshots of the console's main pages into docs/console/ (docs/console.md shows them):
# the accessibility test, which visits every page in Chromium, saving each as it goes.
# Regenerate the console's screenshots in docs/console/.
console-screenshots: postgres browser axe
    CONSOLE_SCREENSHOTS="$PWD/docs/console" cargo test --locked -p doorman-app --test e2e console::every_console_page -- --nocapture

# Every console page's median and slowest time (21 fetches each, signed in) on a bench database
# of 1,000,000 receipts over 200 tenants (RECEIPTS, TENANTS), with a release `doorman admin serve`
# (deploy/console/page-times.sh).
# Time the console's pages on a bench database.
bench-console ROUNDS="21": postgres
    cargo build --release --locked -p doorman-app
    bash deploy/console/page-times.sh {{ROUNDS}}

# The same pages and searches on a local Citus cluster (a coordinator on 5470, two workers), the
# receipts distributed by `doorman migrate`: what a search by event id costs there (ADR 27).
# Time the console's pages on a bench database on Citus.
bench-console-citus ROUNDS="21": postgres citus
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --release --locked -p doorman-app
    dir=$(mktemp -d /tmp/doorman-console-citus.XXXX)
    bash deploy/citus/local-cluster.sh up "$dir" 5470 2 >/dev/null
    trap 'bash deploy/citus/local-cluster.sh down "$dir"' EXIT
    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5470/doorman bash deploy/console/page-times.sh {{ROUNDS}}

# The Citus tests start their own coordinator and workers from the machine's PostgreSQL 15; this
# builds the extension into it from the vendored source (deploy/citus, a few minutes on two
# cores, needs root for apt-get and make install) and does nothing when it is already there.
# Build and install Citus 13.2.2 into the local PostgreSQL 15 when it is missing.
citus: postgres
    bash deploy/citus/install.sh

# Make sure a local PostgreSQL is up (installs and starts it on a fresh Debian machine).
postgres:
    #!/usr/bin/env bash
    set -euo pipefail
    if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then exit 0; fi
    if ! command -v pg_lsclusters >/dev/null; then
        echo "installing PostgreSQL from Debian's packages" >&2
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq postgresql >/dev/null
        fresh=1
    fi
    version=$(ls /etc/postgresql | sort -V | tail -1)
    if [ "${fresh:-0}" = 1 ]; then
        # Local development and CI only: trust connections from this machine.
        hba=/etc/postgresql/$version/main/pg_hba.conf
        printf 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n' > "$hba"
    fi
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    for _ in $(seq 1 30); do
        pg_isready -q -h 127.0.0.1 -p 5432 && exit 0
        sleep 1
    done
    echo "PostgreSQL did not come up on 127.0.0.1:5432" >&2
    exit 1
