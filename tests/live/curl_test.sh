#!/usr/bin/env bash
# curl against `nvl72emu serve`: a completion with and without streaming, a bad request, the metrics,
# and a clean stop on SIGTERM. Skipped (77) where curl is not installed.
set -euo pipefail
command -v curl >/dev/null || { echo "curl not installed: skipped"; exit 77; }
source "$(dirname "$0")/serve_helpers.sh"
start_server "$1" "$2"
base="http://127.0.0.1:$PORT"
model=$(curl -sf "$base/v1/models" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$model" ] || { echo "no model in /v1/models"; exit 1; }

body=$(curl -sf "$base/v1/completions" -H 'Content-Type: application/json' \
  -d "{\"model\":\"$model\",\"prompt\":\"twelve bytes\",\"max_tokens\":5}")
grep -q '"usage":{"completion_tokens":5,"prompt_tokens":3,"total_tokens":8}' <<<"$body" \
  || { echo "bad usage: $body"; exit 1; }

stream=$(curl -sfN "$base/v1/chat/completions" -H 'Content-Type: application/json' \
  -d "{\"model\":\"$model\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":6,\"stream\":true}")
[ "$(grep -c '^data: ' <<<"$stream")" -ge 3 ] || { echo "too few events: $stream"; exit 1; }
[ "$(tail -n 1 <<<"$stream")" = "data: [DONE]" ] || { echo "no [DONE]: $stream"; exit 1; }
grep -q '"finish_reason":"length"' <<<"$stream" || { echo "no finish_reason: $stream"; exit 1; }

code=$(curl -s -o /dev/null -w '%{http_code}' "$base/v1/completions" -H 'Content-Type: application/json' -d '{bad')
[ "$code" = 400 ] || { echo "bad JSON got $code"; exit 1; }

metrics=$(curl -sf "$base/metrics")
grep -q '^vllm:num_requests_running' <<<"$metrics" || { echo "no vLLM metrics: $metrics"; exit 1; }
stop_server
echo "curl test passed"
