// The HTTP server in process on a free port, driven by httplib::Client, against FakeEngine.
#include "server/http/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "server/http/sse.h"
#include "tests/unit/server/chatml_renderer.h"
#include "tests/unit/server/fake_engine.h"

namespace llmserve {
namespace {

using nlohmann::json;
using testing::FakeEngine;
using testing::FakeScript;

using testing::chatml;

class HttpServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions o = {}) {
    o.host = "127.0.0.1";
    o.http_port = 0;
    o.http_threads = 8;
    o.max_body_bytes = 1 << 16;
    state_ = std::make_unique<ServerState>(&engine_, o);
    server_ = std::make_unique<HttpServer>(*state_, metrics_, chatml);
    ASSERT_TRUE(server_->start().is_ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override {
    if (server_) server_->stop();
    engine_.shutdown();
  }
  httplib::Result post(const std::string& path, const std::string& body, httplib::Headers h = {}) {
    return client_->Post(path.c_str(), h, body, "application/json");
  }
  // Streams a POST; `on_event` sees each SSE payload and returns false to hang up.
  httplib::Result stream(const std::string& path, const std::string& body,
                         const std::function<bool(const std::string&)>& on_event,
                         httplib::Headers h = {}) {
    auto buf = std::make_shared<std::string>();
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.headers = std::move(h);
    req.headers.emplace("Content-Type", "application/json");
    req.body = body;
    req.content_receiver = [buf, on_event](const char* d, size_t n, uint64_t, uint64_t) {
      buf->append(d, n);
      for (const auto& ev : sse::take_events(*buf)) {
        if (!on_event(ev)) return false;
      }
      return true;
    };
    return client_->send(req);
  }
  static void expect_error_shape(const std::string& body, int line) {
    SCOPED_TRACE("from line " + std::to_string(line));
    auto j = json::parse(body);
    ASSERT_TRUE(j.contains("error"));
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_TRUE(j["error"]["type"].is_string());
    EXPECT_TRUE(j["error"].contains("param"));
    EXPECT_TRUE(j["error"].contains("code"));
  }

  FakeEngine engine_;
  ServerMetrics metrics_;
  std::unique_ptr<ServerState> state_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpServerTest, HealthVersionModels) {
  start();
  auto h = client_->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto v = client_->Get("/version");
  ASSERT_TRUE(v);
  EXPECT_EQ(json::parse(v->body)["version"], "0.1.0");
  auto m = client_->Get("/v1/models");
  ASSERT_TRUE(m);
  auto j = json::parse(m->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "fake-model");
  EXPECT_EQ(j["data"][0]["max_model_len"], 256);
  // GET /v1/models/{model}: the same object for the served id, OpenAI's 404 for another.
  auto one = client_->Get("/v1/models/fake-model");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  EXPECT_EQ(json::parse(one->body), j["data"][0]);
  auto other = client_->Get("/v1/models/org/other-model");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  expect_error_shape(other->body, __LINE__);
  EXPECT_EQ(json::parse(other->body)["error"]["param"], "model");
  EXPECT_EQ(json::parse(other->body)["error"]["code"], "model_not_found");
}

TEST_F(HttpServerTest, NamedRoutesAreExportedAtZeroFromTheStart) {
  start();
  auto m = client_->Get("/metrics");
  ASSERT_TRUE(m);
  for (const std::string& route : http_routes()) {
    if (route == "/metrics") continue;  // this scrape may be counted already
    const std::string line =
        "\nllmserve_http_requests_total{code=\"200\",route=\"" + route + "\"} 0\n";
    EXPECT_NE(m->body.find(line), std::string::npos) << route << "\n" << m->body;
  }
  EXPECT_GE(http_routes().size(), 9u);
}

TEST_F(HttpServerTest, CompletionNonStreaming) {
  start();
  auto r = post("/v1/completions", R"({"model":"fake-model","prompt":"hi","max_tokens":5})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_FALSE(r->get_header_value("X-Request-Id").empty());
  auto j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"], r->get_header_value("X-Request-Id"));
  EXPECT_EQ(j["choices"][0]["text"], "hello world");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(j["usage"]["total_tokens"], 4);
  ASSERT_EQ(engine_.submitted().size(), 1u);
  EXPECT_EQ(engine_.submitted()[0].params.max_tokens, 5);
  EXPECT_EQ(engine_.submitted()[0].external_id, j["id"]);
}

TEST_F(HttpServerTest, ClientRequestIdIsEchoed) {
  start();
  auto r = post("/v1/completions", R"({"prompt":"hi"})", {{"X-Request-Id", "my-id-1"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("X-Request-Id"), "my-id-1");
  EXPECT_EQ(json::parse(r->body)["id"], "my-id-1");
}

TEST_F(HttpServerTest, ChatNonStreamingUsesTheTemplateAndLength) {
  start();
  auto r = post("/v1/chat/completions",
                R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1,"n":2})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["message"]["content"], "hello");
  EXPECT_EQ(j["choices"][1]["finish_reason"], "length");
  const auto sub = engine_.submitted();
  ASSERT_EQ(sub.size(), 1u);
  EXPECT_EQ(sub[0].prompt_token_ids.front(), testing::FakeTokenizer::kImStart);
}

TEST_F(HttpServerTest, ChatStreamingChunksUsageAndDone) {
  start();
  std::vector<std::string> events;
  auto r = stream("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"hi"}],"stream":true,
                      "stream_options":{"include_usage":true}})",
                  [&](const std::string& e) {
                    events.push_back(e);
                    return true;
                  });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream; charset=utf-8");
  ASSERT_EQ(events.size(), 6u);  // role, "hello", " world", finish, usage, [DONE]
  auto role = json::parse(events[0]);
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(role["usage"].is_null());
  EXPECT_EQ(json::parse(events[1])["choices"][0]["delta"]["content"], "hello");
  EXPECT_EQ(json::parse(events[2])["choices"][0]["delta"]["content"], " world");
  EXPECT_EQ(json::parse(events[3])["choices"][0]["finish_reason"], "stop");
  auto usage = json::parse(events[4]);
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 2);
  EXPECT_EQ(events[5], "[DONE]");
}

