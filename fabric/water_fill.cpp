#include "fabric/water_fill.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace nvl::fabric {

void WaterFill::solve(const std::vector<double>& capacity, const std::vector<int>& offset,
                      const std::vector<int>& path, std::vector<double>& rate) {
  set_flows(capacity.size(), offset, path);
  solve(capacity, rate);
}

void WaterFill::set_flows(std::size_t channels, std::span<const int> offset, std::span<const int> path) {
  offset_ = offset;
  path_ = path;
  const std::size_t flows = offset.empty() ? 0 : offset.size() - 1;
  pairs_ = path.size() == 2 * flows;
  for (std::size_t f = 0; pairs_ && f < flows; ++f) {
    pairs_ = offset[f + 1] == offset[f] + 2 && path[2 * f] != path[2 * f + 1];
  }
  present_.assign(channels, 0);
  adj_begin_.resize(channels);
  adj_end_.resize(channels);
  adj_.resize(path.size());
  if (pairs_) {
    set_pairs(flows, path);
  } else {
    for (int c : path) ++present_[static_cast<std::size_t>(c)];
    list_from_present();
    for (std::size_t f = 0; f < flows; ++f) {
      for (int i = offset[f]; i < offset[f + 1]; ++i) {
        const auto c = static_cast<std::size_t>(path[static_cast<std::size_t>(i)]);
        adj_[static_cast<std::size_t>(adj_end_[c]++)] = static_cast<int>(f);
      }
    }
  }
  removed_.assign(flows, 0);
  resumable_ = false;
  listed_ = path.size();
  removed_crossings_ = 0;
  if (seen_.size() < channels) seen_.resize(channels, 0);
}

void WaterFill::list_from_present() {
  int at = 0;
  for (std::size_t c = 0; c < present_.size(); ++c) {
    adj_begin_[c] = at;
    adj_end_[c] = at;  // the fill cursor until every flow is listed
    at += present_[c];
  }
}

void WaterFill::set_pairs(std::size_t flows, std::span<const int> path) {
  // Runs of flows share their first channel (an all-to-all's sender, row by row): its count and list
  // cursor stay in a register along a run, rather than each flow waiting on the last one's store.
  // Within a run the second channels differ from the first, so no other update touches them.
  int run = -1;
  int run_length = 0;
  for (std::size_t f = 0; f < flows; ++f) {
    const int a = path[2 * f];
    ++present_[static_cast<std::size_t>(path[2 * f + 1])];
    if (a != run) {
      if (run >= 0) present_[static_cast<std::size_t>(run)] += run_length;
      run = a;
      run_length = 0;
    }
    ++run_length;
  }
  if (run >= 0) present_[static_cast<std::size_t>(run)] += run_length;
  list_from_present();
  adj_other_.resize(path.size());
  run = -1;
  int at_run = 0;
  for (std::size_t f = 0; f < flows; ++f) {
    const int a = path[2 * f];
    const int b = path[2 * f + 1];
    if (a != run) {
      if (run >= 0) adj_end_[static_cast<std::size_t>(run)] = at_run;
      run = a;
      at_run = adj_end_[static_cast<std::size_t>(a)];
    }
    adj_[static_cast<std::size_t>(at_run)] = static_cast<int>(f);
    adj_other_[static_cast<std::size_t>(at_run)] = b;
    ++at_run;
    const int at_b = adj_end_[static_cast<std::size_t>(b)]++;
    adj_[static_cast<std::size_t>(at_b)] = static_cast<int>(f);
    adj_other_[static_cast<std::size_t>(at_b)] = a;
  }
  if (run >= 0) adj_end_[static_cast<std::size_t>(run)] = at_run;
}

void WaterFill::remove(int flow) {
  const auto f = static_cast<std::size_t>(flow);
  if (removed_[f]) return;
  removed_[f] = 1;
  if (pairs_) {
    const auto a = static_cast<std::size_t>(path_[2 * f]);
    const auto b = static_cast<std::size_t>(path_[2 * f + 1]);
    --present_[a];
    --present_[b];
    if (resumable_) {
      first_touched_round_ = std::min({first_touched_round_, channel_round_[a], channel_round_[b]});
      removed_since_.push_back(flow);
    }
    removed_crossings_ += 2;
    return;
  }
  for (int i = offset_[f]; i < offset_[f + 1]; ++i) {
    const auto c = static_cast<std::size_t>(path_[static_cast<std::size_t>(i)]);
    --present_[c];
    if (resumable_) first_touched_round_ = std::min(first_touched_round_, channel_round_[c]);
  }
  if (resumable_) removed_since_.push_back(flow);
  removed_crossings_ += static_cast<std::size_t>(offset_[f + 1] - offset_[f]);
}

