# A Kafka-compatible broker for the distributed-mode tests: tansu (crates.io; Apache Kafka
# cannot be installed from the registries here). Sourced by scripts/test.sh
# (set -euo pipefail); can also be sourced by hand: `source scripts/services/kafka.sh`.
#
# Storage engine: SQLite (`sqlite://`, tansu's `libsql` feature), in a throwaway folder. Not
# tansu's in-memory engine: that one (and its S3 engine, the same code) answers a fetch whose
# offset falls inside a record batch with the batches that start after it, so a consumer that
# resumes from a committed offset in the middle of a batch (what every crash with commits
# behind it does) silently skips the rest of that batch. The SQLite and PostgreSQL engines
# store records one by one and serve any offset, as Kafka does
# (tests/python/test_at_least_once.py checks the SQLite and memory engines with a plain client).
#
# Idempotent: installs tansu 0.6.0 with cargo if missing, of another version, or built without
# the engines the tests use
# (`--features dynostore,libsql`: libsql for the SQLite engine, dynostore for the in-memory
# engine the broker test shows the bug on; ~20-30 min on 2 cores), starts it on 127.0.0.1
# (port 19092, or the next free one) unless one started by this script still answers, waits
# until it accepts connections, and exports LUCILLE_TEST_KAFKA_BOOTSTRAP and
# LUCILLE_TEST_TANSU (the binary, for tests that start a broker of their own).
# Stop it with: kill "$(cat /tmp/lucille-test-kafka/pid)"

_lucille_kafka_main() {
    local dir="${LUCILLE_TEST_KAFKA_DIR:-/tmp/lucille-test-kafka}"
    local port="${LUCILLE_TEST_KAFKA_PORT:-19092}"
    local features="dynostore,libsql"
    # Pinned: the tests pin this version's behaviour (its memory engine's fetch bug, its group
    # coordinator's handling of a SIGKILLed member; README).
    local version="0.6.0"
    local tansu="${CARGO_HOME:-$HOME/.cargo}/bin/tansu"
    command -v tansu >/dev/null 2>&1 && tansu="$(command -v tansu)"

    # Whether this tansu binary was built with the storage engines the tests use: its start
    # banner lists them ("storage: URL [engines]"), printed before it binds, so an address
    # that cannot be bound (TEST-NET-1) ends the probe at once.
    _lucille_tansu_has_engines() {
        [ -x "$tansu" ] || return 1
        local banner
        banner="$(timeout 10 "$tansu" broker --listener-url tcp://192.0.2.1:9 \
            --advertised-listener-url tcp://192.0.2.1:9 --storage-engine "memory://probe/" 2>&1 \
            | grep -m1 '^storage:' || true)"
        [[ "$banner" == *'"libsql"'* && "$banner" == *'"dynostore"'* ]] \
            && [ "$("$tansu" --version 2>/dev/null)" = "tansu $version" ]
    }
    if ! _lucille_tansu_has_engines; then
        echo "kafka.sh: installing tansu $version (cargo install, --features $features)"
        cargo install tansu --version "$version" --locked --force --features "$features" \
            >"${TMPDIR:-/tmp}/tansu-install.log" 2>&1 \
            || { tail -n 30 "${TMPDIR:-/tmp}/tansu-install.log" >&2; return 1; }
        tansu="${CARGO_HOME:-$HOME/.cargo}/bin/tansu"
        _lucille_tansu_has_engines \
            || { echo "kafka.sh: $tansu is not tansu $version with the $features engines after installing" >&2; return 1; }
    fi
    export LUCILLE_TEST_TANSU="$tansu"
    mkdir -p "$dir"
    if [ -f "$dir/pid" ] && [ -f "$dir/port" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null \
        && (echo >"/dev/tcp/127.0.0.1/$(cat "$dir/port")") 2>/dev/null; then
        port="$(cat "$dir/port")"
    else
        local tries=0
        while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
            port=$((port + 1)); tries=$((tries + 1))
            [ "$tries" -lt 50 ] || { echo "kafka.sh: no free port" >&2; return 1; }
        done
        # A fresh store each start: topics and groups of earlier runs would only slow it.
        rm -rf "$dir/store"
        mkdir -p "$dir/store"
        # tansu resolves the URL's path against its working directory.
        (cd "$dir" && nohup "$tansu" broker \
            --listener-url "tcp://127.0.0.1:$port" \
            --advertised-listener-url "tcp://127.0.0.1:$port" \
            --storage-engine "sqlite://store/tansu.db" >"$dir/broker.log" 2>&1 &
         echo $! >"$dir/pid")
        echo "$port" >"$dir/port"
        local v
        for v in $(seq 1 100); do
            (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
            kill -0 "$(cat "$dir/pid")" 2>/dev/null || { tail -n 30 "$dir/broker.log" >&2; return 1; }
            sleep 0.2
        done
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null \
            || { echo "kafka.sh: tansu did not answer on $port" >&2; tail -n 30 "$dir/broker.log" >&2; return 1; }
    fi
    export LUCILLE_TEST_KAFKA_BOOTSTRAP="127.0.0.1:$port"
    echo "kafka.sh: $LUCILLE_TEST_KAFKA_BOOTSTRAP (tansu, SQLite engine)"
}

_lucille_kafka_main
unset -f _lucille_kafka_main _lucille_tansu_has_engines