TEST_F(HttpServerTest, CompletionStreamingWithLogprobsAndTwoPrompts) {
  start();
  std::vector<json> chunks;
  bool done = false;
  auto r = stream("/v1/completions", R"({"prompt":["a","b"],"stream":true,"logprobs":1})",
                  [&](const std::string& e) {
                    if (e == "[DONE]")
                      done = true;
                    else
                      chunks.push_back(json::parse(e));
                    return true;
                  });
  ASSERT_TRUE(r);
  EXPECT_TRUE(done);
  std::map<int, std::string> text;
  int finished = 0;
  for (const auto& c : chunks) {
    EXPECT_EQ(c["object"], "text_completion");
    const auto& ch = c["choices"][0];
    text[ch["index"].get<int>()] += ch["text"].get<std::string>();
    if (!ch["finish_reason"].is_null()) ++finished;
    if (!ch["text"].get<std::string>().empty()) {
      EXPECT_EQ(ch["logprobs"]["tokens"].size(), 1u);
    }
  }
  EXPECT_EQ(finished, 2);
  EXPECT_EQ(text[0], "hello world");
  EXPECT_EQ(text[1], "hello world");
}

TEST_F(HttpServerTest, DisconnectMidStreamAbortsTheRequest) {
  FakeScript s;
  s.pieces.assign(500, "tok");
  s.step_delay = std::chrono::milliseconds(5);
  engine_.set_script(s);
  start();
  int seen = 0;
  auto r = stream("/v1/completions", R"({"prompt":"hi","stream":true,"max_tokens":200})",
                  [&](const std::string&) { return ++seen < 3; });
  EXPECT_FALSE(r);  // we hung up
  ASSERT_EQ(engine_.submitted().size(), 1u);
  EXPECT_TRUE(engine_.wait_until_idle(std::chrono::seconds(5)));
  EXPECT_EQ(engine_.aborted().size(), 1u);
  // The slot was released: another request goes through.
  auto again = post("/v1/completions", R"({"prompt":"hi","max_tokens":1})");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
}

