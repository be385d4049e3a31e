#pragma once
// A live server on free loopback ports over scenarios/ci/live.json, for the live-mode tests.
#include <memory>
#include <string>

#include "emu/live/live_server.h"
#include "emu/scenario/scenario.h"

namespace nvl::live_test {

// Emulated seconds per wall second: fast enough for the tests to take seconds.
inline constexpr double kTestTimeScale = 4.0;

inline std::unique_ptr<emu::live::LiveServer> start_server(emu::live::LiveServerOptions opts = {}) {
  const emu::Scenario scenario = emu::load_scenario(std::string(NVL_SCENARIO_DIR) + "/ci/live.json");
  if (opts.engine.time_scale == 1.0) opts.engine.time_scale = kTestTimeScale;
  opts.http_port = 0;
  opts.grpc_port = 0;
  return std::make_unique<emu::live::LiveServer>(scenario, opts);
}

}  // namespace nvl::live_test