void WaterFill::compact() {
  for (std::size_t c = 0; c < adj_begin_.size(); ++c) {
    int kept = adj_begin_[c];
    // Without a branch per entry: which flows were removed is hard to predict.
    for (int i = adj_begin_[c]; i < adj_end_[c]; ++i) {
      const auto at = static_cast<std::size_t>(i);
      const int f = adj_[at];
      adj_[static_cast<std::size_t>(kept)] = f;
      if (pairs_) adj_other_[static_cast<std::size_t>(kept)] = adj_other_[at];
      kept += 1 - removed_[static_cast<std::size_t>(f)];
    }
    adj_end_[c] = kept;
  }
  listed_ -= removed_crossings_;
  removed_crossings_ = 0;
}

void WaterFill::solve(std::span<const double> capacity, std::vector<double>& rate) {
  solve(capacity);
  rate.assign(rate_.begin(), rate_.end());
}

void WaterFill::solve(std::span<const double> capacity) {
  // Removed flows are skipped in the channels' lists; once they are most of them, dropping them is cheaper.
  if (removed_crossings_ * 2 > listed_) compact();
  if (!resume(capacity)) {
    start(capacity);
    fill();
  }
  first_touched_round_ = kNoRound;
  removed_since_.clear();
}

void WaterFill::start(std::span<const double> capacity) {
  rate_.assign(removed_.size(), 0.0);
  remaining_.assign(capacity.begin(), capacity.end());
  unfixed_.assign(present_.begin(), present_.end());
  fixed_.assign(removed_.begin(), removed_.end());
  charges_ = 0;
}

bool WaterFill::resume(std::span<const double> capacity) {
  if (!resumable_ || !std::equal(capacity.begin(), capacity.end(), last_capacity_.begin(), last_capacity_.end())) {
    return false;
  }
  const std::size_t kept = std::min(static_cast<std::size_t>(first_touched_round_), round_rate_.size());
  // The last solve's state after its last round, taken back to where round `kept` began: each later
  // round's charges undone, last first (the remaining capacity each had before, as logged), its
  // channel's unfixed flows counted again, its flows unfixed.
  double* remaining = remaining_.data();
  int* unfixed = unfixed_.data();
  for (std::size_t k = round_rate_.size(); k-- > kept;) {
    const auto uc = static_cast<std::size_t>(round_channel_[k]);
    unfixed[uc] = round_unfixed_[k];
    channel_round_[uc] = kNoRound;
    const int first_charge = k == 0 ? 0 : round_charge_end_[k - 1];
    for (int q = round_charge_end_[k]; q-- > first_charge;) {
      const auto c = static_cast<std::size_t>(charge_channel_[static_cast<std::size_t>(q)]);
      remaining[c] = charge_before_[static_cast<std::size_t>(q)];
      ++unfixed[c];
    }
    for (const int f : round_flows(k)) {
      fixed_[static_cast<std::size_t>(f)] = 0;
      rate_[static_cast<std::size_t>(f)] = 0;
    }
  }
  // The flows removed since were all fixed in those rounds (each by a channel it crosses, which a
  // removal marks): out of the set now.
  for (const int f : removed_since_) {
    fixed_[static_cast<std::size_t>(f)] = 1;
    for (int i = offset_[static_cast<std::size_t>(f)]; i < offset_[static_cast<std::size_t>(f) + 1]; ++i) {
      --unfixed[static_cast<std::size_t>(path_[static_cast<std::size_t>(i)])];
    }
  }
  fixed_count_ = kept == 0 ? 0 : static_cast<std::size_t>(round_end_[kept - 1]);
  charges_ = kept == 0 ? 0 : static_cast<std::size_t>(round_charge_end_[kept - 1]);
  round_end_.resize(kept);
  round_rate_.resize(kept);
  round_channel_.resize(kept);
  round_charge_end_.resize(kept);
  round_unfixed_.resize(kept);
  // The shares as the fill leaves them after those rounds: each channel's remaining over its unfixed
  // flows (every change to either touched it and stored that quotient), +inf without unfixed flows.
  const std::size_t channels = remaining_.size();
  std::size_t live = 0;
  for (std::size_t c = 0; c < channels; ++c) {
    if (unfixed_[c] > 0) {
      // Overdrawn by rounding: with fewer flows its share would fall rather than rise, and might come
      // first where it did not (not met in the default scenario; the fill starts afresh).
      if (remaining_[c] < 0) return false;
      share_[c] = remaining_[c] / unfixed_[c];
      ++live;
    } else {
      share_[c] = std::numeric_limits<double>::infinity();
    }
  }
  scan_rounds(live);
  return true;
}

