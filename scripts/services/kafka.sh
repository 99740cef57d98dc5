# A Kafka-compatible broker for the distributed-mode tests: tansu (crates.io; Apache Kafka
# cannot be installed from the registries here), in memory. Sourced by scripts/test.sh
# (set -euo pipefail); can also be sourced by hand: `source scripts/services/kafka.sh`.
#
# Idempotent: installs tansu with cargo if missing (`--features dynostore`: the default build
# cannot run the in-memory storage engine; ~16-30 min on 2 cores), starts it on 127.0.0.1
# (port 19092, or the next free one) unless one started by this script still answers, waits
# until it accepts connections, and exports LUCILLE_TEST_KAFKA_BOOTSTRAP.
# Stop it with: kill "$(cat /tmp/lucille-test-kafka/pid)"

_lucille_kafka_main() {
    local dir="${LUCILLE_TEST_KAFKA_DIR:-/tmp/lucille-test-kafka}"
    local port="${LUCILLE_TEST_KAFKA_PORT:-19092}"
    local tansu="${CARGO_HOME:-$HOME/.cargo}/bin/tansu"
    command -v tansu >/dev/null 2>&1 && tansu="$(command -v tansu)"
    if [ ! -x "$tansu" ]; then
        echo "kafka.sh: installing tansu (cargo install tansu --locked --features dynostore)"
        cargo install tansu --locked --features dynostore >"${TMPDIR:-/tmp}/tansu-install.log" 2>&1 \
            || { tail -n 30 "${TMPDIR:-/tmp}/tansu-install.log" >&2; return 1; }
    fi
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
        nohup "$tansu" broker \
            --listener-url "tcp://127.0.0.1:$port" \
            --advertised-listener-url "tcp://127.0.0.1:$port" \
            --storage-engine "memory://tansu/" >"$dir/broker.log" 2>&1 &
        echo $! >"$dir/pid"
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
    echo "kafka.sh: $LUCILLE_TEST_KAFKA_BOOTSTRAP"
}

_lucille_kafka_main
unset -f _lucille_kafka_main
