// Recovery of the P/D system from faults on its prefill worker (a TP8 group on GPUs 64-71): a GPU lost
// mid-prefill keeps the worker out and every prompt goes to local prefill, an ECC error drains and
// resets it and the router uses it again, a crash with queued requests loses its queue and KV but no
// request, and a fault while a KV transfer from it is in flight leaves the decode rank to prefill.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/engine/pd_rig.h"

namespace nvl::engine {
namespace prefill_recovery_test {

using pd_test::expect_kv_returned;
using pd_test::options;
using pd_test::request;
using pd_test::Rig;
using pd_test::RigOptions;

constexpr std::int64_t kPrompt = 20'000;  // uncached: well above the threshold, so the prefill worker's
constexpr std::int64_t kOutput = 16;
constexpr hal::DeviceId kFirstPrefillGpu = 64;
const rt::Duration kDetection = rt::ms(20);
const rt::Duration kReset = rt::ms(300);
const rt::Duration kRestart = rt::ms(400);

struct Record {
  rt::Time at;
  std::string kind;  // source/kind
  nlohmann::json fields;
};

// The P/D rig with short health times, its records kept with their times, and what each request got.
struct Watch {
  explicit Watch(std::function<void(PdDeployment&)> extra = {})
      : rig(options([&](RigOptions& o) {
          o.tweak = [extra](PdDeployment& d) {
            d.system.health.check_interval = rt::ms(50);
            d.system.health.detection_delay = kDetection;
            d.system.health.gpu_reset_time = kReset;
            d.system.health.worker_restart_time = kRestart;
            if (extra) extra(d);
          };
        })) {
    rig.rt.log().set_observer([this](rt::Time t, std::string_view source, std::string_view kind,
                                     const nlohmann::json& f, rt::Severity) {
      records.push_back(Record{t, std::string(source) + "/" + std::string(kind), f});
    });
  }
  void submit(RequestId first, RequestId last) {
    for (RequestId id = first; id <= last; ++id) rig.system->submit(request(id, kPrompt, kOutput, id));
  }
  // Calls `fn` once the prefill worker has finished a step and still has requests running or queued
  // (never, if every request is over first: the tests then fail on what the fault should have done).
  void when_mid_prefill(std::function<void()> fn) {
    rig.rt.call_after(rt::ms(1), [this, fn = std::move(fn)]() mutable {
      const RankScheduler& s = rig.system->prefill(0).scheduler();
      if (rig.system->prefill(0).steps() >= 1 && s.running() + s.waiting() > 0) {
        fn();
      } else if (rig.system->in_flight() > 0) {
        when_mid_prefill(std::move(fn));
      }
    });
  }
  std::vector<Record> of(const std::string& kind) const {
    std::vector<Record> out;
    for (const Record& r : records) {
      if (r.kind == kind) out.push_back(r);
    }
    return out;
  }
  void expect_served(RequestId first, RequestId last) {
    for (RequestId id = first; id <= last; ++id) {
      ASSERT_TRUE(rig.done.contains(id)) << id;
      EXPECT_EQ(rig.done[id].failure, "") << id;
      EXPECT_EQ(rig.tokens[id], kOutput) << "request " << id << ": every token exactly once";
    }
  }
  // Requests prefilled on their DP rank because the prefill worker died.
  std::vector<RequestId> moved_to_local() const {
    std::vector<RequestId> out;
    for (const Record& r : of("pd/prefill_worker_down")) out.push_back(r.fields["request"].get<RequestId>());
    for (const Record& r : of("pd/local_prefill_instead")) out.push_back(r.fields["request"].get<RequestId>());
    return out;
  }
  // No request is routed to the prefill worker from its declaration to its return (or the end).
  void expect_no_prefill_route_while_down() {
    std::optional<rt::Time> down_since;
    for (const Record& r : records) {
      if (r.kind == "health/prefill_worker_declared_dead") down_since = r.at;
      if (r.kind == "health/prefill_worker_back") down_since.reset();
      if (r.kind == "router/routed" && down_since) {
        EXPECT_EQ(r.fields["path"], "local") << "routed at " << r.at;
      }
    }
  }
  bool routed_to_prefill_after(rt::Time t, RequestId id) const {
    for (const Record& r : of("router/routed")) {
      if (r.at > t && r.fields["request"] == id) return r.fields["path"] == "prefill_worker";
    }
    return false;
  }

