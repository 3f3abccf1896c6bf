# Sourced by the service launchers (kafka-broker.sh, clickhouse-server.sh), which define say and die.
# stop_process PID GRACE: SIGTERM, up to GRACE seconds to exit, then SIGKILL; dies if it survives.
stop_process() {
  local pid=$1 grace=$2
  say "stopping pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 "$grace"); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "still alive after ${grace}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 10); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  fi
  if kill -0 "$pid" 2>/dev/null; then die "pid $pid did not exit"; fi
}
