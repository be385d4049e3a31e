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
  const auto turn_taken = [&](const ComputeJob* j) { return j->turns_ == job.turns_; };
  if (job.turns_ != nullptr && std::any_of(jobs_.begin(), jobs_.end(), turn_taken)) {
    job.waiting_ = true;
    waiting_.push_back(&job);
    return;
  }
  run(job);
}

void ComputeEngine::run(ComputeJob& job) {
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
  job.running_ = false;
  if (job.waiting_) {
    job.waiting_ = false;
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &job));
    return;
  }
  job.timer_.cancel();
  jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
  if (jobs_.empty()) busy_ += rt_.now() - busy_since_;
  fraction_sum_ = 0;
  for (const ComputeJob* j : jobs_) fraction_sum_ += j->sm_fraction_;  // no drift from repeated +/-
  const auto next = job.turns_ == nullptr ? waiting_.end()
                                          : std::find_if(waiting_.begin(), waiting_.end(),
                                                         [&](const ComputeJob* j) { return j->turns_ == job.turns_; });
  if (next != waiting_.end()) {
    ComputeJob& turn = **next;
    waiting_.erase(next);
    turn.waiting_ = false;
    run(turn);  // re-prices the others
  } else if (!jobs_.empty()) {
    reprice_all();
  }
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
