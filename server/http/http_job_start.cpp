#include "server/http/http_job_start.h"

#include <utility>

#include "server/common/request_grammar.h"
#include "server/http/http_connection.h"

namespace llmserve {

std::optional<HttpError> admit_http_request(HttpContext& ctx) {
  RejectReason reason = RejectReason::kNone;
  const Status admitted = ctx.state.admit(&reason, ctx.state.options().max_concurrent_generations);
  if (admitted.is_ok()) return std::nullopt;
  ctx.metrics.count_rejection(reject_reason_name(reason));
  return admission_error(admitted, reject_reason_name(reason),
                         ctx.state.options().retry_after_seconds);
}

std::variant<HttpRequestHold, HttpError> hold_http_request(HttpContext& ctx,
                                                           const httplib::Request& req,
                                                           const GenerationRequest& request,
                                                           const std::string& id) {
  const int retry = ctx.state.options().retry_after_seconds;
  const RequestLimits limits = ctx.limits();
  const Status valid = request.params.validate(limits.vocab_size, limits.max_logprobs);
  if (!valid.is_ok()) return http_error_from_status(valid, retry);
  auto deadline =
      request_deadline(req, request.timeout_seconds, ctx.state.options().request_timeout_seconds);
  if (!deadline.is_ok()) return http_error_from_status(deadline.status(), retry);
  auto registration = ctx.state.active().reserve(id, "X-Request-Id");
  if (!registration.is_ok()) return http_error_from_status(registration.status(), retry);
  return HttpRequestHold{*deadline, std::move(registration).value()};
}

HttpJobStart start_http_job(HttpContext& ctx, const GenerationRequest& request,
                            HttpRequestHold hold, std::vector<GenerateRequest> engine_requests) {
  const int retry = ctx.state.options().retry_after_seconds;
  Engine& engine = *ctx.state.engine();
  HttpJobStart out;
  if (request.grammar) {
    const Status grammar = attach_request_grammar(engine, request, hold.deadline, &engine_requests,
                                                  [] { return http_client_disconnected(); });
    if (grammar.code() == StatusCode::kCancelled) return out;  // nobody to answer
    if (!grammar.is_ok()) {
      out.error = http_error_from_status(grammar, retry);
      return out;
    }
    if (auto refused = admit_http_request(ctx)) {
      out.error = std::move(refused);
      return out;
    }
  }
  HttpJob started;
  started.slot = ctx.state.take_slot();
  auto job = GenerationJob::start(engine, std::move(engine_requests));
  if (!job.is_ok()) {
    if (job.status().code() == StatusCode::kResourceExhausted) {
      ctx.metrics.count_rejection("queue_full");
    }
    out.error = http_error_from_status(job.status(), retry);
    return out;
  }
  started.job = std::move(job).value();
  started.registration = std::move(hold.registration);
  started.registration->attach(started.job.get());
  out.job = std::move(started);
  return out;
}

}  // namespace llmserve
