#include "emu/live/http_session.h"

#include <chrono>
#include <cstdio>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "emu/rt/errors.h"

namespace nvl::emu::live {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr int kHttpVersion = 11;

std::string chunk(const std::string& data) {
  std::string out;
  char size[32];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  out.append(size, static_cast<std::size_t>(n));
  out += data;
  out += "\r\n";
  return out;
}

ApiError refusal_error(const Admission& a) {
  const int status = http_status(a.refusal);
  switch (a.refusal) {
    case Refusal::queue_full: return ApiError(status, a.detail, "rate_limit_error", "", "rate_limit_exceeded");
    case Refusal::too_long:
      return ApiError(status, a.detail, "invalid_request_error", "max_tokens", "context_length_exceeded");
    case Refusal::over_context:
      return ApiError(status, a.detail, "invalid_request_error", "messages", "context_length_exceeded");
    default: return ApiError(status, a.detail, "service_unavailable", "", "no_healthy_worker");
  }
}

// One request's wait for the engine: its answer or its deadline, whichever reaches the strand first.
class EngineWait {
 public:
  EngineWait(const net::any_io_executor& strand, std::chrono::milliseconds limit) : timer_(strand, limit) {}
  template <class Handler>
  void on_deadline(Handler&& h) {
    timer_.async_wait(std::forward<Handler>(h));
  }
  bool over() const { return over_; }
  // True for the first caller only: it answers the request.
  bool finish() {
    if (over_) return false;
    over_ = true;
    timer_.cancel();
    return true;
  }

 private:
  net::steady_timer timer_;
  bool over_ = false;
};

}  // namespace

HttpSession::HttpSession(net::ip::tcp::socket socket, LiveEngine& engine, const HttpConfig& config,
                         std::atomic<int>& generating)
    : stream_(std::move(socket)), engine_(engine), config_(config), generating_(generating) {}

void HttpSession::run() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
}

