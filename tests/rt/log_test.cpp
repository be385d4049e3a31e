#include <cstdlib>
#include <sstream>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include "emu/rt/errors.h"
#include "emu/rt/log.h"
#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace log_test {

TEST(Log, LinesCarryTheRuntimesVirtualTimeNotTheHostClock) {
  VirtualRuntime rt;
  std::ostringstream out;
  auto log = make_logger(rt, "router", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  rt.call_at(Time::zero() + us(1'500), [&] { log->info("routed request {}", 7); });
  rt.run();
  log->flush();
  EXPECT_EQ(out.str(), "[0.001500000] [router] [info] routed request 7\n");
}

TEST(Log, UnknownLevelInTheEnvironmentIsAClearError) {
  ::setenv("NVL_LOG", "chatty", 1);
  try {
    log_level_from_env();
    ADD_FAILURE() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("NVL_LOG=chatty"), std::string::npos);
  }
  ::setenv("NVL_LOG", "debug", 1);
  EXPECT_EQ(log_level_from_env(), spdlog::level::debug);
  ::unsetenv("NVL_LOG");
  EXPECT_EQ(log_level_from_env(), spdlog::level::info);
}

}  // namespace log_test
}  // namespace nvl::rt