TEST_F(HttpServerTest, CancelByIdEndsTheStreamWithAbort) {
  FakeScript s;
  s.pieces.assign(2000, "t");
  s.step_delay = std::chrono::milliseconds(5);
  engine_.set_script(s);
  start();
  std::string last_finish;
  std::thread t([&] {
    httplib::Client c("127.0.0.1", server_->port());
    auto buf = std::make_shared<std::string>();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = {{"X-Request-Id", "cancel-me"}, {"Content-Type", "application/json"}};
    req.body = R"({"prompt":"hi","stream":true,"max_tokens":200})";
    req.content_receiver = [&, buf](const char* d, size_t n, uint64_t, uint64_t) {
      buf->append(d, n);
      for (const auto& ev : sse::take_events(*buf)) {
        if (ev == "[DONE]") continue;
        auto j = json::parse(ev);
        if (!j["choices"][0]["finish_reason"].is_null()) {
          last_finish = j["choices"][0]["finish_reason"];
        }
      }
      return true;
    };
    c.send(req);
  });
  // Wait for the request to be running, then cancel it by id.
  for (int i = 0; i < 500 && engine_.submitted().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto d = client_->Delete("/v1/requests/cancel-me");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 200) << d->body;
  t.join();
  EXPECT_EQ(last_finish, "abort");
  // The handler unregisters the id right after its last write, which can land after the client
  // has read the end of the stream.
  auto missing = client_->Delete("/v1/requests/cancel-me");
  for (int i = 0; i < 200 && missing && missing->status == 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    missing = client_->Delete("/v1/requests/cancel-me");
  }
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  expect_error_shape(missing->body, __LINE__);
}

TEST_F(HttpServerTest, AuthGuardsEverythingButHealthAndReady) {
  ServerOptions o;
  o.api_keys = {"sk-test"};
  start(o);
  auto denied = post("/v1/completions", R"({"prompt":"hi"})");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  expect_error_shape(denied->body, __LINE__);
  EXPECT_EQ(json::parse(denied->body)["error"]["code"], "invalid_api_key");
  EXPECT_EQ(client_->Get("/v1/models")->status, 401);
  EXPECT_EQ(client_->Get("/metrics")->status, 401);
  EXPECT_EQ(client_->Get("/health")->status, 200);
  EXPECT_EQ(client_->Get("/ready")->status, 200);
  httplib::Headers auth = {{"Authorization", "Bearer sk-test"}};
  auto ok = post("/v1/completions", R"({"prompt":"hi"})", auth);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(client_->Get("/metrics", auth)->status, 200);
  EXPECT_EQ(
      post("/v1/completions", R"({"prompt":"hi"})", {{"Authorization", "Bearer sk-tes"}})->status,
      401);
}

TEST_F(HttpServerTest, OpenMetricsWhenConfigured) {
  ServerOptions o;
  o.api_keys = {"sk-test"};
  o.metrics_require_auth = false;
  start(o);
  EXPECT_EQ(client_->Get("/metrics")->status, 200);
}