void HttpSession::read_request() {
  parser_.emplace();
  parser_->body_limit(config_.body_limit_bytes);
  stream_.expires_after(config_.read_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

void HttpSession::on_read(beast::error_code ec) {
  if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::connection_reset) {
    close();
    return;
  }
  if (ec == http::error::body_limit) {
    respond_error(ApiError(413,
                           "the request body is larger than the limit of " + std::to_string(config_.body_limit_bytes) +
                               " bytes",
                           "invalid_request_error", "", "request_too_large"));
    return;
  }
  if (ec) {
    respond_error(ApiError::bad_request("malformed HTTP request: " + ec.message()));
    return;
  }
  const Request req = parser_->release();
  keep_alive_ = req.keep_alive();
  try {
    dispatch(req);
  } catch (const ApiError& e) {
    respond_error(e);
  } catch (const std::exception& e) {
    spdlog::error("http: {} {}: {}", std::string(req.method_string()), std::string(req.target()), e.what());
    respond_error(ApiError(500, e.what(), "server_error"));
  }
}

void HttpSession::dispatch(const Request& req) {
  std::string path(req.target());
  if (const auto q = path.find('?'); q != std::string::npos) path.resize(q);
  const auto method = req.method();
  const auto only = [&](http::verb v) {
    if (method != v) {
      throw ApiError(405, "method " + std::string(req.method_string()) + " is not allowed on " + path,
                     "invalid_request_error");
    }
  };
  if (path == "/v1/completions") {
    only(http::verb::post);
    generate(Endpoint::completions, req);
  } else if (path == "/v1/chat/completions") {
    only(http::verb::post);
    generate(Endpoint::chat, req);
  } else if (path == "/v1/models") {
    only(http::verb::get);
    respond_json(200, model_list(engine_.model_name(), config_.started_s), keep_alive_);
  } else if (path == "/health") {
    only(http::verb::get);
    health();
  } else if (path == "/metrics") {
    only(http::verb::get);
    metrics();
  } else if (path == "/reset_prefix_cache") {
    only(http::verb::post);
    if (!engine_.reset_prefix_cache(config_.engine)) throw ApiError(503, "the server is shutting down", "service_unavailable");
    respond_json(200, {{"status", "ok"}}, keep_alive_);
  } else if (path == "/admin/fault" && config_.engine < 0) {
    only(http::verb::post);
    fault(req);
  } else {
    throw ApiError(404, "no route " + path, "invalid_request_error", "", "not_found");
  }
}

void HttpSession::respond(Response res) {
  res.version(kHttpVersion);
  res.set(http::field::server, "nvl72emu");
  res.prepare_payload();
  const bool keep = res.keep_alive() && !close_after_write_;
  auto msg = std::make_shared<Response>(std::move(res));
  http::async_write(stream_, *msg, [self = shared_from_this(), msg, keep](beast::error_code ec, std::size_t) {
    if (ec || !keep) {
      self->close();
      return;
    }
    self->read_request();
  });
}

void HttpSession::respond_json(int status, const nlohmann::json& body, bool keep_alive) {
  Response res{static_cast<http::status>(status), kHttpVersion};
  res.set(http::field::content_type, "application/json");
  res.keep_alive(keep_alive);
  res.body() = body.dump();
  respond(std::move(res));
}

void HttpSession::respond_error(const ApiError& e) {
  if (e.status() != 404 && e.status() != 405) engine_.metrics().record_rejected(e.status());
  respond_json(e.status(), e.body(), false);
}

void HttpSession::health() {
  if (config_.engine >= 0 ? !engine_.healthy(config_.engine) : !engine_.healthy()) {
    respond_error(ApiError(503, config_.engine >= 0 ? engine_name() + " is not serving" : "no healthy worker",
                           "service_unavailable", "", "no_healthy_worker"));
    return;
  }
  respond_json(200, {{"status", "ok"}, {"in_flight", engine_.in_flight()}, {"lag", engine_.emulation_lag_s()}},
               keep_alive_);
}

void HttpSession::metrics() {
  auto wait = std::make_shared<EngineWait>(stream_.get_executor(), config_.engine_wait);
  auto self = shared_from_this();
  const bool asked = engine_.read_gauges([self, wait](const EngineGauges& g) {
    net::post(self->stream_.get_executor(), [self, wait, g] {
      if (wait->finish()) self->send_metrics(g);
    });
  });
  if (!asked) {
    wait->finish();
    send_metrics(engine_.last_gauges());
    return;
  }
  // A busy runtime thread: the counters are still current, the gauges the last read.
  wait->on_deadline([self, wait](beast::error_code ec) {
    if (!ec && wait->finish()) self->send_metrics(self->engine_.last_gauges());
  });
}

void HttpSession::send_metrics(const EngineGauges& g) {
  Response res{http::status::ok, kHttpVersion};
  res.set(http::field::content_type, "text/plain; version=0.0.4");
  res.body() = engine_.metrics().prometheus_text(g, engine_.model_name(), config_.engine);
  res.keep_alive(keep_alive_);
  respond(std::move(res));
}

void HttpSession::fault(const Request& req) {
  const nlohmann::json body = nlohmann::json::parse(req.body(), nullptr, false);
  if (body.is_discarded()) throw ApiError::bad_request("the body is not valid JSON");
  auto wait = std::make_shared<EngineWait>(stream_.get_executor(), config_.engine_wait);
  auto self = shared_from_this();
  const auto ticket = engine_.inject(body, [self, wait](InjectOutcome o) {
    net::post(self->stream_.get_executor(), [self, wait, o = std::move(o)] {
      if (wait->finish()) self->send_fault_outcome(o);
    });
  });
  if (!ticket) throw ApiError(503, "the server is shutting down", "service_unavailable");
  wait->on_deadline([self, wait, ticket](beast::error_code ec) {
    // Once the runtime thread has taken the fault it hits at once: its answer follows.
    if (ec || wait->over() || !ticket->withdraw()) return;
    wait->finish();
    self->respond_error(ApiError(503,
                                 "the emulated rack did not take the fault within " +
                                     std::to_string(self->config_.engine_wait.count()) +
                                     " ms (its runtime thread is busy); it was not injected, try again",
                                 "service_unavailable", "", "engine_busy"));
  });
}

void HttpSession::send_fault_outcome(const InjectOutcome& o) {
  if (!o.error) {
    respond_json(200, {{"injected", o.injected}}, keep_alive_);
    return;
  }
  try {
    std::rethrow_exception(o.error);
  } catch (const rt::InputError& e) {
    respond_error(ApiError::bad_request(e.what()));
  } catch (const std::exception& e) {
    respond_error(ApiError(503, e.what(), "service_unavailable"));
  }
}

std::string HttpSession::engine_name() const {
  return config_.engine < engine_.ranks() ? "DP rank " + std::to_string(config_.engine)
                                          : "prefill instance " + std::to_string(config_.engine - engine_.ranks());
}

std::pair<std::int32_t, std::optional<PdTarget>> HttpSession::generation_target() const {
  const bool prefill_worker = config_.engine >= engine_.ranks();
  const auto& b = request_->bootstrap;
  if (!b) {
    if (prefill_worker) {
      throw ApiError::bad_request("'bootstrap_room' is required: a prefill worker serves the prefill half of a P/D "
                                  "pair, which a P/D router sends with its decode half to a decode worker",
                                  "bootstrap_room");
    }
    return {config_.engine, std::nullopt};
  }
  if (config_.engine < 0) {
    throw ApiError::bad_request("'bootstrap_room' is for the workers' ports (serve --workers): this server's own "
                                "router splits prefill and decode itself",
                                "bootstrap_room");
  }
  const std::int64_t instance = b->port - config_.bootstrap_port;
  if (instance < 0 || instance >= engine_.prefill_instances()) {
    throw ApiError::bad_request(
        "'bootstrap_port' " + std::to_string(b->port) + " is no prefill instance's" +
            (engine_.prefill_instances() == 0
                 ? std::string(" (this deployment has none)")
                 : " (theirs: " + std::to_string(config_.bootstrap_port) + " to " +
                       std::to_string(config_.bootstrap_port + engine_.prefill_instances() - 1) + ")"),
        "bootstrap_port");
  }
  if (prefill_worker && instance != config_.engine - engine_.ranks()) {
    throw ApiError::bad_request("'bootstrap_port' " + std::to_string(b->port) + " is not this prefill instance's (" +
                                    std::to_string(config_.bootstrap_port + config_.engine - engine_.ranks()) + ")",
                                "bootstrap_port");
  }
  return {prefill_worker ? -1 : config_.engine, PdTarget{static_cast<std::int32_t>(instance), b->room, prefill_worker}};
}

void HttpSession::generate(Endpoint endpoint, const Request& req) {
  request_ = parse_completion_request(endpoint, req.body(), engine_.model_name());
  const auto [rank, pd] = generation_target();
  filler_.emplace(engine_.seed(), request_->prompt_text);
  stop_.emplace(request_->stop);
  const Admission a = engine_.submit_text(
      request_->prompt_text, request_->max_tokens,
      [self = shared_from_this()](const StreamUpdate& u) {
        net::post(self->stream_.get_executor(), [self, u] { self->on_update(u); });
      },
      rank, pd);
  if (a.refusal != Refusal::none) throw refusal_error(a);
  id_ = a.id;
  counted_ = true;
  ++generating_;
  context_.id = std::string(endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-") + std::to_string(id_);
  context_.created_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  context_.model = engine_.model_name();
  context_.endpoint = endpoint;
  stream_.expires_never();
  if (request_->stream) {
    outbox_.push_back(
        "HTTP/1.1 200 OK\r\nServer: nvl72emu\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n");
    write_next();
  }
  watch_disconnect();
}

void HttpSession::watch_disconnect() {
  stream_.async_read_some(net::buffer(probe_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    if (self->over_) return;
    if (!ec) {
      self->watch_disconnect();  // a client sending more while it waits: ignored
      return;
    }
    self->over_ = true;
    self->engine_.cancel(self->id_);
    self->close();
  });
}

void HttpSession::on_update(const StreamUpdate& u) {
  if (over_) return;
  const std::int64_t first = u.output_tokens - u.new_tokens;
  if (u.new_tokens > 0) {
    emit(stop_->feed(filler_->tokens(first, u.new_tokens)), first == 0);
    if (stop_->stopped()) {
      over_ = true;
      engine_.stop_at_sequence(id_);
      StreamUpdate last = u;
      last.finished = true;
      if (request_->stream) {
        finish_stream(last, "stop");
      } else {
        finish_whole(last, "stop");
      }
      return;
    }
  }
  if (!u.finished) return;
  over_ = true;
  if (u.failure.empty()) emit(stop_->flush(), false);
  if (request_->stream) {
    finish_stream(u, "length");
  } else {
    finish_whole(u, "length");
  }
}

void HttpSession::emit(const std::string& text, bool first) {
  if (!request_->stream) {
    text_ += text;
  } else if (!text.empty() || first) {
    send_event(stream_chunk(context_, text, first, std::nullopt).dump());
  }
}

void HttpSession::finish_stream(const StreamUpdate& u, const std::string& reason) {
  if (!u.failure.empty()) {
    send_event(ApiError(503, u.failure, "service_unavailable", "", "request_failed").body().dump());
  } else {
    send_event(stream_chunk(context_, "", u.output_tokens == 0, reason).dump());
    if (request_->include_usage) send_event(usage_chunk(context_, u.prompt_tokens, u.output_tokens).dump());
  }
  send_event("[DONE]");
  outbox_.push_back("0\r\n\r\n");
  close_after_write_ = true;
  write_next();
}

void HttpSession::finish_whole(const StreamUpdate& u, const std::string& reason) {
  close_after_write_ = true;
  if (!u.failure.empty()) {
    respond_error(ApiError(503, u.failure, "service_unavailable", "", "request_failed"));
    return;
  }
  respond_json(200, full_response(context_, text_, reason, u.prompt_tokens, u.output_tokens), false);
}

void HttpSession::send_event(const std::string& data) {
  outbox_.push_back(chunk("data: " + data + "\n\n"));
  write_next();
}

void HttpSession::write_next() {
  if (writing_) return;
  if (outbox_.empty()) {
    if (close_after_write_) close();
    return;
  }
  writing_ = true;
  net::async_write(stream_, net::buffer(outbox_.front()), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->writing_ = false;
    self->outbox_.pop_front();
    if (ec) {
      if (!self->over_) {
        self->over_ = true;
        self->engine_.cancel(self->id_);
      }
      self->close();
      return;
    }
    self->write_next();
  });
}

void HttpSession::close() {
  if (counted_) {
    counted_ = false;
    --generating_;
  }
  beast::error_code ec;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  stream_.socket().close(ec);
}

}  // namespace nvl::emu::live
