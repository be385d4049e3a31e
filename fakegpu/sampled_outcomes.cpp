#include "fakegpu/sampled_outcomes.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace nvl::fakegpu {

namespace {
// Up to this many redraws for a token's next expert before it takes the next free one in id order: a
// heavily skewed popularity keeps drawing the experts a token already chose.
constexpr int kRedraws = 64;
// Means from which a binomial is drawn from its normal approximation (the inversion would take as many
// steps).
constexpr double kNormalFromMean = 24;
constexpr std::size_t kWordBits = 64;
}  // namespace

SampledOutcomes::SampledOutcomes(rt::Rng& rng, std::shared_ptr<OutcomeModel> model)
    : rng_(rng), model_(std::move(model)) {}

void SampledOutcomes::route_tokens(std::int64_t tokens, std::int64_t top_k, std::int64_t experts,
                                   std::vector<hal::RoutedExpert>& out) {
  if (top_k < 1 || top_k > experts) {
    throw std::invalid_argument("route_tokens: top_k " + std::to_string(top_k) + " outside [1, " +
                                std::to_string(experts) + "]");
  }
  out.clear();
  if (tokens <= 0) return;
  const OutcomeModel::Popularity& p = model_->popularity(experts);
  counts_.resize(static_cast<std::size_t>(experts), 0);
  chosen_.resize((static_cast<std::size_t>(experts) + kWordBits - 1) / kWordBits, 0);
  if (tokens * top_k <= 2 * experts) {
    draw_by_token(tokens, top_k, p);
  } else {
    draw_multinomial(tokens, top_k, p);
  }
  // In expert order, from the chosen experts' bits: neither a sort of them nor a walk over every count.
  for (std::size_t w = 0; w < chosen_.size(); ++w) {
    for (std::uint64_t bits = chosen_[w]; bits != 0; bits &= bits - 1) {
      const auto e = static_cast<std::int32_t>(w * kWordBits + static_cast<std::size_t>(std::countr_zero(bits)));
      auto& c = counts_[static_cast<std::size_t>(e)];
      out.push_back(hal::RoutedExpert{e, c});
      c = 0;
    }
    chosen_[w] = 0;
  }
}

void SampledOutcomes::choose(std::int32_t expert) {
  const auto e = static_cast<std::size_t>(expert);
  chosen_[e / kWordBits] |= std::uint64_t{1} << (e % kWordBits);
}

void SampledOutcomes::draw_by_token(std::int64_t tokens, std::int64_t top_k, const OutcomeModel::Popularity& p) {
  std::vector<std::int32_t> mine(static_cast<std::size_t>(top_k));
  const auto experts = static_cast<std::int32_t>(p.shares.size());
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t k = 0; k < top_k; ++k) {
      const auto taken = [&](std::int32_t e) { return std::find(mine.begin(), mine.begin() + k, e) != mine.begin() + k; };
      auto e = static_cast<std::int32_t>(p.table.draw(rng_));
      for (int tries = 0; taken(e) && tries < kRedraws; ++tries) e = static_cast<std::int32_t>(p.table.draw(rng_));
      while (taken(e)) e = (e + 1) % experts;
      mine[static_cast<std::size_t>(k)] = e;
      ++counts_[static_cast<std::size_t>(e)];
      choose(e);
    }
  }
}

void SampledOutcomes::draw_multinomial(std::int64_t tokens, std::int64_t top_k, const OutcomeModel::Popularity& p) {
  // Conditional binomials in expert order; a count over the tokens is capped and its excess left to the
  // experts after it, then to any with room.
  std::int64_t left = tokens * top_k;
  double share_left = 1;
  const std::size_t experts = p.shares.size();
  for (std::size_t e = 0; e < experts && left > 0; ++e) {
    const double q = share_left > 0 ? std::min(1.0, p.shares[e] / share_left) : 1.0;
    share_left -= p.shares[e];
    const std::int64_t c = std::min(tokens, e + 1 == experts ? left : binomial(left, q));
    counts_[e] = static_cast<std::int32_t>(c);
    left -= c;
  }
  for (std::size_t e = 0; e < experts && left > 0; ++e) {
    const std::int64_t room = std::min(left, tokens - counts_[e]);
    counts_[e] += static_cast<std::int32_t>(room);
    left -= room;
  }
  for (std::size_t e = 0; e < experts; ++e) {
    if (counts_[e] > 0) choose(static_cast<std::int32_t>(e));
  }
}

std::int64_t SampledOutcomes::binomial(std::int64_t n, double p) {
  if (n <= 0 || p <= 0) return 0;
  if (p >= 1) return n;
  const double mean = static_cast<double>(n) * p;
  if (mean >= kNormalFromMean && static_cast<double>(n) * (1 - p) >= kNormalFromMean) {
    const double x = std::round(rng_.normal(mean, std::sqrt(mean * (1 - p))));
    return std::clamp(static_cast<std::int64_t>(x), std::int64_t{0}, n);
  }
  if (p > 0.5) return n - binomial(n, 1 - p);
  // Inversion: walk the pmf from 0 until the uniform is used up.
  const double ratio = p / (1 - p);
  double pmf = std::pow(1 - p, static_cast<double>(n));
  double u = rng_.uniform();
  std::int64_t k = 0;
  while (u >= pmf && k < n) {
    u -= pmf;
    pmf *= ratio * static_cast<double>(n - k) / static_cast<double>(k + 1);
    ++k;
  }
  return k;
}

std::int64_t SampledOutcomes::accepted_drafts(std::int64_t drafted) {
  const double rate = model_->mtp_acceptance_rate();
  std::int64_t kept = 0;
  while (kept < drafted && rng_.bernoulli(rate)) ++kept;
  return kept;
}

}  // namespace nvl::fakegpu
