// An example that doubles as a test (SimGrid style): a client pings a server that is slow on the
// third ping, so the client's timed wait expires. The virtual-time-stamped log must match the golden
// file, which was worked out by hand from the runtime's rules (ready fibers run in wake order until
// they block; then time jumps to the next event).
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include "emu/rt/channel.h"
#include "emu/rt/log.h"
#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace golden_log_test {

using namespace literals;

TEST(GoldenLog, PingPongWithATimeout) {
  VirtualRuntime rt;
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(out);
  auto client_log = make_logger(rt, "client", sink);
  auto server_log = make_logger(rt, "server", sink);
  Channel<int> requests(rt, 1, "requests");
  Channel<int> replies(rt, 1, "replies");
  requests.mark_idle_point();

  rt.spawn("client", [&] {
    for (int i = 1; i <= 3; ++i) {
      client_log->info("send ping {}", i);
      requests.push(i);
      std::optional<int> pong;
      if (replies.pop_timeout(pong, 5_us) == ChannelStatus::ok) {
        client_log->info("pong {}", *pong);
      } else {
        client_log->info("timeout {}", i);
      }
    }
  });
  rt.spawn("server", [&] {
    while (auto ping = requests.pop()) {
      server_log->info("serve {}", *ping);
      rt.sleep(*ping == 3 ? 10_us : 2_us);
      replies.try_push(*ping);
      server_log->info("reply {}", *ping);
    }
  }, SpawnOptions{.daemon = true});

  const RunResult result = rt.run();
  EXPECT_EQ(result.reason, RunResult::Stop::quiescent);
  EXPECT_EQ(rt.now(), Time::zero() + 14_us);

  std::ifstream golden(NVL_GOLDEN_DIR "/ping_pong.log");
  ASSERT_TRUE(golden) << "missing golden file " NVL_GOLDEN_DIR "/ping_pong.log";
  std::stringstream want;
  want << golden.rdbuf();
  EXPECT_EQ(out.str(), want.str());
}

}  // namespace golden_log_test
}  // namespace nvl::rt
