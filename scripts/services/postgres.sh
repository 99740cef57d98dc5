# PostgreSQL for the DatabaseConnector tests. Sourced by scripts/test.sh (set -euo pipefail);
# can also be sourced by hand: `source scripts/services/postgres.sh`.
#
# Idempotent: installs the server from Debian if missing, initialises a throwaway cluster in
# $LUCILLE_TEST_POSTGRES_DIR (default /tmp/lucille-test-postgres), starts it on 127.0.0.1 (port
# 54329, or the next free one), creates the role lucille/lucille and the database lucille_test,
# and exports LUCILLE_TEST_POSTGRES_URL. A cluster already running there is reused at once.
# Stop it with: pg_ctl -D /tmp/lucille-test-postgres stop (as the postgres user when root).

_lucille_pg_main() {
    local dir="${LUCILLE_TEST_POSTGRES_DIR:-/tmp/lucille-test-postgres}"
    local port="${LUCILLE_TEST_POSTGRES_PORT:-54329}"
    local bindir="" as_owner=() v

    _lucille_pg_bindir() {
        local d
        for d in /usr/lib/postgresql/*/bin; do
            [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && bindir="$d"
        done
        [ -n "$bindir" ]
    }
    if ! _lucille_pg_bindir; then
        echo "postgres.sh: installing PostgreSQL from Debian"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
        _lucille_pg_bindir || { echo "postgres.sh: no initdb after installing postgresql" >&2; return 1; }
    fi

    # The server refuses to run as root: run the cluster as the postgres user then.
    if [ "$(id -u)" = "0" ]; then
        id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
        as_owner=(runuser -u postgres --)
    fi

    if [ -f "$dir/port" ] && "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        port="$(cat "$dir/port")"
    else
        mkdir -p "$dir"
        [ "$(id -u)" = "0" ] && chown postgres "$dir"
        if [ ! -f "$dir/data/PG_VERSION" ]; then
            "${as_owner[@]}" "$bindir/initdb" -D "$dir/data" -U postgres -E UTF8 --no-sync \
                --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 \
                || { cat "$dir/initdb.log" >&2; return 1; }
        fi
        # A port held by another process: take the next free one.
        local tries=0
        while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
            port=$((port + 1)); tries=$((tries + 1))
            [ "$tries" -lt 50 ] || { echo "postgres.sh: no free port" >&2; return 1; }
        done
        "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
            -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null \
            || { tail -n 30 "$dir/server.log" >&2; return 1; }
        echo "$port" >"$dir/port"
    fi

    local admin=("${as_owner[@]}" "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d postgres)
    for v in 1 2 3 4 5 6 7 8 9 10; do
        "${admin[@]}" -c 'select 1' >/dev/null 2>&1 && break
        sleep 0.5
    done
    if [ "$("${admin[@]}" -tAc "select 1 from pg_roles where rolname = 'lucille'")" != "1" ]; then
        "${admin[@]}" -c "create role lucille login password 'lucille'"
    fi
    if [ "$("${admin[@]}" -tAc "select 1 from pg_database where datname = 'lucille_test'")" != "1" ]; then
        "${admin[@]}" -c "create database lucille_test owner lucille"
    fi
    export LUCILLE_TEST_POSTGRES_URL="postgresql://lucille:lucille@127.0.0.1:$port/lucille_test"
    echo "postgres.sh: $LUCILLE_TEST_POSTGRES_URL"
}

_lucille_pg_main
unset -f _lucille_pg_main _lucille_pg_bindir
