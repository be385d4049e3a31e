#!/usr/bin/env bash
# Installs the Debian 12 packages the build needs, when any is missing (run as root on a fresh machine).
# `install-deps.sh fuzz` adds clang and its libFuzzer runtime for tools/fuzz.sh.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config
  libboost-fiber1.74-dev libboost-context1.74-dev libboost-system1.74-dev libboost-filesystem1.74-dev libboost-dev
  libspdlog-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  cppzmq-dev libzmq3-dev libmsgpack-cxx-dev  # live mode's KV events (ZMQ PUB, msgpack)
  curl  # live-mode tests (tests/live/curl_test.sh)
)
[ "${1:-}" = fuzz ] && packages+=(clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
