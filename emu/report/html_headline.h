#pragma once
// The HTML report's first section: the figures a performance engineer reads first (latency percentiles,
// throughput per GPU and per user, requests, KV hit rates, link utilisation, checks) as tables with units.
#include <string>

#include "emu/report/run_report.h"

namespace nvl::emu {

std::string headline_html(const RunReport& r);

}  // namespace nvl::emu
