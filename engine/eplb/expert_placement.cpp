#include "engine/eplb/expert_placement.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>


namespace nvl::engine {

ExpertLoad uniform_expert_load(std::int64_t experts) {
  if (experts < 1) throw std::invalid_argument("expert load: need experts >= 1");
  return ExpertLoad(static_cast<std::size_t>(experts), 1.0 / static_cast<double>(experts));
}

ExpertLoad expert_load_from_counts(const std::vector<std::uint64_t>& counts) {
  const double total = static_cast<double>(std::accumulate(counts.begin(), counts.end(), std::uint64_t{0}));
  if (counts.empty() || total == 0) throw std::invalid_argument("expert load: counts are empty or all zero");
  ExpertLoad load;
  load.reserve(counts.size());
  for (auto c : counts) load.push_back(static_cast<double>(c) / total);
  return load;
}

ExpertPlacement::ExpertPlacement(const ExpertLoad& load, std::int64_t ep_ranks, std::int64_t redundant) {
  const auto experts = static_cast<std::int64_t>(load.size());
  if (ep_ranks < 1 || redundant < 0 || experts < 1) {
    throw std::invalid_argument("expert placement: need experts and ranks >= 1, redundant >= 0");
  }
  const std::int64_t slots = experts + redundant;
  if (slots % ep_ranks != 0) {
    throw std::invalid_argument(std::to_string(experts) + " experts + " + std::to_string(redundant) +
                                " redundant copies do not divide evenly over " + std::to_string(ep_ranks) +
                                " EP ranks");
  }
  slots_per_rank_ = slots / ep_ranks;
  if (redundant > 0 && slots_per_rank_ > experts) {
    throw std::invalid_argument("expert placement: more slots per rank than experts");
  }
  // Copies go one at a time to the expert with the highest load per copy.
  replicas_.assign(static_cast<std::size_t>(experts), 1);
  for (std::int64_t c = 0; c < redundant; ++c) {
    std::size_t best = 0;
    for (std::size_t e = 1; e < load.size(); ++e) {
      if (load[e] / static_cast<double>(replicas_[e]) > load[best] / static_cast<double>(replicas_[best])) best = e;
    }
    ++replicas_[best];
  }
  struct Replica {
    double share;
    std::int64_t expert;
  };
  std::vector<Replica> replicas;
  for (std::int64_t e = 0; e < experts; ++e) {
    for (std::int64_t c = 0; c < replicas_[static_cast<std::size_t>(e)]; ++c) {
      replicas.push_back({load[static_cast<std::size_t>(e)] / static_cast<double>(replicas_[static_cast<std::size_t>(e)]), e});
    }
  }
  std::stable_sort(replicas.begin(), replicas.end(), [](const Replica& a, const Replica& b) { return a.share > b.share; });
  rank_experts_.assign(static_cast<std::size_t>(ep_ranks), {});
  std::vector<double> rank_load(static_cast<std::size_t>(ep_ranks), 0.0);
  for (const Replica& r : replicas) {
    // Least loaded rank with a free slot that does not already hold this expert.
    std::size_t best = rank_experts_.size();
    for (std::size_t k = 0; k < rank_experts_.size(); ++k) {
      const auto& held = rank_experts_[k];
      if (static_cast<std::int64_t>(held.size()) >= slots_per_rank_) continue;
      if (std::find(held.begin(), held.end(), r.expert) != held.end()) continue;
      if (best == rank_experts_.size() || rank_load[k] < rank_load[best]) best = k;
    }
    if (best == rank_experts_.size()) throw std::logic_error("expert placement: no rank with room for a copy");
    rank_experts_[best].push_back(r.expert);
    rank_load[best] += r.share;
  }
}

const std::vector<std::int64_t>& ExpertPlacement::experts_on(std::int64_t rank) const {
  return rank_experts_.at(static_cast<std::size_t>(rank));
}

std::int64_t ExpertPlacement::replicas_of(std::int64_t expert) const {
  return replicas_.at(static_cast<std::size_t>(expert));
}

std::vector<double> ExpertPlacement::rank_shares(const ExpertLoad& load) const {
  std::vector<double> shares(rank_experts_.size(), 0.0);
  for (std::size_t k = 0; k < rank_experts_.size(); ++k) {
    for (std::int64_t e : rank_experts_[k]) {
      shares[k] += load.at(static_cast<std::size_t>(e)) / static_cast<double>(replicas_of(e));
    }
  }
  return shares;
}

double ExpertPlacement::imbalance(const ExpertLoad& load) const {
  const auto shares = rank_shares(load);
  const double mean = std::accumulate(shares.begin(), shares.end(), 0.0) / static_cast<double>(shares.size());
  return *std::max_element(shares.begin(), shares.end()) / mean;
}

std::int64_t ExpertPlacement::slots_changed_to(const ExpertPlacement& next) const {
  if (next.ranks() != ranks()) throw std::invalid_argument("expert placement: compare placements of one EP group");
  std::int64_t changed = 0;
  for (std::size_t k = 0; k < rank_experts_.size(); ++k) {
    for (std::int64_t e : next.rank_experts_[k]) {
      if (std::find(rank_experts_[k].begin(), rank_experts_[k].end(), e) == rank_experts_[k].end()) ++changed;
    }
  }
  return changed;
}

std::vector<std::int64_t> ExpertPlacement::experts_lost_with(std::int64_t rank) const {
  std::vector<std::int64_t> lost;
  for (std::int64_t e : experts_on(rank)) {
    if (replicas_of(e) == 1) lost.push_back(e);
  }
  return lost;
}

ExpertPlacement ExpertPlacement::without_rank(std::int64_t rank, const ExpertLoad& load) const {
  if (ranks() < 2) throw std::invalid_argument("expert placement: the last EP rank cannot leave");
  const std::vector<std::int64_t> lost = experts_lost_with(rank);
  ExpertPlacement next;
  next.replicas_ = replicas_;
  for (std::int64_t e : experts_on(rank)) --next.replicas_[static_cast<std::size_t>(e)];
  for (std::int64_t k = 0; k < ranks(); ++k) {
    if (k != rank) next.rank_experts_.push_back(rank_experts_[static_cast<std::size_t>(k)]);
  }
  for (std::int64_t e : lost) {
    const auto shares = next.rank_shares(load);
    const double load_e = load[static_cast<std::size_t>(e)];
    // Each candidate slot holds a copy of an expert x with others elsewhere: giving it up moves x's
    // share onto its other copies' ranks, and e's whole share onto this rank. The candidate whose
    // busiest affected rank ends lightest wins (ties: the lighter rank, then the first).
    std::size_t best_rank = next.rank_experts_.size();
    std::size_t best_slot = 0;
    double best_peak = 0;
    for (std::size_t k = 0; k < next.rank_experts_.size(); ++k) {
      const auto& held = next.rank_experts_[k];
      if (std::find(held.begin(), held.end(), e) != held.end()) continue;
      for (std::size_t s = 0; s < held.size(); ++s) {
        const auto x = static_cast<std::size_t>(held[s]);
        const auto copies = static_cast<double>(next.replicas_[x]);
        if (copies < 2) continue;
        const double gain = load[x] / (copies - 1) - load[x] / copies;  // on each other copy's rank
        double peak = shares[k] - load[x] / copies + load_e;
        for (std::size_t j = 0; j < next.rank_experts_.size(); ++j) {
          const auto& other = next.rank_experts_[j];
          if (j != k && std::find(other.begin(), other.end(), held[s]) != other.end()) peak = std::max(peak, shares[j] + gain);
        }
        if (best_rank == next.rank_experts_.size() || peak < best_peak ||
            (peak == best_peak && shares[k] < shares[best_rank])) {
          best_rank = k;
          best_slot = s;
          best_peak = peak;
        }
      }
    }
    ++next.replicas_[static_cast<std::size_t>(e)];
    if (best_rank < next.rank_experts_.size()) {
      auto& slot = next.rank_experts_[best_rank][best_slot];
      --next.replicas_[static_cast<std::size_t>(slot)];
      slot = e;
      continue;
    }
    const auto least = static_cast<std::size_t>(std::min_element(shares.begin(), shares.end()) - shares.begin());
    next.rank_experts_[least].push_back(e);
  }
  for (const auto& held : next.rank_experts_) {
    next.slots_per_rank_ = std::max(next.slots_per_rank_, static_cast<std::int64_t>(held.size()));
  }
  return next;
}

}  // namespace nvl::engine
