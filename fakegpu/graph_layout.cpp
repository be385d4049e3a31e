#include "fakegpu/graph_layout.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace nvl::fakegpu {

namespace {
// Iterations of a repeated body that a layout holds in full (the rest are waited, see the header).
std::size_t exact_iterations(const hal::RepeatNode& r, bool fast_forward) {
  return !fast_forward || r.body->collective_count() == 0 || r.times <= 2 ? r.times : 2;
}
}  // namespace

void GraphLayout::assign(const hal::Graph& graph, const CostModel& model, const DeviceProfile& profile,
                         hal::DeviceId device, KernelListCosts& lists, bool fast_forward, bool keep_kernel_names) {
  costs_.clear();
  keep_names_ = keep_kernel_names;
  names_.clear();
  held_lists_.clear();
  own_names_.clear();
  segments_.clear();
  calls_kept_ = 0;
  device_ = device;
  label_ = graph.label();
  if (graph.name() != name_ || launch_name_.empty()) {
    name_ = graph.name();
    launch_name_ = "graph '" + name_ + "'";
  }
  // Sized up front, so that building never moves what segments point to: one segment per collective
  // laid out, and the last; one cost per kernel laid out and the launch overhead; each call once.
  std::size_t segments = 1;
  std::size_t costs = 1;
  std::size_t calls = 0;
  for (const hal::GraphNode& node : graph.nodes()) {
    if (std::holds_alternative<hal::KernelDesc>(node)) ++costs;
    if (const auto* k = std::get_if<hal::KernelsNode>(&node)) costs += k->kernels->size();
    if (const auto* c = std::get_if<hal::CollectiveCall>(&node)) {
      ++segments;
      ++calls;
      if (c->beside) costs += c->beside->size();
    }
    if (const auto* r = std::get_if<hal::RepeatNode>(&node)) {
      segments += r->body->collective_count() * exact_iterations(*r, fast_forward);
      costs += r->body->kernel_count() * exact_iterations(*r, fast_forward);
      calls += r->body->collective_count();
    }
  }
  segments_.reserve(segments);
  costs_.reserve(costs);
  calls_.reserve(calls);
  segments_.emplace_back();
  costs_.push_back(KernelCost{0, 0, static_cast<double>(profile.graph_launch.ns()), false, std::nullopt});
  if (keep_names_) names_.push_back("graph launch");
  const Pricing pricing{model, profile, lists, fast_forward};
  for (const hal::GraphNode& node : graph.nodes()) append(node, pricing);
  segments_.back().end_kernel = segments_.back().beside_end = costs_.size();
  calls_.erase(calls_.begin() + static_cast<std::ptrdiff_t>(calls_kept_), calls_.end());
  sum_compute();
}

void GraphLayout::append(const hal::GraphNode& node, const Pricing& pricing) {
  if (const auto* k = std::get_if<hal::KernelDesc>(&node)) {
    costs_.push_back(pricing.model.cost(*k, pricing.profile.graph_node));
    if (keep_names_) names_.push_back(own_names_.emplace_back(k->name));
  } else if (const auto* list = std::get_if<hal::KernelsNode>(&node)) {
    append_kernels(list->kernels, pricing);
  } else if (const auto* r = std::get_if<hal::RepeatNode>(&node)) {
    append_repeat(*r, pricing);
  } else {
    const hal::CollectiveCall& kept = keep(std::get<hal::CollectiveCall>(node));
    const std::size_t end_kernel = costs_.size();
    if (kept.beside) append_kernels(kept.beside, pricing);
    append_collective(kept, end_kernel);
  }
}

void GraphLayout::append_kernels(const hal::SharedKernels& kernels, const Pricing& pricing) {
  const auto priced = pricing.lists.costs(kernels);
  costs_.insert(costs_.end(), priced.begin(), priced.end());
  if (!keep_names_) return;
  for (const hal::KernelDesc& k : *kernels) names_.emplace_back(k.name);
  held_lists_.push_back(kernels);
}

std::string_view GraphLayout::kernel_name(std::size_t index) const {
  if (index < names_.size()) return names_[index];
  return index == 0 ? "graph launch" : "kernel";
}