// Fixes every unfixed flow of channel uc at rate r and charges it on its other channels; the channels
// whose share changed are left in touched_[0, returned count).
std::size_t WaterFill::fix_channel(std::size_t uc, double r) {
  const std::uint64_t round = ++round_;
  // Plain pointers and counts in locals: stores through the arrays could otherwise be taken to change
  // the members that hold them.
  const int* offset = offset_.data();
  const int* path = path_.data();
  int* unfixed = unfixed_.data();
  double* remaining = remaining_.data();
  std::uint64_t* seen = seen_.data();
  int* fixed = fixed_.data();
  int* order = fixed_order_.data();
  int* touched = touched_.data();
  double* rates = rate_.data();
  int* charge_channel = charge_channel_.data();
  double* charge_before = charge_before_.data();
  std::size_t charges = charges_;
  std::size_t fixed_count = fixed_count_;
  std::size_t touched_count = 0;
  const int* first = adj_.data() + adj_begin_[uc];
  const int* last = adj_.data() + adj_end_[uc];
  if (pairs_) {
    const int* other = adj_other_.data() + adj_begin_[uc];
    // Every flow crosses uc and one other channel (an all-to-all over NVLink: its sender's link up, its
    // receiver's down), listed beside it.
    for (const int* a = first; a != last; ++a, ++other) {
      const auto f = static_cast<std::size_t>(*a);
      if (fixed[f]) continue;
      fixed[f] = 1;
      rates[f] = r;
      order[fixed_count++] = static_cast<int>(f);
      const auto c2 = static_cast<std::size_t>(*other);
      --unfixed[c2];
      charge_channel[charges] = static_cast<int>(c2);
      charge_before[charges++] = remaining[c2];
      remaining[c2] -= r;
      if (seen[c2] != round) {
        seen[c2] = round;
        touched[touched_count++] = static_cast<int>(c2);
      }
    }
  } else {
    for (const int* a = first; a != last; ++a) {
      const auto f = static_cast<std::size_t>(*a);
      if (fixed[f]) continue;
      fixed[f] = 1;
      rates[f] = r;
      order[fixed_count++] = static_cast<int>(f);
      for (int j = offset[f]; j < offset[f + 1]; ++j) {
        const auto c2 = static_cast<std::size_t>(path[j]);
        // Every flow of uc is fixed by this call: its count drops to zero below, and its own share is
        // never read again, so it is not charged.
        if (c2 == uc) continue;
        --unfixed[c2];
        charge_channel[charges] = static_cast<int>(c2);
        charge_before[charges++] = remaining[c2];
        remaining[c2] -= r;
        if (seen[c2] != round) {
          seen[c2] = round;
          touched[touched_count++] = static_cast<int>(c2);
        }
      }
    }
  }
  round_unfixed_.push_back(unfixed[uc]);
  unfixed[uc] = 0;
  fixed_count_ = fixed_count;
  charges_ = charges;
  channel_round_[uc] = static_cast<int>(round_end_.size());
  round_end_.push_back(static_cast<int>(fixed_count));
  round_rate_.push_back(r);
  round_channel_.push_back(static_cast<int>(uc));
  round_charge_end_.push_back(static_cast<int>(charges));
  return touched_count;
}

