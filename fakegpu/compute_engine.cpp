#include "fakegpu/compute_engine.h"

#include <algorithm>
#include <cmath>

namespace nvl::fakegpu {

RunShares ComputeEngine::shares_for(const ComputeJob& job) const {
  const double s = job.sm_fraction_;
  const double total = std::max(fraction_sum_, s);
  return RunShares{s * std::min(1.0, 1.0 / total) * clock_.compute, s / total * clock_.memory};
}

double ComputeEngine::price(ComputeJob& job) const {
  PriceCache* cache = job.cache_;
  if (cache != nullptr && cache->shares == job.shares_) return cache->ns;
  double ns = 0;
  if (job.shares_ == RunShares{}) {
    // Alone at nominal clock (the usual case) every division is by 1, which is exact: skipping them
    // gives the same sum, bit for bit.
    for (const KernelCost& c : job.costs_) ns += c.overhead_ns + std::max(c.compute_ns, c.memory_ns);
  } else {
    for (const KernelCost& c : job.costs_) ns += price_ns(c, job.shares_);
  }
  if (cache != nullptr) *cache = PriceCache{job.shares_, ns};
  return ns;
}

void ComputeEngine::schedule(ComputeJob& job) {
  job.total_ns_ = price(job);
  const double remaining = (1.0 - job.progress_) * job.total_ns_;
  job.timer_ = rt_.call_at(job.since_ + rt::Duration::nanoseconds(std::llround(remaining)),
                           [this, j = &job] { finish(*j); });
}

void ComputeEngine::start(ComputeJob& job) {
  job.running_ = true;
  job.progress_ = 0;
  job.since_ = rt_.now();
  if (jobs_.empty()) busy_since_ = job.since_;
  jobs_.push_back(&job);
  fraction_sum_ += job.sm_fraction_;
  if (jobs_.size() > 1) {
    reprice_all();  // prices the new job too
  } else {
    job.shares_ = shares_for(job);
    schedule(job);
  }
}

void ComputeEngine::reprice_all() {
  const rt::Time now = rt_.now();
  for (ComputeJob* j : jobs_) {
    const RunShares s = shares_for(*j);
    if (j->timer_.pending() && s == j->shares_) continue;
    if (j->timer_.pending()) {
      j->timer_.cancel();
      if (j->total_ns_ > 0) j->progress_ = std::min(1.0, j->progress_ + (now - j->since_).ns() / j->total_ns_);
    }
    j->since_ = now;
    j->shares_ = s;
    schedule(*j);
  }
}

void ComputeEngine::remove(ComputeJob& job) {
  job.timer_.cancel();
  job.running_ = false;
  jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
  if (jobs_.empty()) busy_ += rt_.now() - busy_since_;
  fraction_sum_ = 0;
  for (const ComputeJob* j : jobs_) fraction_sum_ += j->sm_fraction_;  // no drift from repeated +/-
  if (!jobs_.empty()) reprice_all();
}

void ComputeEngine::finish(ComputeJob& job) {
  job.timer_ = {};  // it has fired: nothing to cancel (one lookup in the loop's timers less per job)
  remove(job);
  job.client_->on_compute_done(job);
}

void ComputeEngine::cancel(ComputeJob& job) {
  if (job.running_) remove(job);
}

void ComputeEngine::set_clock(RunShares clock) {
  clock_ = clock;
  reprice_all();
}

}  // namespace nvl::fakegpu
