#include "server/anthropic/anthropic_routes.h"
#include "server/common/request_images.h"

#include <chrono>
#include <memory>

#include <spdlog/spdlog.h>

#include "server/anthropic/anthropic_error.h"
#include "server/anthropic/message_events.h"
#include "server/common/generation_job.h"
#include "server/http/collect_job.h"
#include "server/http/http_connection.h"
#include "server/http/http_context.h"
#include "server/http/http_job_start.h"
#include "server/http/sse.h"

namespace llmserve {

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr auto kPollInterval = std::chrono::milliseconds(50);
constexpr auto kPingInterval = std::chrono::seconds(5);

void fail(httplib::Response& res, const Status& s, int retry) {
  send_anthropic_error(res, http_error_from_status(s, retry));
}

void send_message_json(httplib::Response& res, const json& body) {
  res.status = 200;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

struct StreamState {
  std::unique_ptr<ServerState::Slot> slot;
  std::unique_ptr<GenerationJob> job;
  std::unique_ptr<ActiveRequests::Registration> registration;
  std::unique_ptr<MessageEvents> events;
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

std::string sse_of(const std::vector<json>& events) {
  std::string out;
  for (const json& e : events) out += anthropic_sse(e);
  return out;
}

// The first error an output carried, OK when none.
Status output_error(const StepOutput& out) {
  if (out.finish != FinishReason::kError) return Status::ok();
  return out.error.is_ok() ? internal_error("generation failed") : out.error;
}

bool pump(StreamState& st, httplib::DataSink& sink, Status& error) {
  if (st.done) return false;
  auto ev = st.job->next(kPollInterval);
  if (!ev) {
    if (st.job->timed_out()) {
      if (Clock::now() - st.last_write >= kPingInterval) {
        // A ping keeps the connection probed during a long prefill (Anthropic sends them too).
        if (!write_all(sink, anthropic_sse(json{{"type", "ping"}}))) {
          st.job->cancel();
          return false;
        }
        st.last_write = Clock::now();
      }
      return true;
    }
    st.done = true;
    const bool ok = write_all(sink, sse_of(st.events->finish(error)));
    sink.done();
    return ok;
  }
  if (error.is_ok()) error = output_error(ev->output);
  const std::string data = sse_of(st.events->on_output(ev->output));
  if (data.empty()) return true;
  if (!write_all(sink, data)) {
    st.job->cancel();
    return false;
  }
  st.last_write = Clock::now();
  return true;
}

MessagesTranslation* no_translation() {
  return nullptr;
}

void handle_count_tokens(HttpContext& ctx, const MessagesOptions& options,
                         const httplib::Request& req, httplib::Response& res) {
  const int retry = ctx.state.options().retry_after_seconds;
  Engine& engine = *ctx.state.engine();
  auto parsed = parse_messages_request(req.body, engine.tokenizer(), ctx.chat_renderer,
                                       ctx.limits(), options, no_translation(),
                                       /*count_only=*/true);
  if (!parsed.is_ok()) return fail(res, parsed.status(), retry);
  send_message_json(res, json{{"input_tokens", parsed->prompt_token_ids.at(0).size()}});
}

void handle_messages(HttpContext& ctx, const MessagesOptions& options, const httplib::Request& req,
                     httplib::Response& res) {
  const int retry = ctx.state.options().retry_after_seconds;
  if (auto refused = admit_http_request(ctx)) return send_anthropic_error(res, *refused);
  Engine& engine = *ctx.state.engine();
  const RequestLimits limits = ctx.limits();
  MessagesTranslation translation;
  auto parsed = parse_messages_request(req.body, engine.tokenizer(), ctx.chat_renderer, limits,
                                       options, &translation);
  if (!parsed.is_ok()) return fail(res, parsed.status(), retry);
  GenerationRequest& request = *parsed;
  const std::string id = request_id_of(res);
  res.set_header("request-id", id);  // where Anthropic's SDKs read it
  auto held = hold_http_request(ctx, req, request, id);
  if (auto* e = std::get_if<HttpError>(&held)) return send_anthropic_error(res, *e);
  HttpRequestHold& hold = std::get<HttpRequestHold>(held);
  const auto deadline = hold.deadline;

  MessageContext mc;
  mc.id = message_id(id);
  mc.model = ctx.state.model_name();
  mc.tools = request.tools.active();
  mc.tool_format = ctx.chat_renderer.tool_format;
  mc.reasoning = request.reasoning;
  mc.stop_sequences = translation.stop_sequences;

  std::vector<GenerateRequest> engine_requests =
      make_generate_requests(request, std::move(request.prompt_token_ids), id, deadline);
  if (Status st =
          attach_request_images(request, engine, ctx.state.options().media, engine_requests);
      !st.is_ok()) {
    return fail(res, st, retry);
  }
  HttpJobStart started = start_http_job(ctx, request, std::move(hold), std::move(engine_requests));
  if (started.error) return send_anthropic_error(res, *started.error);
  if (!started.job) return;  // the client left while its grammar compiled
  auto st = std::make_shared<StreamState>();
  st->slot = std::move(started.job->slot);
  st->job = std::move(started.job->job);
  st->registration = std::move(started.job->registration);
  st->events = std::make_unique<MessageEvents>(std::move(mc));

  if (!translation.stream) {
    Status error;
    const Status waited = collect_job(*st->job, deadline, [&](const GenerationJob::Event& ev) {
      if (error.is_ok()) error = output_error(ev.output);
      st->events->on_output(ev.output);
    });
    if (waited.code() == StatusCode::kCancelled) return;  // nobody to answer
    if (!waited.is_ok()) return fail(res, waited, retry);
    if (!error.is_ok()) return fail(res, error, retry);
    st->events->finish(error);
    return send_message_json(res, st->events->message());
  }

  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  // Never gzipped: see generation_routes.cpp.
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
  auto error = std::make_shared<Status>();
  res.set_chunked_content_provider(
      sse::kContentType,
      [st, error](size_t /*offset*/, httplib::DataSink& sink) { return pump(*st, sink, *error); },
      [st](bool success) {
        if (!st->job->finished()) {
          spdlog::debug("messages stream ended early (success={}); cancelling", success);
          st->job->cancel();
        }
        st->registration.reset();
        st->slot.reset();
      });
}

}  // namespace

HttpApi anthropic_api(MessagesOptions options) {
  HttpApi api;
  api.path_prefix = "/v1/messages";
  api.api_key_header = "x-api-key";
  api.send_error = send_anthropic_error;
  api.add_routes = [options = std::move(options)](httplib::Server& server, HttpContext& ctx) {
    server.Post("/v1/messages",
                [&ctx, options](const httplib::Request& req, httplib::Response& res) {
                  handle_messages(ctx, options, req, res);
                });
    server.Post("/v1/messages/count_tokens",
                [&ctx, options](const httplib::Request& req, httplib::Response& res) {
                  handle_count_tokens(ctx, options, req, res);
                });
  };
  return api;
}

}  // namespace llmserve
