#!/usr/bin/env bash
# A ClickHouse HTTP interface on 127.0.0.1:8123 for the distributed-mode tests, built only from what
# the machine already has (no Docker, no download): the ClickHouse engine inside chDB's libchdb.so
# (installed by npm with the chdb package) runs as clickhouse-local in a process of its own, started
# by a small C launcher compiled here with the system C compiler (scripts/clickhouse-server/launcher.c),
# with a query that starts ClickHouse's HTTP listener (SYSTEM START LISTEN HTTP) and then sleeps for
# as long as the process lives. Its pid, log, config and data live under .clickhouse/.
#
# This is NOT clickhouse-server: it is clickhouse-local's engine behind ClickHouse's real HTTP
# handler (same SQL, settings, readonly and grants), with no server configuration of its own beyond
# what is written here: a users.xml with a password-less `default` user (loopback only, full
# rights, for the tests' setup) and the repository's read-only analyst user
# (deploy/clickhouse/users.d/analyst.xml, with deploy/clickhouse/config.d/). One known difference:
# clickhouse-local does not confine the file() function to user_files_path, as a server does.
# Production and docker-compose.yml run clickhouse-server.
#
#   scripts/clickhouse-server.sh start    build the launcher if needed, start, wait until /ping answers
#   scripts/clickhouse-server.sh stop     stop the process this script started (pid file)
#   scripts/clickhouse-server.sh status   exit 0 when running (prints pid and port), 3 when not
#
# Environment (all optional):
#   CLICKHOUSE_HTTP_PORT          HTTP port (default 8123)
#   CLICKHOUSE_DATA_DIR           launcher, config, data, pid and log (default <repo>/.clickhouse)
#   CLICKHOUSE_ANALYST_PASSWORD   the analyst user's password (default analyst, as in docker-compose.yml)
#   CLICKHOUSE_START_TIMEOUT      seconds to wait for /ping (default 60)
#   CHDB_LIB                      the libchdb.so to run (default: the one under node_modules/@chdb/)
#   CC                            the C compiler (default cc)
set -euo pipefail
# shellcheck source=lib/stop-process.sh
. "$(dirname "$0")/lib/stop-process.sh"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOST=127.0.0.1
PORT="${CLICKHOUSE_HTTP_PORT:-8123}"
STATE="${CLICKHOUSE_DATA_DIR:-$ROOT/.clickhouse}"
START_TIMEOUT="${CLICKHOUSE_START_TIMEOUT:-60}"
CC="${CC:-cc}"
SOURCE="$ROOT/scripts/clickhouse-server/launcher.c"
LAUNCHER="$STATE/bin/clickhouse-local-launcher"
CONF="$STATE/config"
DATA="$STATE/data"
PID_FILE="$STATE/server.pid"
LOG_FILE="$STATE/server.log"
# Runs until the process is stopped: one row a second, discarded.
KEEP_SERVING="SYSTEM START LISTEN HTTP; SELECT sleepEachRow(1) FROM system.numbers SETTINGS max_block_size = 1 FORMAT Null"

say() { echo "clickhouse-server: $*"; }
die() { echo "clickhouse-server: $*" >&2; exit 1; }

log_tail() {
  if [ -s "$LOG_FILE" ]; then
    echo "---- last 40 lines of $LOG_FILE ----" >&2
    tail -n 40 "$LOG_FILE" >&2
    echo "----" >&2
  fi
}

# The pid in the pid file when that process is alive and is this data directory's launcher (guards
# against pid reuse), whatever port it was started on: a stop with another CLICKHOUSE_HTTP_PORT
# still finds it instead of forgetting it.
server_pid() {
  [ -f "$PID_FILE" ] || return 1
  local pid
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" | head -n1 | grep -qxF -- "$LAUNCHER" || return 1
  echo "$pid"
}

# The HTTP port a running server of ours was started with.
server_port() {
  tr '\0' '\n' <"/proc/$1/cmdline" | sed -n 's/^--http_port=//p' | head -n1
}

port_open() {
  timeout 2 bash -c "exec 3<>/dev/tcp/$HOST/$PORT" 2>/dev/null
}

# GET /ping over bash's /dev/tcp (no curl needed): ClickHouse answers "Ok.".
ping_ok() {
  local answer
  answer="$(timeout 3 bash -c "exec 3<>/dev/tcp/$HOST/$PORT && printf 'GET /ping HTTP/1.0\r\nHost: $HOST\r\n\r\n' >&3 && cat <&3" 2>/dev/null)" || return 1
  [[ "$answer" == *"Ok."* ]]
}

find_lib() {
  if [ -n "${CHDB_LIB:-}" ]; then
    [ -f "$CHDB_LIB" ] || die "CHDB_LIB=$CHDB_LIB does not exist"
    echo "$CHDB_LIB"
    return
  fi
  local lib
  lib="$(ls "$ROOT"/node_modules/@chdb/lib-*/libchdb.so 2>/dev/null | head -n1 || true)"
  [ -n "$lib" ] || die "no libchdb.so under $ROOT/node_modules/@chdb/ (run npm ci first, or set CHDB_LIB)"
  echo "$lib"
}

