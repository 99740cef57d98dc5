# ZooKeeper for the SolrCloud discovery tests (the Solr indexer and connector's zkHosts).
# Sourced by scripts/test.sh (set -euo pipefail); can also be sourced by hand:
# `source scripts/services/zookeeper.sh`.
#
# Idempotent: installs Debian's zookeeper package if missing (it needs a JRE, which it pulls),
# starts a standalone server of its own (not the Debian system service) on 127.0.0.1 port
# $LUCILLE_TEST_ZK_PORT (default 21810) with its zoo.cfg and dataDir in
# $LUCILLE_TEST_ZK_DIR (default /tmp/lucille-test-zookeeper), waits until it answers a client
# request, and exports LUCILLE_TEST_ZK=127.0.0.1:PORT. A server already answering there is
# reused at once. Stop it with: kill "$(cat /tmp/lucille-test-zookeeper/pid)".

_lucille_zk_main() {
    local dir="${LUCILLE_TEST_ZK_DIR:-/tmp/lucille-test-zookeeper}"
    local port="${LUCILLE_TEST_ZK_PORT:-21810}"
    local jar=/usr/share/java/zookeeper.jar i

    # A client request (create a session, read /): the four-letter words may be disabled.
    _lucille_zk_answers() {
        [ -x "$dir/cli" ] || return 1
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || return 1
        timeout 20 "$dir/cli" -server "127.0.0.1:$port" ls / 2>/dev/null | grep -q zookeeper
    }

    if [ ! -f "$jar" ] || ! command -v java >/dev/null 2>&1; then
        echo "zookeeper.sh: installing ZooKeeper from Debian"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zookeeper >/dev/null
        [ -f "$jar" ] || { echo "zookeeper.sh: no $jar after installing zookeeper" >&2; return 1; }
    fi
    mkdir -p "$dir/data" "$dir/conf"
    # zkCli.sh reads Debian's environment; a wrapper of our own keeps the system config out.
    cat >"$dir/cli" <<EOF
#!/bin/sh
exec java -cp "$dir/conf:$jar" -Dzookeeper.log.dir="$dir" org.apache.zookeeper.ZooKeeperMain "\$@"
EOF
    chmod +x "$dir/cli"

    if ! _lucille_zk_answers; then
        cat >"$dir/conf/zoo.cfg" <<EOF
tickTime=2000
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
EOF
        printf 'log4j.rootLogger=WARN, F\nlog4j.appender.F=org.apache.log4j.FileAppender\nlog4j.appender.F.File=%s/server.log\nlog4j.appender.F.layout=org.apache.log4j.PatternLayout\nlog4j.appender.F.layout.ConversionPattern=%%d %%p %%c{1}: %%m%%n\n' "$dir" >"$dir/conf/log4j.properties"
        if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "zookeeper.sh: port $port is taken by something that is not ZooKeeper" >&2
            return 1
        fi
        nohup java -Xmx256m -cp "$dir/conf:$jar" -Dzookeeper.log.dir="$dir" \
            org.apache.zookeeper.server.ZooKeeperServerMain "$dir/conf/zoo.cfg" \
            >"$dir/stdout.log" 2>&1 &
        echo $! >"$dir/pid"
        for i in $(seq 1 60); do
            _lucille_zk_answers && break
            sleep 0.5
        done
        if ! _lucille_zk_answers; then
            echo "zookeeper.sh: ZooKeeper did not answer on 127.0.0.1:$port; log: $dir/stdout.log" >&2
            tail -n 20 "$dir/stdout.log" >&2 || true
            return 1
        fi
    fi
    export LUCILLE_TEST_ZK="127.0.0.1:$port"
    echo "zookeeper.sh: $LUCILLE_TEST_ZK"
}

_lucille_zk_main
unset -f _lucille_zk_main _lucille_zk_answers