  Rig rig;
  std::vector<Record> records;
};

TEST(PrefillRecovery, AGpuLostMidPrefillKeepsTheWorkerOutAndEveryRequestCompletesViaLocalPrefill) {
  Watch w;
  w.submit(1, 6);
  rt::Time fault_at;
  std::size_t held_at_fault = 0;
  w.when_mid_prefill([&] {
    fault_at = w.rig.rt.now();
    const RankScheduler& s = w.rig.system->prefill(0).scheduler();
    held_at_fault = s.running() + s.waiting();
    w.rig.cluster.fleet().device(kFirstPrefillGpu + 2).inject_gpu_lost();
    // Long prompts that arrive after the declaration are prefilled on the DP ranks.
    w.rig.rt.call_after(rt::ms(200), [&] { w.submit(7, 8); });
  });
  w.rig.rt.run();
  w.expect_served(1, 8);
  ASSERT_GT(held_at_fault, 0u);

  const auto declared = w.of("health/prefill_worker_declared_dead");
  ASSERT_EQ(declared.size(), 1u);
  EXPECT_GE(declared[0].at - fault_at, kDetection) << "declared after the detection delay";
  EXPECT_NE(declared[0].fields["why"].get<std::string>().find("Xid 79"), std::string::npos);
  EXPECT_EQ(w.of("health/prefill_worker_out").size(), 1u) << "the TP group cannot run without the GPU";
  EXPECT_TRUE(w.of("health/prefill_worker_back").empty());
  EXPECT_EQ(w.of("router/prefill_path_off").size(), 1u);
  EXPECT_TRUE(w.rig.system->prefill_worker_down());
  EXPECT_FALSE(w.rig.system->prefill(0).live());
  EXPECT_FALSE(w.rig.system->router().prefill_worker_up());

  // What the worker held went to local prefill, each request once; so did the later prompts.
  const std::vector<RequestId> moved = w.moved_to_local();
  EXPECT_GE(moved.size(), held_at_fault);
  EXPECT_EQ(std::set<RequestId>(moved.begin(), moved.end()).size(), moved.size()) << "none moved twice";
  for (RequestId id : moved) EXPECT_TRUE(w.rig.done[id].reprefilled) << id;
  for (RequestId id : {7, 8}) EXPECT_EQ(w.rig.done[id].path, PrefillPath::local) << id;
  w.expect_no_prefill_route_while_down();
  expect_kv_returned(w.rig);
}

TEST(PrefillRecovery, AnEccErrorDrainsAndResetsTheWorkerAndTheRouterSendsToItAgain) {
  Watch w;
  w.submit(1, 4);
  rt::Time fault_at;
  w.when_mid_prefill([&] {
    fault_at = w.rig.rt.now();
    w.rig.cluster.fleet().device(kFirstPrefillGpu + 5).inject_ecc_error();
    // Well after the reset: the next long prompts go to the prefill worker again.
    w.rig.rt.call_after(kDetection + kReset + rt::ms(200), [&] { w.submit(11, 13); });
  });
  w.rig.rt.run();
  w.expect_served(1, 4);
  w.expect_served(11, 13);

  const auto declared = w.of("health/prefill_worker_declared_dead");
  ASSERT_EQ(declared.size(), 1u);
  EXPECT_NE(declared[0].fields["why"].get<std::string>().find("Xid 48"), std::string::npos);
  const auto back = w.of("health/prefill_worker_back");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_GE(back[0].at - fault_at, kDetection + kReset) << "the detection delay, then the reset";
  EXPECT_EQ(back[0].fields["how"], "reset");
  EXPECT_TRUE(w.of("health/prefill_worker_out").empty());
  EXPECT_EQ(w.rig.cluster.fleet().device(kFirstPrefillGpu + 5).health(), hal::DeviceHealth::healthy);
  EXPECT_TRUE(w.rig.system->prefill(0).live());
  EXPECT_FALSE(w.rig.system->prefill_worker_down());
  EXPECT_TRUE(w.rig.system->router().prefill_worker_up());
  for (RequestId id = 11; id <= 13; ++id) {
    EXPECT_TRUE(w.routed_to_prefill_after(back[0].at, id)) << id;
    EXPECT_EQ(w.rig.done[id].path, PrefillPath::prefill_worker) << id;
    EXPECT_FALSE(w.rig.done[id].reprefilled) << id;
    EXPECT_GT(w.rig.done[id].transfer_bytes, 0u) << "request " << id << "'s KV came from the worker";
  }
  w.expect_no_prefill_route_while_down();
  expect_kv_returned(w.rig);
}

TEST(PrefillRecovery, ACrashLosesTheQueueAndTheKvButNoRequestAndTheWorkerRestarts) {
  Watch w;
  w.submit(1, 8);
  rt::Time crash_at;
  std::size_t queued = 0;
  w.when_mid_prefill([&] {
    crash_at = w.rig.rt.now();
    queued = w.rig.system->prefill(0).scheduler().waiting();
    w.rig.system->crash_prefill_worker();
    w.rig.rt.call_after(kDetection + kRestart + rt::ms(200), [&] { w.submit(21, 21); });
  });
  w.rig.rt.run();
  ASSERT_GT(queued, 0u) << "the crash found requests waiting";
  w.expect_served(1, 8);
  w.expect_served(21, 21);

  EXPECT_EQ(w.of("prefill-worker/worker_crashed").size(), 1u);
  const auto declared = w.of("health/prefill_worker_declared_dead");
  ASSERT_EQ(declared.size(), 1u);
  EXPECT_NE(declared[0].fields["why"].get<std::string>().find("worker process"), std::string::npos);
  const auto taken = w.of("prefill-worker/taken_down");
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_GE(taken[0].fields["requests"].get<std::size_t>(), queued) << "its queue went with the process";
  EXPECT_GE(w.moved_to_local().size(), queued);
  const auto back = w.of("health/prefill_worker_back");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_GE(back[0].at - crash_at, kRestart);
  EXPECT_EQ(back[0].fields["how"], "restarted");
  EXPECT_FALSE(w.rig.system->prefill(0).crashed());
  EXPECT_EQ(w.rig.done[21].path, PrefillPath::prefill_worker);
  EXPECT_FALSE(w.rig.done[21].reprefilled);
  w.expect_no_prefill_route_while_down();
  expect_kv_returned(w.rig);
}

TEST(PrefillRecovery, AFaultWhileTheKvMovesLeavesTheDecodeRankToPrefill) {
  // The worker in the second rack: its KV crosses the NICs, and the last layer group's push outlives
  // the prefill. A check every millisecond declares the worker dead while that push is in flight.
  const auto setup = [](PdDeployment& d) {
    d.system.health.check_interval = rt::ms(1);
    d.system.health.detection_delay = rt::Duration();
  };
  const auto two_racks = [&](std::function<void(PdDeployment&)> extra) {
    return options([extra](RigOptions& o) {
      o.racks = 2;
      o.tweak = extra;
    });
  };
  // A run without the fault says when the prefill ends and the KV arrives (the runs are deterministic).
  rt::Time prefilled, arrived;
  {
    Rig probe(two_racks(setup));
    probe.system->submit(request(1, 40'000, kOutput, 1));
    probe.rt.run();
    ASSERT_TRUE(probe.done[1].prefill_done && probe.done[1].kv_arrived);
    prefilled = *probe.done[1].prefill_done;
    arrived = *probe.done[1].kv_arrived;
  }
  ASSERT_GT(arrived - prefilled, rt::ms(4)) << "a window for the fault while the KV moves";

  Rig rig(two_racks(setup));
  rig.system->submit(request(1, 40'000, kOutput, 1));
  rig.rt.call_at(prefilled + rt::ms(1), [&] { rig.cluster.fleet().device(72 + 1).inject_ecc_error(); });
  rig.rt.run();
  ASSERT_TRUE(rig.done.contains(1));
  const RequestTiming& t = rig.done[1];
  EXPECT_EQ(t.failure, "");
  EXPECT_EQ(rig.tokens[1], kOutput) << "every token exactly once";
  EXPECT_TRUE(t.reprefilled) << "the decode rank prefilled it";
  EXPECT_FALSE(t.kv_arrived) << "the transfer never completed";
  EXPECT_EQ(rig.log_lines_with({"prefill_worker_down", "reprefill"}), 1);
  EXPECT_EQ(rig.log_lines_with({"prefill_worker_back"}), 1);
  expect_kv_returned(rig);
}

}  // namespace prefill_recovery_test
}  // namespace nvl::engine