namespace {

// The first channel with the smallest share, as a scan keeping the first strictly smaller one finds it:
// the least share by independent running minimums (no chain of dependent compares), then its first
// occurrence. Shares are never NaN (finite capacities), so a least share always occurs.
std::size_t first_least(const double* share, std::size_t channels) {
  double m0 = share[0], m1 = share[0], m2 = share[0], m3 = share[0];
  std::size_t c = 0;
  for (; c + 4 <= channels; c += 4) {
    m0 = std::min(m0, share[c]);
    m1 = std::min(m1, share[c + 1]);
    m2 = std::min(m2, share[c + 2]);
    m3 = std::min(m3, share[c + 3]);
  }
  for (; c < channels; ++c) m0 = std::min(m0, share[c]);
  const double least = std::min(std::min(m0, m1), std::min(m2, m3));
  c = 0;
  while (share[c] != least) ++c;
  return c;
}

}  // namespace

void WaterFill::scan_rounds(std::size_t live) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  const std::size_t channels = share_.size();
  while (live > 0) {
    const std::size_t best = first_least(share_.data(), channels);
    const std::size_t touched = fix_channel(best, std::max(share_[best], 0.0));
    share_[best] = kNone;
    --live;
    // Gathered, divided, then stored: the divisions are independent, and as a loop over arrays they
    // run two at a time (a channel left without unfixed flows divides by zero, unused).
    for (std::size_t k = 0; k < touched; ++k) {
      const auto u2 = static_cast<std::size_t>(touched_[k]);
      numerator_[k] = remaining_[u2];
      denominator_[k] = unfixed_[u2];
    }
    for (std::size_t k = 0; k < touched; ++k) numerator_[k] /= denominator_[k];
    for (std::size_t k = 0; k < touched; ++k) {
      const auto u2 = static_cast<std::size_t>(touched_[k]);
      if (unfixed_[u2] > 0) {
        share_[u2] = numerator_[k];
      } else {
        share_[u2] = kNone;
        --live;
      }
    }
  }
}

void WaterFill::fill() {
  const std::size_t channels = remaining_.size();
  fixed_order_.resize(fixed_.size());
  fixed_count_ = 0;
  touched_.resize(channels);
  charge_channel_.resize(path_.size());
  charge_before_.resize(path_.size());
  round_end_.clear();
  round_rate_.clear();
  round_channel_.clear();
  round_charge_end_.clear();
  round_unfixed_.clear();
  channel_round_.assign(channels, kNoRound);
  resumable_ = false;
  if (channels <= kScanChannels) {
    // Few channels (an EP all-to-all crosses 2 per GPU): a scan for the smallest (share, channel) is
    // cheaper than a heap, which would hold one entry per fixed flow. Same order, same result. A share is
    // computed when it changes rather than on every scan; a channel without unfixed flows scans as +inf.
    share_.resize(channels);
    numerator_.resize(channels);
    denominator_.resize(channels);
    std::size_t live = 0;
    // Divided unconditionally (a channel without flows divides by one, unused), so that the loop runs
    // two divisions at a time.
    for (std::size_t c = 0; c < channels; ++c) share_[c] = remaining_[c] / std::max(unfixed_[c], 1);
    for (std::size_t c = 0; c < channels; ++c) {
      if (unfixed_[c] > 0) {
        ++live;
      } else {
        share_[c] = std::numeric_limits<double>::infinity();
      }
    }
    last_capacity_.assign(remaining_.begin(), remaining_.end());
    scan_rounds(live);
    resumable_ = true;
    return;
  }
  heap_.clear();
  const auto later = std::greater<std::pair<double, int>>();
  for (std::size_t c = 0; c < channels; ++c) {
    if (unfixed_[c] > 0) heap_.emplace_back(remaining_[c] / unfixed_[c], static_cast<int>(c));
  }
  std::make_heap(heap_.begin(), heap_.end(), later);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const auto [share, c] = heap_.back();
    heap_.pop_back();
    const auto uc = static_cast<std::size_t>(c);
    // A stale entry: this channel's share has changed since it was pushed (a newer entry exists).
    if (unfixed_[uc] == 0 || share != remaining_[uc] / unfixed_[uc]) continue;
    const std::size_t touched = fix_channel(uc, std::max(share, 0.0));
    // One entry per channel whose share changed, with its final share: the intermediate ones a push per
    // flow would add are stale before the next pop anyway.
    for (std::size_t k = 0; k < touched; ++k) {
      const int c2 = touched_[k];
      const auto u2 = static_cast<std::size_t>(c2);
      if (unfixed_[u2] == 0) continue;
      heap_.emplace_back(remaining_[u2] / unfixed_[u2], c2);
      std::push_heap(heap_.begin(), heap_.end(), later);
    }
  }
}

}  // namespace nvl::fabric
