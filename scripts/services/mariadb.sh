# MariaDB for the DatabaseConnector / QueryDatabase MySQL-protocol tests. Sourced by
# scripts/test.sh (set -euo pipefail); can also be sourced by hand:
# `source scripts/services/mariadb.sh`.
#
# Idempotent: installs the server from Debian if missing, initialises a throwaway datadir in
# $LUCILLE_TEST_MARIADB_DIR (default /tmp/lucille-test-mariadb), starts mariadbd on 127.0.0.1
# (port 33069, or the next free one; no networking beyond loopback), creates the user
# lucille/lucille and the database lucille_test, and exports LUCILLE_TEST_MARIADB_URL
# (mysql://lucille:lucille@127.0.0.1:PORT/lucille_test). A server already running there is
# reused at once. Stop it with: kill "$(cat /tmp/lucille-test-mariadb/mariadbd.pid)".

_lucille_mariadb_main() {
    local dir="${LUCILLE_TEST_MARIADB_DIR:-/tmp/lucille-test-mariadb}"
    local port="${LUCILLE_TEST_MARIADB_PORT:-33069}"
    local server="" install_db="" client="" as_owner=() v

    _lucille_mariadb_find() {
        server="$(command -v mariadbd || true)"
        [ -n "$server" ] || { [ -x /usr/sbin/mariadbd ] && server=/usr/sbin/mariadbd; }
        install_db="$(command -v mariadb-install-db || command -v mysql_install_db || true)"
        client="$(command -v mariadb || command -v mysql || true)"
        [ -n "$server" ] && [ -n "$install_db" ] && [ -n "$client" ]
    }
    if ! _lucille_mariadb_find; then
        echo "mariadb.sh: installing MariaDB from Debian"
        apt-get update -qq
        # policy-rc.d / no init system: the package's own service does not start here.
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server mariadb-client >/dev/null
        _lucille_mariadb_find || { echo "mariadb.sh: no mariadbd after installing mariadb-server" >&2; return 1; }
    fi

    # mariadbd refuses to run as root unless told to: run it as the mysql user then.
    local user_opt=()
    if [ "$(id -u)" = "0" ]; then
        id mysql >/dev/null 2>&1 || useradd --system --home-dir /nonexistent mysql
        as_owner=(runuser -u mysql --)
        user_opt=(--user=mysql)
    fi

    local sock="$dir/mariadbd.sock"
    local admin=("$client" --no-defaults -uroot --socket="$sock")
    if [ -f "$dir/port" ] && [ -S "$sock" ] && "${admin[@]}" -e 'select 1' >/dev/null 2>&1; then
        port="$(cat "$dir/port")"
    else
        mkdir -p "$dir"
        [ "$(id -u)" = "0" ] && chown mysql "$dir"
        if [ ! -d "$dir/data/mysql" ]; then
            "${as_owner[@]}" "$install_db" --no-defaults --datadir="$dir/data" \
                --auth-root-authentication-method=socket --skip-test-db "${user_opt[@]}" \
                >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; return 1; }
        fi
        # A port held by another process: take the next free one.
        local tries=0
        while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
            port=$((port + 1)); tries=$((tries + 1))
            [ "$tries" -lt 50 ] || { echo "mariadb.sh: no free port" >&2; return 1; }
        done
        # Started in the background (no init system); setsid so it outlives the sourcing shell.
        setsid "${as_owner[@]}" "$server" --no-defaults --datadir="$dir/data" \
            --bind-address=127.0.0.1 --port="$port" --socket="$sock" \
            --pid-file="$dir/mariadbd.pid" --log-error="$dir/server.log" \
            --skip-name-resolve --innodb-buffer-pool-size=64M --innodb-log-file-size=16M \
            --innodb-flush-log-at-trx-commit=0 --performance-schema=OFF \
            --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
            </dev/null >/dev/null 2>&1 &
        for v in $(seq 1 120); do
            "${admin[@]}" -e 'select 1' >/dev/null 2>&1 && break
            sleep 0.5
        done
        "${admin[@]}" -e 'select 1' >/dev/null 2>&1 \
            || { echo "mariadb.sh: the server did not start" >&2; tail -n 30 "$dir/server.log" >&2; return 1; }
        echo "$port" >"$dir/port"
    fi

    "${admin[@]}" -e "CREATE DATABASE IF NOT EXISTS lucille_test CHARACTER SET utf8mb4;
        CREATE USER IF NOT EXISTS 'lucille'@'127.0.0.1' IDENTIFIED BY 'lucille';
        CREATE USER IF NOT EXISTS 'lucille'@'localhost' IDENTIFIED BY 'lucille';
        GRANT ALL PRIVILEGES ON lucille_test.* TO 'lucille'@'127.0.0.1';
        GRANT ALL PRIVILEGES ON lucille_test.* TO 'lucille'@'localhost';" \
        || { echo "mariadb.sh: cannot create the test database and user" >&2; return 1; }
    export LUCILLE_TEST_MARIADB_URL="mysql://lucille:lucille@127.0.0.1:$port/lucille_test"
    echo "mariadb.sh: $LUCILLE_TEST_MARIADB_URL"
}

_lucille_mariadb_main
unset -f _lucille_mariadb_main _lucille_mariadb_find
