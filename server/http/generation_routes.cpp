// POST /v1/completions, POST /v1/chat/completions and POST /v1/responses (the chat path with
// the Responses API's request and output shapes): admission, parsing, submission, and the
// response as one JSON body or as an SSE stream that cancels the job when the client goes away.
#include <chrono>
#include <memory>

#include <spdlog/spdlog.h>

#include "server/common/generation_job.h"
#include "server/common/request_images.h"
#include "server/http/body_pieces.h"
#include "server/http/chat_request.h"
#include "server/http/collect_job.h"
#include "server/http/completion_request.h"
#include "server/http/http_connection.h"
#include "server/http/http_context.h"
#include "server/http/http_job_start.h"
#include "server/http/openai_response.h"
#include "server/http/responses_output.h"
#include "server/http/responses_request.h"
#include "server/http/sse.h"

namespace llmserve {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr auto kPollInterval = std::chrono::milliseconds(50);
constexpr auto kKeepAliveInterval = std::chrono::seconds(5);

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Everything a streaming response keeps alive after the handler returns.
struct StreamState {
  std::unique_ptr<ServerState::Slot> slot;
  std::unique_ptr<GenerationJob> job;
  std::unique_ptr<ActiveRequests::Registration> registration;
  std::unique_ptr<ResponseBuilder> builder;
  std::unique_ptr<ResponsesEvents> responses;  // /v1/responses: chat chunks -> typed events
  bool started = false;
  Clock::time_point last_write = Clock::now();
  bool done = false;

