// nvl72emu serve SCENARIO [--time-scale X] [--http-port P] [--grpc-port Q] [--host ADDR]: serves the
// scenario's deployment in real time to network clients (OpenAI-compatible HTTP, the engine's gRPC
// frontend) until SIGINT or SIGTERM. The scenario's workload is not run: requests come from the network.
#include <csignal>
#include <iostream>
#include <memory>

#include <pthread.h>

#include "emu/live/live_server.h"
#include "emu/rt/errors.h"
#include "emu/scenario/scenario.h"
#include "tools/commands.h"

namespace nvl::tools {

namespace {

struct ServeOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  emu::live::LiveServerOptions server;
};

int serve(ServeOptions opts) {
  const emu::Scenario scenario = emu::load_scenario(opts.scenario, opts.overrides);
  // Block the stop signals before any thread starts, so every thread inherits the mask and this one
  // takes them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::unique_ptr<emu::live::LiveServer> live;
  try {
    live = std::make_unique<emu::live::LiveServer>(scenario, opts.server);
  } catch (const rt::InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw rt::InputError(opts.scenario, "serve", e.what());  // a port in use, a bad --host
  }
  emu::live::LiveServer& server = *live;
  std::cout << "serving " << server.engine().model_name() << " (" << scenario.name << ") at time scale "
            << opts.server.engine.time_scale << ": http://" << opts.server.address << ":" << server.http_port();
  if (server.grpc_port() > 0) std::cout << ", grpc " << opts.server.address << ":" << server.grpc_port();
  if (opts.server.workers) {
    const std::int32_t ranks = server.engine().ranks();
    const std::int32_t prefills = server.engine().prefill_instances();
    std::cout << "; " << ranks << " DP-rank workers at http ports " << server.worker_http_port(0) << "-"
              << server.worker_http_port(ranks - 1) << ", KV events (ZMQ) at ports " << server.kv_events_port(0) << "-"
              << server.kv_events_port(ranks - 1);
    for (std::int32_t i = 0; i < prefills; ++i) {
      std::cout << "; prefill instance " << i << " at http port " << server.worker_http_port(ranks + i)
                << ", bootstrap port " << opts.server.bootstrap_port + i;
    }
  }
  std::cout << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::cout << "stopping (signal " << signal << ")" << std::endl;
  server.stop();
  const auto& m = server.engine().metrics();
  std::cout << "served: " << m.completed() << " completed, " << m.failed() << " failed, " << m.cancelled()
            << " cancelled" << std::endl;
  return 0;
}

}  // namespace

void register_serve_command(CommandRegistry& registry) {
  auto opts = std::make_shared<ServeOptions>();
  CLI::App* app = registry.add("serve", "Serve a scenario's deployment in real time over HTTP (OpenAI API) and gRPC",
                               [opts] { return serve(*opts); });
  app->add_option("SCENARIO", opts->scenario, "Scenario file (JSON); its workload is not run")->required();
  app->add_option("--time-scale", opts->server.engine.time_scale, "Emulated seconds per wall-clock second")
      ->check(CLI::PositiveNumber);
  app->add_option("--http-port", opts->server.http_port, "HTTP port (0: any free port)")->check(CLI::Range(0, 65535));
  app->add_option("--grpc-port", opts->server.grpc_port, "gRPC port (0: any free port, -1: no gRPC)")
      ->check(CLI::Range(-1, 65535));
  app->add_option("--host", opts->server.address, "Address to listen on");
  app->add_option("--max-in-flight", opts->server.engine.max_in_flight,
                  "Requests in flight beyond which new ones get 429")
      ->check(CLI::PositiveNumber);
  app->add_option("--max-body-bytes", opts->server.http.body_limit_bytes, "Larger request bodies get 413")
      ->check(CLI::PositiveNumber);
  app->add_flag("--workers", opts->server.workers,
               "Also give every DP rank its own OpenAI-compatible endpoint and ZMQ KV event stream (vLLM's), "
               "and every prefill instance an endpoint for the prefill halves of P/D pairs (SGLang's bootstrap)");
  app->add_option("--worker-http-port", opts->server.worker_http_port,
                  "With --workers: DP rank r's HTTP port is this + r, prefill instance i's this + ranks + i "
                  "(0: any free ports)")
      ->check(CLI::Range(0, 65535));
  app->add_option("--bootstrap-port", opts->server.bootstrap_port,
                  "With --workers: prefill instance i's bootstrap port, as P/D requests name it, is this + i "
                  "(nothing listens on it: the pair meets inside the emulated rack)")
      ->check(CLI::Range(1, 65535));
  app->add_option("--kv-events-port", opts->server.kv_events_port,
                  "With --workers: DP rank r publishes its KV events on this + r (0: any free ports)")
      ->check(CLI::Range(0, 65535));
  app->add_option("--set", opts->overrides, "Override a scenario key: key.path=value (JSON value, else a string)");
}

}  // namespace nvl::tools
