#pragma once
// The fast path: each member's completion time for a collective plan on idle, healthy links, solved
// offline with the same max-min model as the live flow model (progressive filling, then the next flow
// to finish, until all have), without runtime events. Callers cache the answer by the collective's
// signature, so identical collectives are priced once.
#include <vector>

#include "fabric/collective_plan.h"
#include "fabric/water_fill.h"

namespace nvl::fabric {

class CollectivePricer {
 public:
  // Member completion times, measured from the moment every member has arrived.
  std::vector<rt::Duration> price(const CollectivePlan& plan, int members, const Fabric& fabric);

 private:
  WaterFill fill_;
  std::vector<int> local_;
  std::vector<int> offset_, path_, active_;
  std::vector<double> cap_, rate_, remaining_;
};

}  // namespace nvl::fabric