  ~StreamState() {
    registration.reset();  // before the job it points to
    job.reset();           // cancels when unfinished
  }
};

bool write_all(httplib::DataSink& sink, const std::string& s) {
  return sink.is_writable() && sink.write(s.data(), s.size());
}

// One provider call: wait for engine output (bounded), write it. False stops the response.
bool pump(StreamState& st, httplib::DataSink& sink) {
  if (st.done) return false;
  auto ev = st.job->next(kPollInterval);
  if (!ev) {
    if (st.job->timed_out()) {
      if (Clock::now() - st.last_write >= kKeepAliveInterval) {
        // Probe the connection so a silent disconnect is noticed during a long prefill.
        if (!write_all(sink, sse::comment("keep-alive"))) {
          st.job->cancel();
          return false;
        }
        st.last_write = Clock::now();
      }
      return true;
    }
    // Every stream ended.
    std::string tail;
    if (st.responses) {
      for (const auto& e : st.responses->finish(st.builder->total_usage(), st.builder->error())) {
        tail += responses_sse(e);
      }
    } else if (!st.builder->error().is_ok()) {
      tail += sse::event(json::parse(error_body(http_error_from_status(st.builder->error()))));
    }
    if (auto u = st.builder->usage_chunk()) tail += sse::event(*u);
    if (!st.responses) tail += sse::done();
    st.done = true;
    const bool ok = write_all(sink, tail);
    sink.done();
    return ok;
  }
  std::string data;
  if (st.responses && !st.started) {
    for (const auto& e : st.responses->start()) data += responses_sse(e);
    st.started = true;
  }
  for (const auto& chunk : st.builder->chunks_for(ev->prompt_index, ev->output)) {
    if (!st.responses) {
      data += sse::event(chunk);
      continue;
    }
    for (const auto& e : st.responses->on_chunk(chunk)) data += responses_sse(e);
  }
  if (data.empty()) return true;
  if (!write_all(sink, data)) {
    st.job->cancel();
    return false;
  }
  st.last_write = Clock::now();
  return true;
}

void handle_generation(HttpContext& ctx, ApiKind kind, const httplib::Request& req,
                       httplib::Response& res, bool responses = false) {
  const int retry = ctx.state.options().retry_after_seconds;
  if (auto refused = admit_http_request(ctx)) return send_error(res, *refused);
  Engine& engine = *ctx.state.engine();
  const RequestLimits limits = ctx.limits();

  ResponsesTranslation translation;
  auto parsed =
      kind == ApiKind::kCompletion ? parse_completion_request(req.body, engine.tokenizer(), limits)
      : responses ? parse_responses_request(req.body, engine.tokenizer(), ctx.chat_renderer, limits,
                                            &translation)
                  : parse_chat_request(req.body, engine.tokenizer(), ctx.chat_renderer, limits);
  if (!parsed.is_ok()) return send_status_error(res, parsed.status(), retry);
  GenerationRequest& request = *parsed;
  const std::string id = request_id_of(res);
  auto held = hold_http_request(ctx, req, request, id);
  if (auto* e = std::get_if<HttpError>(&held)) return send_error(res, *e);
  HttpRequestHold& hold = std::get<HttpRequestHold>(held);
  const auto deadline = hold.deadline;
  ResponseContext rc;
  rc.kind = kind;
  rc.id = id;
  rc.model = ctx.state.model_name();
  rc.created = unix_now();
  rc.n = request.params.n;
  rc.num_prompts = request.prompt_token_ids.size();
  rc.logprobs = request.logprobs.value_or(-1);
  rc.prompt_logprobs = request.prompt_logprobs.value_or(-1);
  if (request.echo) {
    rc.echo = true;
    rc.echo_texts = std::move(request.echo_texts);
    rc.prompt_ids = request.prompt_token_ids;
  }
  rc.include_usage = request.include_usage;
  rc.tokenizer = &engine.tokenizer();
  const bool stream = request.stream;

  rc.tools = request.tools.active();
  rc.tool_format = ctx.chat_renderer.tool_format;
  rc.reasoning = request.reasoning;
  std::vector<GenerateRequest> engine_requests =
      make_generate_requests(request, std::move(request.prompt_token_ids), id, deadline);
  // Images are decoded and encoded here, on this request's thread (never on the step loop).
  if (Status st =
          attach_request_images(request, engine, ctx.state.options().media, engine_requests);
      !st.is_ok()) {
    return send_status_error(res, st, retry);
  }
  HttpJobStart started = start_http_job(ctx, request, std::move(hold), std::move(engine_requests));
  if (started.error) return send_error(res, *started.error);
  if (!started.job) return;  // the client left while its grammar compiled

  auto st = std::make_shared<StreamState>();
  st->slot = std::move(started.job->slot);
  st->job = std::move(started.job->job);
  st->registration = std::move(started.job->registration);
  st->builder = std::make_unique<ResponseBuilder>(rc);
  ResponsesContext rsc;
  if (responses) {
    rsc = {responses_id(id),
           rc.model,
           rc.created,
           std::move(translation.echo),
           request.params.temperature,
           request.params.top_p};
    if (stream) st->responses = std::make_unique<ResponsesEvents>(rsc);
  }

  if (!stream) {
    const Status waited = collect_job(*st->job, deadline, [&](const GenerationJob::Event& ev) {
      st->builder->accumulate(ev.prompt_index, ev.output);
    });
    if (waited.code() == StatusCode::kCancelled) return;  // nobody to answer
    if (!waited.is_ok()) return send_status_error(res, waited, retry);
    if (!st->builder->error().is_ok()) return send_status_error(res, st->builder->error(), retry);
    if (responses) {
      const auto body =
          response_from_chat(rsc, st->builder->final_response(), st->builder->total_usage());
      res.set_content(body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace),
                      "application/json");
      return;
    }
    send_body_pieces(res, std::move(st->builder));
    return;
  }

  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  // cpp-httplib gzips any text/* body a client accepts gzip for unless its type is exactly
  // "text/event-stream"; ours names its charset, and a gzipped stream sits in the compressor
  // until it ends. The request is httplib's own non-const object, read again only to pick the
  // response's encoding.
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
  res.set_chunked_content_provider(
      sse::kContentType,
      [st](size_t /*offset*/, httplib::DataSink& sink) { return pump(*st, sink); },
      [st](bool success) {
        if (!st->job->finished()) {
          spdlog::debug("stream ended early (success={}); cancelling", success);
          st->job->cancel();
        }
        st->registration.reset();
        st->slot.reset();
      });
}

}  // namespace

void register_generation_routes(httplib::Server& server, HttpContext& ctx) {
  server.Post("/v1/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_generation(ctx, ApiKind::kCompletion, req, res);
  });
  server.Post("/v1/chat/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_generation(ctx, ApiKind::kChat, req, res);
  });
  server.Post("/v1/responses", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_generation(ctx, ApiKind::kChat, req, res, /*responses=*/true);
  });
}

}  // namespace llmserve
