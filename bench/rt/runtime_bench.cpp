// Runtime speed and memory: fiber wake-ups through a sleep, timed-callback events, and the memory of
// 10,000 live fibers. Figures, not pass/fail: compare with the targets in issue [1/8].
#include <fstream>
#include <string>

#include <benchmark/benchmark.h>

#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace {

// Resident and peak resident memory of this process, from /proc/self/status, in bytes.
std::int64_t status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
  }
  return -1;
}

void BM_FiberSleepWakeups(benchmark::State& state) {
  const int fibers = static_cast<int>(state.range(0));
  constexpr int kSleepsPerFiber = 2'000;
  for (auto _ : state) {
    VirtualRuntime rt;
    for (int i = 0; i < fibers; ++i) {
      rt.spawn("f", [&rt, i] {
        for (int k = 0; k < kSleepsPerFiber; ++k) rt.sleep(ns(1 + (i % 7)));
      });
    }
    rt.run();
    benchmark::DoNotOptimize(rt.stats().wakeups);
  }
  state.SetItemsProcessed(state.iterations() * fibers * kSleepsPerFiber);
  state.SetLabel("items = fiber wake-ups through sleep()");
}
BENCHMARK(BM_FiberSleepWakeups)->Arg(1)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_TimedCallbackEvents(benchmark::State& state) {
  const int pending = static_cast<int>(state.range(0));
  constexpr int kEvents = 1'000'000;
  for (auto _ : state) {
    VirtualRuntime rt;
    int left = kEvents;
    // `pending` self-rescheduling chains keep the heap at that depth, as many in-flight models do.
    std::function<void()> tick = [&] {
      if (--left > 0) rt.call_after(ns(1 + (left % 13)), tick);
    };
    for (int i = 0; i < pending; ++i) rt.call_after(ns(i), tick);
    rt.run();
    benchmark::DoNotOptimize(left);
  }
  state.SetItemsProcessed(state.iterations() * kEvents);
  state.SetLabel("items = timed callback events");
}
BENCHMARK(BM_TimedCallbackEvents)->Arg(1)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_TenThousandFibersMemory(benchmark::State& state) {
  constexpr int kFibers = 10'000;
  const LoopOptions opts{.seed = 1, .stack_bytes = 64 * 1024};
  for (auto _ : state) {
    const std::int64_t before_kib = status_kib("VmRSS");
    std::int64_t live_kib = 0;
    {
      VirtualRuntime rt(opts);
      for (int i = 0; i < kFibers; ++i) {
        rt.spawn("f" + std::to_string(i), [&rt] {
          volatile char scratch[2048];  // a realistic frame or two on every stack
          scratch[0] = 1;
          for (int k = 0; k < 10; ++k) rt.sleep(us(1));
          benchmark::DoNotOptimize(scratch[0]);
        });
      }
      rt.run(RunOptions{.until = Time::zero() + us(5)});  // every fiber started and asleep
      live_kib = status_kib("VmRSS");
      rt.run();
    }
    state.counters["fibers"] = kFibers;
    state.counters["stack_KiB"] = static_cast<double>(opts.stack_bytes / 1024);
    state.counters["rss_growth_MiB"] = static_cast<double>(live_kib - before_kib) / 1024.0;
    state.counters["peak_rss_MiB"] = static_cast<double>(status_kib("VmHWM")) / 1024.0;
  }
}
BENCHMARK(BM_TenThousandFibersMemory)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace nvl::rt

BENCHMARK_MAIN();
