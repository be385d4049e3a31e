#pragma once
// Shares one device's compute and HBM bandwidth among the kernels (or graph segments) running on
// it at once, one per stream. The model, kept simple on purpose:
//   - each running job's stream owns a fraction s of the SMs (1 unless it was given less, as a
//     green context is); S is the sum over the running jobs;
//   - compute share = s * min(1, 1/S) * compute clock: its own SMs, scaled down when the streams
//     over-subscribe the device, and slowed by a thermal throttle;
//   - memory share = s / S * memory clock: HBM bandwidth split in proportion to the SM shares (a
//     job alone gets all of it whatever its SM fraction), slowed (less) by the throttle too.
// When a job starts or ends, or the clock changes, every running job whose shares changed is
// re-priced from the fraction of its work already done (processor sharing), so a kernel slows down
// while another stream's kernel runs beside it. Jobs that take turns (hal's
// create_stream_taking_turns) are the exception: one of them runs, the others wait for it.
#include <cstddef>
#include <span>
#include <vector>

#include "emu/rt/runtime.h"
#include "fakegpu/kernel_cost.h"

namespace nvl::fakegpu {

class ComputeJob;

class ComputeClient {
 public:
  virtual void on_compute_done(ComputeJob& job) = 0;

 protected:
  ~ComputeClient() = default;
};

// Remembers the price of a graph segment for the last shares it ran at, so that replaying a graph
// at unchanged shares costs no pricing.
struct PriceCache {
  RunShares shares{-1.0, -1.0};
  double ns = 0;
};

// One unit of work on the engine: a span of kernel costs run back to back. Owned by its client
// (a stream); the engine keeps the running state in it.
class ComputeJob {
 public:
  ComputeJob(ComputeClient& client, double sm_fraction) : client_(&client), sm_fraction_(sm_fraction) {}
  void set_work(std::span<const KernelCost> costs, PriceCache* cache) {
    costs_ = costs;
    cache_ = cache;
  }
  // For the next start (not while the job runs): the share of the SMs its kernels are launched on.
  void set_sm_fraction(double sm_fraction) { sm_fraction_ = sm_fraction; }
  // Jobs that take turns run one at a time, the others waiting in the order they started (not while
  // either runs).
  void take_turns_with(ComputeJob& other) {
    if (other.turns_ == nullptr) other.turns_ = &other;
    turns_ = other.turns_;
  }

 private:
  friend class ComputeEngine;
  ComputeClient* client_;
  double sm_fraction_;
  std::span<const KernelCost> costs_;
  PriceCache* cache_ = nullptr;
  const ComputeJob* turns_ = nullptr;  // the same for jobs that take turns
  bool running_ = false;               // started and not done (possibly waiting its turn)
  bool waiting_ = false;
  RunShares shares_;
  double progress_ = 0;  // fraction of the work done up to since_
  rt::Time since_;
  double total_ns_ = 0;  // the whole work's time at the current shares
  rt::TimerHandle timer_;
};

class ComputeEngine {
 public:
  explicit ComputeEngine(rt::Runtime& rt) : rt_(rt) {}

  // The client's on_compute_done runs on the loop when the job's work is done.
  void start(ComputeJob& job);  // or queues it behind the running job it takes turns with
  // Stops a running job without calling its client.
  void cancel(ComputeJob& job);
  // Thermal throttle: compute and memory-bound work run at these fractions of their nominal rates
  // (re-prices running jobs).
  void set_clock(RunShares clock);
  const RunShares& clock() const { return clock_; }
  std::size_t running() const { return jobs_.size(); }
  // Time with at least one job running, up to now (device utilisation in reports).
  rt::Duration busy_time() const { return jobs_.empty() ? busy_ : busy_ + (rt_.now() - busy_since_); }
  // Busy time of work fast-forwarded without running here (the repeated layers of a graph).
  void credit_busy(rt::Duration d) { busy_ += d; }

 private:
  RunShares shares_for(const ComputeJob& job) const;
  double price(ComputeJob& job) const;
  void schedule(ComputeJob& job);
  void reprice_all();
  void finish(ComputeJob& job);
  void run(ComputeJob& job);
  void remove(ComputeJob& job);

  rt::Runtime& rt_;
  std::vector<ComputeJob*> jobs_;     // running
  std::vector<ComputeJob*> waiting_;  // for their turn, in the order they started
  double fraction_sum_ = 0;
  RunShares clock_;
  rt::Duration busy_;
  rt::Time busy_since_;
};

}  // namespace nvl::fakegpu