const hal::CollectiveCall& GraphLayout::keep(const hal::CollectiveCall& call) {
  const auto& members = call.group->members();
  if (members[static_cast<std::size_t>(call.rank)] != device_) {
    throw std::invalid_argument("graph '" + name_ + "': collective '" + call.op->name + "' names rank " +
                                std::to_string(call.rank) + " of group '" + call.group->name() + "', which is device " +
                                std::to_string(members[static_cast<std::size_t>(call.rank)]) + ", not device " +
                                std::to_string(device_));
  }
  if (calls_kept_ == calls_.size()) {
    calls_.push_back(call);
  } else {
    // Copying a shared pointer onto itself still counts references: a step's calls mostly are the last one's.
    hal::CollectiveCall& kept = calls_[calls_kept_];
    if (kept.group != call.group) kept.group = call.group;
    if (kept.op != call.op) kept.op = call.op;
    if (kept.beside != call.beside) kept.beside = call.beside;
    kept.rank = call.rank;
    kept.beside_sm_fraction = call.beside_sm_fraction;
  }
  return calls_[calls_kept_++];
}

void GraphLayout::append_collective(const hal::CollectiveCall& kept, std::size_t end_kernel) {
  Segment& s = segments_.back();
  s.end_kernel = end_kernel;
  s.beside_end = costs_.size();
  s.collective = &kept;
  segments_.emplace_back().first_kernel = costs_.size();
}

void GraphLayout::append_iteration(const hal::Graph& body, std::size_t first_cost, std::size_t first_call) {
  // The first iteration's kernels between two collectives are copied at once (they lie before the end).
  std::size_t run = 0;
  const auto copy_run = [&] {
    const std::size_t end = costs_.size();
    costs_.resize(end + run);
    std::copy_n(costs_.begin() + static_cast<std::ptrdiff_t>(first_cost), run,
                costs_.begin() + static_cast<std::ptrdiff_t>(end));
    if (keep_names_) {
      names_.resize(end + run);
      std::copy_n(names_.begin() + static_cast<std::ptrdiff_t>(first_cost), run,
                  names_.begin() + static_cast<std::ptrdiff_t>(end));
    }
    first_cost += run;
    run = 0;
  };
  for (const hal::GraphNode& node : body.nodes()) {
    if (const auto* call = std::get_if<hal::CollectiveCall>(&node)) {
      copy_run();
      const std::size_t end_kernel = costs_.size();
      run = call->beside ? call->beside->size() : 0;
      copy_run();
      append_collective(calls_[first_call++], end_kernel);
    } else if (const auto* list = std::get_if<hal::KernelsNode>(&node)) {
      run += list->kernels->size();
    } else {
      ++run;
    }
  }
  copy_run();
}

void GraphLayout::append_repeat(const hal::RepeatNode& repeat, const Pricing& pricing) {
  const hal::Graph& body = *repeat.body;
  const std::size_t first_cost = costs_.size();
  const std::size_t first_call = calls_kept_;
  for (const auto& node : body.nodes()) append(node, pricing);
  const std::size_t iterations = exact_iterations(repeat, pricing.fast_forward);
  if (iterations == repeat.times) {
    for (std::size_t i = 1; i < iterations; ++i) append_iteration(body, first_cost, first_call);
    return;
  }
  const std::size_t first_end = segments_.size() - 2;  // the segment of iteration 1's last collective
  append_iteration(body, first_cost, first_call);
  const std::size_t second_end = segments_.size() - 2;
  segments_[first_end].period_start = true;
  segments_[second_end].tail_iterations = repeat.times - 2;
  segments_[second_end].period_from = first_end;
}

void GraphLayout::sum_compute() {
  // How many times each segment's kernels run: once, and again in each waited period that repeats it (the
  // segments after the period's start up to the one that waits).
  std::vector<double>& runs = segment_runs_;
  runs.assign(segments_.size(), 1.0);
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    const Segment& s = segments_[i];
    if (s.tail_iterations == 0) continue;
    for (std::size_t j = s.period_from + 1; j <= i; ++j) runs[j] += static_cast<double>(s.tail_iterations);
  }
  // Per segment: all of its kernels' time, times its runs, in all and by kind.
  compute_ns_ = 0;
  priced_ = PricedTime{};
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    const Segment& s = segments_[i];
    double here = 0;
    const auto add = [&here, this, times = runs[i]](std::span<const KernelCost> part) {
      for (const KernelCost& c : part) {
        const double ns = price_ns(c, RunShares{});
        here += ns;
        priced_.add(c, times * ns);
      }
    };
    add(kernels(s));
    // The segment's kernels at full rate, summed in order from zero as the compute engine sums a job's:
    // its price when it runs alone, which the engine then need not work out again.
    s.cache = PriceCache{RunShares{}, here};
    add(beside(s));
    compute_ns_ += runs[i] * here;
  }
}

}  // namespace nvl::fakegpu
