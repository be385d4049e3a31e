#pragma once
// Max-min fair rates by progressive filling: repeatedly take the channel whose remaining capacity per
// unfixed flow is smallest, fix its flows at that share, and charge them on every channel they cross.
// Works on local indices so the flow model can solve one connected component and the collective
// pricer an isolated set of flows with the same code. Buffers are kept between calls.
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace nvl::fabric {

class WaterFill {
 public:
  // Flow f crosses channels path[offset[f] .. offset[f+1]); every flow crosses at least one channel.
  // rate[f] receives the flow's share in the units of capacity.
  void solve(const std::vector<double>& capacity, const std::vector<int>& offset, const std::vector<int>& path,
             std::vector<double>& rate);

  // The same for a set of flows solved again and again as flows leave it (the collective pricer: after
  // each completion). set_flows() takes the flows (offset and path as above; they must outlive the
  // solves), remove() takes one out, and solve() gives every flow still in the set the rate that the
  // one-shot solve of just those flows, in the same order, would give: bit for bit, as it charges them
  // in that order. Removed flows get rate 0.
  // A solve after removals, on the same capacities, takes over the last solve's rounds before the first
  // one whose channel a removed flow crosses: those rounds fix the same flows at the same rates (the
  // removals only raise the shares of the channels they touch, so no other channel comes first). The
  // last solve's state is taken back to where that round began by undoing the later rounds' charges
  // (logged as they were made: bit for bit), and only those rounds are filled again; a flow finishing
  // is mostly one of the fastest, fixed in the last rounds.
  void set_flows(std::size_t channels, std::span<const int> offset, std::span<const int> path);
  void remove(int flow);
  // The flows crossing a channel, in flow order, once per crossing (removed ones until a solve drops them).
  std::span<const int> flows_on(int channel) const {
    const auto c = static_cast<std::size_t>(channel);
    return {adj_.data() + adj_begin_[c], static_cast<std::size_t>(adj_end_[c] - adj_begin_[c])};
  }
  void solve(std::span<const double> capacity, std::vector<double>& rate);
  // The same, its rates left in the rounds below (the collective pricer reads them there).
  void solve(std::span<const double> capacity);

  // The last solve's rounds, in order: the flows of round k were fixed together at rate round_rate(k).
  std::size_t rounds() const { return round_rate_.size(); }
  double round_rate(std::size_t k) const { return round_rate_[k]; }
  std::span<const int> round_flows(std::size_t k) const {
    const int first = k == 0 ? 0 : round_end_[k - 1];
    return {fixed_order_.data() + first, static_cast<std::size_t>(round_end_[k] - first)};
  }

 private:
  // set_flows' lists: adj_begin_ and adj_end_ at the start of each channel's, from present_.
  void list_from_present();
  // set_flows' counts and lists when pairs_.
  void set_pairs(std::size_t flows, std::span<const int> path);
  std::size_t fix_channel(std::size_t uc, double r);
  void fill();
  // A solve's state before its first round: every flow left unfixed, every channel at its capacity.
  void start(std::span<const double> capacity);
  // Whether the last solve's first rounds can be taken over (see above), and takes them over if so,
  // filling the rest.
  bool resume(std::span<const double> capacity);
  // Scans for the least share from the state fill() or resume() left, fixing channels until none is left.
  void scan_rounds(std::size_t live);
  // Drops removed flows from the channels' flow lists (keeping their order).
  void compact();

  static constexpr std::size_t kScanChannels = 512;  // up to this many channels, scanned rather than heaped

  // The flows, from set_flows(). Flags are ints: a char store may alias anything, which makes the
  // compiler reload every member inside the fill's loops.
  std::span<const int> offset_, path_;
  // Per channel, the flows crossing it in flow order: adj_[adj_begin_[c] .. adj_end_[c]).
  std::vector<int> adj_begin_, adj_end_, adj_;
  std::vector<int> adj_other_;  // with pairs_: beside each entry of adj_, the flow's other channel
  std::vector<int> present_;           // per channel: crossings by flows still in the set
  std::vector<int> removed_;           // per flow
  bool pairs_ = false;                 // every flow crosses exactly two distinct channels
  std::size_t listed_ = 0;             // entries in the channels' lists
  std::size_t removed_crossings_ = 0;  // of which belong to removed flows
  // One solve's state.
  std::vector<double> remaining_;
  std::vector<double> share_;  // remaining_ / unfixed_, +inf without unfixed flows (scan)
  std::vector<double> numerator_, denominator_;  // a round's new shares, by touched_ entry (scan)
  std::vector<int> unfixed_;
  std::vector<int> fixed_;
  std::vector<std::uint64_t> seen_;  // the fill round in which a channel was last touched
  std::uint64_t round_ = 0;
  std::vector<int> touched_;  // sized to the channels; a round fills the front
  std::vector<std::pair<double, int>> heap_;
  std::vector<int> fixed_order_;  // flows in the order they were fixed: the first fixed_count_
  std::size_t fixed_count_ = 0;
  std::vector<int> round_end_;  // per round: its end in fixed_order_
  std::vector<double> round_rate_;
  std::vector<int> round_channel_;  // per round: the channel that fixed its flows
  std::vector<int> round_unfixed_;  // per round: that channel's unfixed flows before it fixed them
  // Every charge of a flow's rate on a channel, in order: the channel and its remaining capacity before.
  std::vector<int> charge_channel_;
  std::vector<double> charge_before_;
  std::size_t charges_ = 0;
  std::vector<int> round_charge_end_;  // per round: the end of its charges
  std::vector<double> rate_;           // the last solve's rates, by flow
  std::vector<int> removed_since_;     // flows removed since the last solve
  // For resume(): whether the rounds above are those of the last solve of this set (a scan's), on
  // last_capacity_; per channel the round it fixed (or none); and the first round a removal since
  // then touched.
  static constexpr int kNoRound = std::numeric_limits<int>::max();
  bool resumable_ = false;
  std::vector<double> last_capacity_;
  std::vector<int> channel_round_;
  int first_touched_round_ = kNoRound;
};

}  // namespace nvl::fabric
