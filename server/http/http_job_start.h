// The steps every HTTP generation route (OpenAI's, Anthropic's) takes around its own parsing:
// admission, then validation, the deadline, the request id's registration, the grammar, a second
// admission after a slow compile, the slot and the engine submit. Errors come back as the
// HttpError to send in the route's own shape.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "server/common/active_requests.h"
#include "server/common/generation_job.h"
#include "server/common/generation_request.h"
#include "server/http/http_context.h"

namespace llmserve {

// Admission before parsing: nullopt when admitted, else the 429 / 503 to send (counted as a
// rejection under its reason).
std::optional<HttpError> admit_http_request(HttpContext& ctx);

// A parsed request checked and registered: its deadline (none: no limit) and its id's hold
// (a live twin of X-Request-Id is 409).
struct HttpRequestHold {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::unique_ptr<ActiveRequests::Registration> registration;
};

// params validated against the model and server limits, the deadline (body `timeout`, header,
// server default), and `id` registered.
std::variant<HttpRequestHold, HttpError> hold_http_request(HttpContext& ctx,
                                                           const httplib::Request& req,
                                                           const GenerationRequest& request,
                                                           const std::string& id);

// A submitted request: destroy `registration` before `job`.
struct HttpJob {
  std::unique_ptr<ServerState::Slot> slot;
  std::unique_ptr<GenerationJob> job;
  std::unique_ptr<ActiveRequests::Registration> registration;
};

// What submitting came to: the job, the error to send, or nothing to send (the client left while
// its grammar compiled).
struct HttpJobStart {
  std::optional<HttpJob> job;
  std::optional<HttpError> error;
};

// The grammar compiled before a slot is taken (the wait ends when the client goes away), the
// request admitted again when it did compile, then the slot and the submit of `engine_requests`.
HttpJobStart start_http_job(HttpContext& ctx, const GenerationRequest& request,
                            HttpRequestHold hold, std::vector<GenerateRequest> engine_requests);

}  // namespace llmserve
