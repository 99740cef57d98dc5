# An S3-API server for the FileConnector's cloud storage tests (sourced by scripts/test.sh with
# PYTHON set; can also be sourced by hand). Installs moto[server] from PyPI into that Python when
# missing, starts `moto_server` on 127.0.0.1 (port 45679) in the background unless one already
# answers there, waits until it does, and exports LUCILLE_TEST_S3_ENDPOINT. moto keeps its
# buckets in memory: tests create their own uniquely named buckets. Idempotent.
# Stop it with: kill "$(cat /tmp/lucille-s3-45679/pid)"

_s3_python="${PYTHON:-python3}"
_s3_port="${LUCILLE_S3_PORT:-45679}"
_s3_url="http://127.0.0.1:${_s3_port}"
_s3_dir="${TMPDIR:-/tmp}/lucille-s3-${_s3_port}"

_s3_up() {
    "$_s3_python" - "$_s3_url" <<'PY'
import sys, urllib.request
try:
    # moto answers ListBuckets without a signature.
    with urllib.request.urlopen(sys.argv[1] + "/", timeout=2) as r:
        sys.exit(0 if b"ListAllMyBucketsResult" in r.read() else 1)
except Exception:
    sys.exit(1)
PY
}

if ! _s3_up; then
    "$_s3_python" -c 'import moto.server, flask_cors' 2>/dev/null \
        || "$_s3_python" -m pip install -q "moto[server]"
    mkdir -p "$_s3_dir"
    nohup "$_s3_python" -m moto.server -H 127.0.0.1 -p "$_s3_port" >"$_s3_dir/server.log" 2>&1 &
    echo $! >"$_s3_dir/pid"
    for _s3_i in $(seq 1 60); do
        _s3_up && break
        sleep 0.5
    done
    if ! _s3_up; then
        echo "moto_server did not answer on ${_s3_url}; log: ${_s3_dir}/server.log" >&2
        tail -n 20 "$_s3_dir/server.log" >&2 || true
    fi
fi

if _s3_up; then
    export LUCILLE_TEST_S3_ENDPOINT="$_s3_url"
    echo "s3 (moto) ready at ${_s3_url}"
fi
unset -f _s3_up
