#pragma once
// serve --workers for the live tests: the options that open every worker's endpoint on free ports, and
// one engine's figure as its own /metrics shows it.
#include <cstdint>
#include <map>
#include <string>

#include "tests/live/http_test_client.h"
#include "tests/live/live_test_server.h"
#include "tests/live/prometheus_scrape.h"

namespace nvl::live_test {

inline emu::live::LiveServerOptions worker_options() {
  emu::live::LiveServerOptions opts;
  opts.workers = true;
  opts.worker_http_port = 0;
  opts.kv_events_port = 0;
  return opts;
}

// The sum of `name`'s samples with these labels, `engine` among them, on the endpoint at `port`.
inline double engine_figure(std::uint16_t port, const std::string& name, std::int32_t engine,
                            std::map<std::string, std::string> more = {}) {
  more["engine"] = std::to_string(engine);
  return metric_total(get(port, "/metrics").body, name, more);
}

}  // namespace nvl::live_test