# Compiled once per source and library: a stamp holds the source's checksum and the library path.
build_launcher() {
  local lib="$1" lib_dir want
  lib_dir="$(dirname "$lib")"
  want="$(sha256sum "$SOURCE" | cut -d' ' -f1) $lib"
  if [ -x "$LAUNCHER" ] && [ "$(cat "$LAUNCHER.stamp" 2>/dev/null)" = "$want" ]; then
    return
  fi
  command -v "$CC" >/dev/null || die "no C compiler ($CC) to build the launcher"
  mkdir -p "$(dirname "$LAUNCHER")"
  "$CC" -O2 -Wall -o "$LAUNCHER.tmp" "$SOURCE" -L"$lib_dir" -lchdb -Wl,-rpath,"$lib_dir" >&2 || die "could not build the launcher from $SOURCE"
  mv -f "$LAUNCHER.tmp" "$LAUNCHER"
  echo "$want" >"$LAUNCHER.stamp"
  say "built $LAUNCHER against $lib"
}

write_config() {
  mkdir -p "$CONF/config.d" "$CONF/users.d" "$DATA" "$STATE/user_files"
  cat >"$CONF/config.xml" <<EOF
<!-- Written by scripts/clickhouse-server.sh (clickhouse-local serving HTTP, not clickhouse-server). -->
<clickhouse>
  <users_config>users.xml</users_config>
  <user_files_path>$STATE/user_files/</user_files_path>
</clickhouse>
EOF
  cat >"$CONF/users.xml" <<'EOF'
<!-- Written by scripts/clickhouse-server.sh: the tests' setup user; the analyst user is in users.d/. -->
<clickhouse>
  <profiles><default/></profiles>
  <quotas><default/></quotas>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
</clickhouse>
EOF
  # The production files, copied at each start so that the server runs what the repository says.
  rm -f "$CONF/config.d/"*.xml "$CONF/users.d/"*.xml
  cp "$ROOT"/deploy/clickhouse/config.d/*.xml "$CONF/config.d/"
  cp "$ROOT"/deploy/clickhouse/users.d/*.xml "$CONF/users.d/"
}

start() {
  local pid
  if pid="$(server_pid)"; then
    local running_port
    running_port="$(server_port "$pid")"
    [ "$running_port" = "$PORT" ] || die "already running (pid $pid) from $STATE on port $running_port, not $PORT: stop it first"
    say "already running (pid $pid) on $HOST:$PORT"
    return
  fi
  rm -f "$PID_FILE"
  if port_open; then
    die "$HOST:$PORT is already in use by a process this script did not start (see: ss -ltnp)"
  fi
  local lib
  lib="$(find_lib)"
  build_launcher "$lib"
  write_config

  [ -f "$LOG_FILE" ] && mv -f "$LOG_FILE" "$LOG_FILE.1"
  say "starting clickhouse-local (libchdb) serving HTTP on $HOST:$PORT (log: $LOG_FILE)"
  local started=$SECONDS
  # setsid: the server outlives this shell and is not hit by a Ctrl-C aimed at the caller.
  CLICKHOUSE_ANALYST_PASSWORD="${CLICKHOUSE_ANALYST_PASSWORD:-analyst}" setsid "$LAUNCHER" \
    --config-file="$CONF/config.xml" --path="$DATA/" \
    --listen_host="$HOST" --http_port="$PORT" \
    --query "$KEEP_SERVING" >"$LOG_FILE" 2>&1 </dev/null 9>&- &
  echo $! >"$PID_FILE"
  if ! server_pid >/dev/null; then
    sleep 1
    server_pid >/dev/null || { log_tail; rm -f "$PID_FILE"; die "the server process exited at once"; }
  fi
  local deadline=$((SECONDS + START_TIMEOUT))
  until ping_ok; do
    server_pid >/dev/null || { log_tail; rm -f "$PID_FILE"; die "the server exited during startup"; }
    [ "$SECONDS" -lt "$deadline" ] || { log_tail; stop >&2; die "no answer on http://$HOST:$PORT/ping after ${START_TIMEOUT}s"; }
    sleep 0.5
  done
  say "started in $((SECONDS - started))s (pid $(cat "$PID_FILE")): http://$HOST:$PORT"
}

stop() {
  local pid
  if ! pid="$(server_pid)"; then
    rm -f "$PID_FILE"
    say "not running"
    return
  fi
  stop_process "$pid" 30
  rm -f "$PID_FILE"
  say "stopped"
}

status() {
  local pid
  if pid="$(server_pid)"; then
    say "running (pid $pid) on http://$HOST:$(server_port "$pid"), data $DATA, log $LOG_FILE"
    return 0
  fi
  say "not running"
  return 3
}

cmd="${1:-}"
case "$cmd" in
  start | stop)
    mkdir -p "$STATE"
    # One start/stop at a time (two CI steps, or a developer and a test run).
    exec 9>"$STATE/lock"
    flock -w 120 9 || die "another clickhouse-server.sh held $STATE/lock for 120s"
    "$cmd"
    ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
