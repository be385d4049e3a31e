#pragma once
// Max-min fair rates by progressive filling: repeatedly take the channel whose remaining capacity per
// unfixed flow is smallest, fix its flows at that share, and charge them on every channel they cross.
// Works on local indices so the flow model can solve one connected component and the collective
// pricer an isolated set of flows with the same code. Buffers are kept between calls.
#include <cstdint>
#include <utility>
#include <vector>

namespace nvl::fabric {

class WaterFill {
 public:
  // Flow f crosses channels path[offset[f] .. offset[f+1]); every flow crosses at least one channel.
  // rate[f] receives the flow's share in the units of capacity.
  void solve(const std::vector<double>& capacity, const std::vector<int>& offset, const std::vector<int>& path,
             std::vector<double>& rate);

 private:
  std::vector<double> remaining_;
  std::vector<int> unfixed_;
  std::vector<int> adj_offset_;
  std::vector<int> adj_;
  std::vector<int> fill_;
  std::vector<char> fixed_;
  std::vector<std::uint64_t> seen_;  // the fill round in which a channel was last touched
  std::vector<int> touched_;
  std::vector<int> active_;  // channels with unfixed flows, when scanned rather than heaped
  static constexpr std::size_t kScanChannels = 512;
  std::uint64_t round_ = 0;
  std::vector<std::pair<double, int>> heap_;
};

}  // namespace nvl::fabric
