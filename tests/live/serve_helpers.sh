# Sourced by the live-mode shell tests: start_server BIN SCENARIO starts `nvl72emu serve` on free ports
# and sets PORT (HTTP) and SERVER_PID; the server is stopped with SIGTERM on exit.
start_server() {
  local bin=$1 scenario=$2
  LOG=$(mktemp)
  "$bin" serve "$scenario" --http-port 0 --grpc-port -1 --time-scale 4 >"$LOG" 2>&1 &
  SERVER_PID=$!
  trap 'kill -TERM $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null; rm -f "$LOG"' EXIT
  for _ in $(seq 1 300); do
    PORT=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\).*|\1|p' "$LOG")
    [ -n "$PORT" ] && return 0
    kill -0 $SERVER_PID 2>/dev/null || { echo "server exited:"; cat "$LOG"; exit 1; }
    sleep 0.1
  done
  echo "server did not start:"; cat "$LOG"; exit 1
}

stop_server() {
  kill -TERM $SERVER_PID
  wait $SERVER_PID
  local rc=$?
  trap - EXIT
  grep -q "stopping (signal 15)" "$LOG" || { echo "no clean stop:"; cat "$LOG"; exit 1; }
  rm -f "$LOG"
  return $rc
}