TEST_F(HttpServerTest, NotFoundBadJsonAndTooLarge) {
  start();
  auto nf = client_->Get("/nope");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  expect_error_shape(nf->body, __LINE__);
  auto bad = post("/v1/completions", "{not json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  expect_error_shape(bad->body, __LINE__);
  auto big = post("/v1/completions", std::string(1 << 17, ' '));
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  auto ctx = post("/v1/completions", R"({"prompt":"hi","max_tokens":1000})");
  ASSERT_TRUE(ctx);
  EXPECT_EQ(ctx->status, 400);
  EXPECT_EQ(json::parse(ctx->body)["error"]["code"], "context_length_exceeded");
  EXPECT_TRUE(engine_.submitted().empty());  // nothing bad reached the engine
  EXPECT_EQ(client_->Get("/health")->status, 200);
}

TEST_F(HttpServerTest, ReadyFollowsDrainingAndTheWatchdog) {
  ServerOptions o;
  o.watchdog_seconds = 1;
  start(o);
  EXPECT_EQ(client_->Get("/ready")->status, 200);
  EngineStats wedged;
  wedged.has_pending_work = true;
  wedged.last_step_age_ms = 5000;
  engine_.set_stats_override(wedged);
  auto r = client_->Get("/ready");
  EXPECT_EQ(r->status, 503);
  expect_error_shape(r->body, __LINE__);
  engine_.set_stats_override(EngineStats{});
  EXPECT_EQ(client_->Get("/ready")->status, 200);
  state_->start_draining();
  EXPECT_EQ(client_->Get("/ready")->status, 503);
  EXPECT_EQ(client_->Get("/health")->status, 200);
  auto gen = post("/v1/completions", R"({"prompt":"hi"})");
  ASSERT_TRUE(gen);
  EXPECT_EQ(gen->status, 503);
  EXPECT_FALSE(gen->get_header_value("Retry-After").empty());
}

TEST_F(HttpServerTest, QueueFullIs429WithRetryAfterAndCounted) {
  ServerOptions o;
  o.max_waiting_requests = 2;
  start(o);
  EngineStats busy;  // every run slot and queue slot taken
  busy.requests_running = engine_.options().max_num_seqs;
  busy.requests_waiting = 2;
  engine_.set_stats_override(busy);
  auto r = post("/v1/completions", R"({"prompt":"hi"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  expect_error_shape(r->body, __LINE__);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "queue_full");
  engine_.set_stats_override(EngineStats{});
  engine_.set_submit_error(resource_exhausted("engine queue full"));
  auto r2 = post("/v1/completions", R"({"prompt":"hi"})");
  EXPECT_EQ(r2->status, 429);
  engine_.set_submit_error(Status::ok());
  // The per-route counter is bumped after the response is sent; give it a moment.
  const std::string counted =
      "llmserve_http_requests_total{code=\"429\",route=\"/v1/completions\"} 2";
  auto m = client_->Get("/metrics");
  for (int i = 0; i < 200 && m->body.find(counted) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    m = client_->Get("/metrics");
  }
  EXPECT_NE(m->body.find("llmserve_requests_rejected_total{reason=\"queue_full\"} 2"),
            std::string::npos)
      << m->body;
  EXPECT_NE(m->body.find(counted), std::string::npos);
  EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
}

TEST_F(HttpServerTest, ConcurrencyLimitRejectsBeyondIt) {
  FakeScript s;
  s.pieces.assign(1000, "t");
  s.step_delay = std::chrono::milliseconds(5);
  engine_.set_script(s);
  ServerOptions o;
  o.max_concurrent_generations = 1;
  start(o);
  std::thread t([&] {
    httplib::Client c("127.0.0.1", server_->port());
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = {{"X-Request-Id", "long-one"}, {"Content-Type", "application/json"}};
    req.body = R"({"prompt":"hi","stream":true,"max_tokens":200})";
    req.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return true; };
    c.send(req);
  });
  for (int i = 0; i < 500 && engine_.submitted().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  auto r = post("/v1/completions", R"({"prompt":"hi"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  // The body's code is the reason the metric counts it under (not queue_full: the queue is
  // empty), and the message says where the limit comes from.
  const auto err = json::parse(r->body)["error"];
  EXPECT_EQ(err["code"], "too_many_concurrent") << r->body;
  EXPECT_NE(err["message"].get<std::string>().find("server.http_threads"), std::string::npos);
  EXPECT_NE(client_->Get("/metrics")
                ->body.find("llmserve_requests_rejected_total{reason=\"too_many_concurrent\"} 1"),
            std::string::npos);
  EXPECT_EQ(client_->Get("/health")->status, 200);  // short calls are not starved
  client_->Delete("/v1/requests/long-one");
  t.join();
}

TEST_F(HttpServerTest, DeadlineFromBodyOrHeader) {
  start();
  ASSERT_EQ(post("/v1/completions", R"({"prompt":"hi","timeout":30})")->status, 200);
  ASSERT_EQ(post("/v1/completions", R"({"prompt":"hi"})", {{"X-Request-Timeout", "5"}})->status,
            200);
  ASSERT_EQ(post("/v1/completions", R"({"prompt":"hi"})")->status, 200);
  auto bad = post("/v1/completions", R"({"prompt":"hi"})", {{"X-Request-Timeout", "soon"}});
  EXPECT_EQ(bad->status, 400);
  const auto sub = engine_.submitted();
  ASSERT_EQ(sub.size(), 3u);
  EXPECT_TRUE(sub[0].deadline.has_value());
  EXPECT_TRUE(sub[1].deadline.has_value());
  EXPECT_FALSE(sub[2].deadline.has_value());
  EXPECT_LT(*sub[1].deadline, *sub[0].deadline);
}

TEST_F(HttpServerTest, TimeoutFinishReasonKeepsTokensSoFar) {
  FakeScript s;
  s.pieces.assign(1000, "t");
  s.step_delay = std::chrono::milliseconds(5);
  engine_.set_script(s);
  start();
  auto r = post("/v1/completions", R"({"prompt":"hi","max_tokens":200,"timeout":0.1})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "timeout");
  EXPECT_FALSE(j["choices"][0]["text"].get<std::string>().empty());
}

TEST_F(HttpServerTest, ErrorMidStreamIsSentAsAnErrorEvent) {
  FakeScript s;
  s.error_mid_stream = true;
  engine_.set_script(s);
  start();
  std::vector<std::string> events;
  stream("/v1/completions", R"({"prompt":"hi","stream":true})", [&](const std::string& e) {
    events.push_back(e);
    return true;
  });
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  auto err = json::parse(events[events.size() - 2]);
  ASSERT_TRUE(err.contains("error"));
  auto nonstream = post("/v1/completions", R"({"prompt":"hi"})");
  EXPECT_EQ(nonstream->status, 500);
  expect_error_shape(nonstream->body, __LINE__);
}

TEST_F(HttpServerTest, TokenizeAndDetokenize) {
  start();
  auto t = post("/tokenize", R"({"prompt":"ab"})");
  ASSERT_EQ(t->status, 200);
  EXPECT_EQ(json::parse(t->body)["tokens"], json::array({97, 98}));
  EXPECT_EQ(json::parse(t->body)["count"], 2);
  auto tc = post("/tokenize", R"({"messages":[{"role":"user","content":"x"}]})");
  ASSERT_EQ(tc->status, 200);
  EXPECT_EQ(json::parse(tc->body)["tokens"][0], testing::FakeTokenizer::kImStart);
  auto d = post("/detokenize", R"({"tokens":[104,105]})");
  ASSERT_EQ(d->status, 200);
  EXPECT_EQ(json::parse(d->body)["prompt"], "hi");
  EXPECT_EQ(post("/detokenize", R"({"tokens":[-1]})")->status, 400);
  EXPECT_EQ(post("/tokenize", R"({"prompt":5})")->status, 400);
}

TEST_F(HttpServerTest, CorsPreflightOnlyForAllowedOrigins) {
  ServerOptions o;
  o.cors_allow_origins = {"https://ok.example"};
  start(o);
  auto ok = client_->Options("/v1/completions", {{"Origin", "https://ok.example"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 204);
  EXPECT_EQ(ok->get_header_value("Access-Control-Allow-Origin"), "https://ok.example");
  auto get = client_->Get("/health", {{"Origin", "https://evil.example"}});
  EXPECT_FALSE(get->has_header("Access-Control-Allow-Origin"));
}

}  // namespace
}  // namespace llmserve
