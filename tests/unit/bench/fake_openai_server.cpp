#include "tests/unit/bench/fake_openai_server.h"

#include <chrono>

namespace llmserve::bench {
namespace {

std::string event(const nlohmann::json& j) {
  return "data: " + j.dump() + "\n\n";
}

// Writes `s` in two pieces split mid-line, so the client sees events cut at odd places.
void write_split(httplib::DataSink& sink, const std::string& s) {
  const size_t half = s.size() / 2;
  sink.write(s.data(), half);
  sink.write(s.data() + half, s.size() - half);
}

}  // namespace

FakeOpenAiServer::FakeOpenAiServer(FakeScript script) : script_(std::move(script)) {
  server_.Post("/v1/completions",
               [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeOpenAiServer::~FakeOpenAiServer() {
  server_.stop();
  thread_.join();
}

std::vector<nlohmann::json> FakeOpenAiServer::bodies() const {
  std::lock_guard lock(mu_);
  return bodies_;
}

void FakeOpenAiServer::handle(const httplib::Request& req, httplib::Response& res) {
  ++seen_;
  const auto body = nlohmann::json::parse(req.body, nullptr, false);
  {
    std::lock_guard lock(mu_);
    bodies_.push_back(body);
  }
  auto error = [&](int status, const std::string& msg) {
    res.status = status;
    res.set_content(nlohmann::json{{"error", {{"message", msg}, {"type", "x"}}}}.dump(),
                    "application/json");
  };
  if (!script_.api_key.empty() &&
      req.get_header_value("Authorization") != "Bearer " + script_.api_key) {
    return error(401, "invalid api key");
  }
  if (script_.status != 200) return error(script_.status, "scripted failure");
  if (body.is_discarded() || !body.contains("max_tokens")) return error(400, "bad body");
  const int max_tokens = body["max_tokens"].get<int>();
  const int prompt_tokens = body["prompt"].is_array() ? static_cast<int>(body["prompt"].size()) : 3;
  const int now = ++in_flight_;
  for (int m = max_in_flight_.load(); now > m && !max_in_flight_.compare_exchange_weak(m, now);) {
  }
  const FakeScript s = script_;
  res.set_chunked_content_provider("text/event-stream", [this, s, max_tokens, prompt_tokens](
                                                            size_t, httplib::DataSink& sink) {
    sink.write(": hello\n\n", 9);
    for (int i = 0; i < max_tokens; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(i == 0 ? s.first_delay_ms : s.gap_ms));
      nlohmann::json choice = {
          {"index", 0},
          {"text", "t" + std::to_string(i)},
          {"finish_reason", i + 1 == max_tokens ? nlohmann::json("length") : nlohmann::json()}};
      write_split(
          sink, event({{"object", "text_completion"}, {"choices", {choice}}, {"usage", nullptr}}));
    }
    write_split(sink, event({{"choices", nlohmann::json::array()},
                             {"usage",
                              {{"prompt_tokens", prompt_tokens},
                               {"completion_tokens", max_tokens},
                               {"total_tokens", prompt_tokens + max_tokens}}}}));
    write_split(sink, "data: [DONE]\n\n");
    --in_flight_;
    sink.done();
    return true;
  });
}

}  // namespace llmserve::bench
