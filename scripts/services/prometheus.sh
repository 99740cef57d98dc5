# Prometheus for the metrics tests: a real server scrapes `lucille run` and a Kafka worker.
# Sourced by scripts/test.sh (set -euo pipefail); can also be sourced by hand:
# `source scripts/services/prometheus.sh`.
#
# Idempotent: installs Debian's prometheus package if missing (its `promtool` checks the
# exposition too), starts a server of its own (not the Debian system service) on 127.0.0.1
# port $LUCILLE_TEST_PROMETHEUS_PORT (default 19090) with its data in
# $LUCILLE_TEST_PROMETHEUS_DIR (default /tmp/lucille-test-prometheus), scraping every second
# the targets listed in the JSON files of its targets/ folder (file service discovery: a test
# writes a file naming its process's endpoint and a job label of its own), waits until it is
# ready, and exports LUCILLE_TEST_PROMETHEUS=http://127.0.0.1:PORT and
# LUCILLE_TEST_PROMETHEUS_TARGETS=<the targets folder>. A server already ready there is
# reused. Stop it with: kill "$(cat /tmp/lucille-test-prometheus/pid)".

_lucille_prometheus_main() {
    local dir="${LUCILLE_TEST_PROMETHEUS_DIR:-/tmp/lucille-test-prometheus}"
    local port="${LUCILLE_TEST_PROMETHEUS_PORT:-19090}"
    local i

    _lucille_prometheus_ready() {
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || return 1
        "$PYTHON" - "$port" <<'PY' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/-/ready", timeout=5) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
    }

    if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
        echo "prometheus.sh: installing Prometheus from Debian"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
    fi
    mkdir -p "$dir/data" "$dir/targets"
    if ! _lucille_prometheus_ready; then
        cat >"$dir/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: lucille-tests
    file_sd_configs:
      - files: ["$dir/targets/*.json"]
        refresh_interval: 1s
EOF
        if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "prometheus.sh: port $port is taken by something that is not Prometheus" >&2
            return 1
        fi
        nohup prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
            --web.listen-address="127.0.0.1:$port" --storage.tsdb.retention.time=1d \
            >"$dir/stdout.log" 2>&1 &
        echo $! >"$dir/pid"
        for i in $(seq 1 60); do
            _lucille_prometheus_ready && break
            sleep 0.5
        done
        if ! _lucille_prometheus_ready; then
            echo "prometheus.sh: Prometheus was not ready on 127.0.0.1:$port; log: $dir/stdout.log" >&2
            tail -n 20 "$dir/stdout.log" >&2 || true
            return 1
        fi
    fi
    export LUCILLE_TEST_PROMETHEUS="http://127.0.0.1:$port"
    export LUCILLE_TEST_PROMETHEUS_TARGETS="$dir/targets"
    echo "prometheus.sh: $LUCILLE_TEST_PROMETHEUS"
}

_lucille_prometheus_main
unset -f _lucille_prometheus_main _lucille_prometheus_ready
