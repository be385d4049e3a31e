#!/usr/bin/env bash
# The official OpenAI Node SDK streaming a chat completion from `nvl72emu serve`. Skipped (77) unless
# node and the `openai` npm package are found: NODE_PATH, or node_modules under tests/live/node
# (install with: npm install --prefix tests/live/node openai; that folder is gitignored).
set -euo pipefail
command -v node >/dev/null || { echo "node not installed: skipped"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}$here/node/node_modules"
node -e 'require.resolve("openai")' 2>/dev/null || { echo "npm package openai not installed: skipped"; exit 77; }
source "$here/serve_helpers.sh"
start_server "$1" "$2"
node "$3" "http://127.0.0.1:$PORT/v1"
stop_server
