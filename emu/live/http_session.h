#pragma once
// One HTTP connection of the OpenAI-compatible server (Boost.Beast). Every handler runs on the
// connection's strand; the engine's token updates are posted onto it. A generation answers with
// server-sent events (chunked) or one JSON body and then closes the connection; while it runs, a read
// stays posted on the socket so that a client that goes away is noticed at once and its request is
// cancelled (which frees its KV). What needs the engine's runtime thread (/metrics, /admin/fault) is
// answered when the engine's answer reaches the strand, or at a deadline: the I/O thread never waits.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "emu/live/api_error.h"
#include "emu/live/filler_text.h"
#include "emu/live/stop_matcher.h"
#include "emu/live/live_engine.h"
#include "emu/live/openai_api.h"

namespace nvl::emu::live {

struct HttpConfig {
  std::uint64_t body_limit_bytes = 4 * 1024 * 1024;  // larger request bodies get 413
  std::chrono::seconds read_timeout{30};             // for a request's header and body
  // How long /metrics and /admin/fault wait for the engine's runtime thread: /metrics then answers
  // with the gauges last read, /admin/fault with 503 (the fault withdrawn, not injected).
  std::chrono::milliseconds engine_wait = LiveEngine::kAnswerWait;
  std::int64_t started_s = 0;                        // Unix time the server started (model "created")
  // >= 0: the endpoint of this engine's worker (serve --workers): a DP rank's (below LiveEngine::ranks())
  // or a prefill instance's (numbered after them); its requests are served there, its /metrics and
  // /health are the engine's own, and it has no /admin routes.
  std::int32_t engine = -1;
  // The first prefill instance's bootstrap port (SGLang's --disaggregation-bootstrap-port; instance i
  // has this + i): what a P/D router names a prefill worker by in the requests it sends.
  std::int64_t bootstrap_port = 8998;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // `generating` counts the sessions with a generation not yet closed (the server waits for them at shutdown).
  HttpSession(boost::asio::ip::tcp::socket socket, LiveEngine& engine, const HttpConfig& config,
              std::atomic<int>& generating);
  void run();

 private:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  void read_request();
  void on_read(boost::beast::error_code ec);
  void dispatch(const Request& req);
  void respond(Response res);
  void respond_json(int status, const nlohmann::json& body, bool keep_alive);
  void respond_error(const ApiError& e);
  void metrics();
  void health();
  void fault(const Request& req);
  void send_metrics(const EngineGauges& g);
  void send_fault_outcome(const InjectOutcome& o);
  void generate(Endpoint endpoint, const Request& req);
  // Where a generation asked of this endpoint goes: its DP rank, or the half of a P/D pair it names.
  std::pair<std::int32_t, std::optional<PdTarget>> generation_target() const;
  std::string engine_name() const;
  // Generation, on the strand.
  void on_update(const StreamUpdate& u);
  // Sends (streaming) or keeps (whole) answer text.
  void emit(const std::string& text, bool first);
  // Ends the answer: `u` is the last update, `reason` OpenAI's finish_reason.
  void finish_stream(const StreamUpdate& u, const std::string& reason);
  void finish_whole(const StreamUpdate& u, const std::string& reason);
  void send_event(const std::string& data);
  void write_next();
  void watch_disconnect();
  void close();

  boost::beast::tcp_stream stream_;
  LiveEngine& engine_;
  const HttpConfig& config_;
  std::atomic<int>& generating_;
  bool counted_ = false;  // this session is in generating_
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool keep_alive_ = false;  // the request being answered asked to keep the connection
  // The generation in progress.
  std::optional<CompletionRequest> request_;
  std::optional<FillerText> filler_;
  std::optional<StopMatcher> stop_;
  ResponseContext context_;
  engine::RequestId id_ = 0;
  std::string text_;  // non-streaming: the answer so far
  bool over_ = false;  // the request finished, failed or was cancelled
  std::deque<std::string> outbox_;  // streaming: bytes not yet written, the front one being written
  bool writing_ = false;
  bool close_after_write_ = false;
  char probe_[64] = {};
};

}  // namespace nvl::emu::live
