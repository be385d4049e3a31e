#!/usr/bin/env bash
# Bad input to `nvl72emu serve` is one line and exit 2: a missing scenario, a bad time scale, a port in use
# (the server's, a DP-rank worker's, a KV event stream's).
set -uo pipefail
bin=$1 scenario=$2
expect_2() {
  local what=$1; shift
  local out rc
  out=$("$@" 2>&1); rc=$?
  [ "$rc" = 2 ] || { echo "$what: exit $rc, expected 2: $out"; exit 1; }
  [ "$(wc -l <<<"$out")" = 1 ] || { echo "$what: expected one line: $out"; exit 1; }
}
expect_2 "missing scenario" "$bin" serve /nonexistent/scenario.json
expect_2 "zero time scale" "$bin" serve "$scenario" --time-scale 0
expect_2 "bad host" "$bin" serve "$scenario" --host not-an-address --grpc-port -1

source "$(dirname "$0")/serve_helpers.sh"
start_server "$bin" "$scenario"
expect_2 "port in use" "$bin" serve "$scenario" --http-port "$PORT" --grpc-port -1
expect_2 "worker port in use" "$bin" serve "$scenario" --http-port 0 --grpc-port -1 --workers --worker-http-port "$PORT" \
  --kv-events-port 0
expect_2 "kv events port in use" "$bin" serve "$scenario" --http-port 0 --grpc-port -1 --workers --worker-http-port 0 \
  --kv-events-port "$PORT"
stop_server
echo "serve command test passed"
