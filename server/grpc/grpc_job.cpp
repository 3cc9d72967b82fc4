#include "server/grpc/grpc_job.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <random>

#include "server/common/field_checks.h"
#include "server/common/request_grammar.h"

namespace llmserve {

namespace {

std::string new_grpc_id() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}() ^ counter.fetch_add(1));
  static const char* kHex = "0123456789abcdef";
  std::string id = "gen-";
  uint64_t a = rng();
  for (int i = 0; i < 16; ++i) id += kHex[(a >> (i * 4)) & 15];
  return id;
}

std::optional<std::chrono::steady_clock::time_point> steady_deadline(
    const grpc::CallbackServerContext* ctx) {
  if (!call_has_deadline(ctx)) return std::nullopt;
  const auto left = ctx->deadline() - std::chrono::system_clock::now();
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(left);
}

}  // namespace

bool call_has_deadline(const grpc::CallbackServerContext* ctx) {
  const auto d = ctx->deadline();
  if (d == std::chrono::system_clock::time_point::max()) return false;
  return d - std::chrono::system_clock::now() <= std::chrono::hours(24 * 365);
}

RequestLimits grpc_request_limits(const ServerState& state) {
  const Engine& engine = *state.engine();
  RequestLimits limits;
  limits.vocab_size = engine.tokenizer().vocab_size();
  limits.max_model_len = engine.max_model_len();
  limits.max_logprobs = engine.options().max_logprobs;
  limits.model_name = state.model_name();
  limits.max_prompt_logprob_entries = state.options().max_prompt_logprob_entries;
  limits.default_sampling = state.options().default_sampling;
  limits.json_bounds = state.options().json_bounds;
  return limits;
}

Result<GrpcJob> start_grpc_job(ServerState& state, ServerMetrics& metrics,
                               grpc::CallbackServerContext* ctx, const GrpcParseFn& parse,
                               const std::string& id) {
  if (id.size() > kMaxClientRequestIdBytes) {
    return field_error("request_id", "is " + std::to_string(id.size()) + " bytes; at most " +
                                         std::to_string(kMaxClientRequestIdBytes) + " allowed");
  }
  RejectReason reason = RejectReason::kNone;
  Status admitted = state.admit(&reason, state.options().max_concurrent_generations);
  if (!admitted.is_ok()) {
    metrics.count_rejection(reject_reason_name(reason));
    return admitted;
  }
  GrpcJob s;
  Engine& engine = *state.engine();
  const RequestLimits limits = grpc_request_limits(state);
  LLMSERVE_ASSIGN_OR_RETURN(GenerationRequest parsed, parse(limits));
  LLMSERVE_RETURN_IF_ERROR(parsed.params.validate(limits.vocab_size, limits.max_logprobs));
  s.id = id.empty() ? new_grpc_id() : id;
  LLMSERVE_ASSIGN_OR_RETURN(s.registration, state.active().reserve(s.id, "request_id"));
  auto deadline = steady_deadline(ctx);
  if (!deadline && state.options().request_timeout_seconds > 0) {
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(state.options().request_timeout_seconds));
  }
  if (!parsed.prompt_token_ids.empty()) s.prompt = parsed.prompt_token_ids.front();
  std::vector<GenerateRequest> engine_requests =
      make_generate_requests(parsed, std::move(parsed.prompt_token_ids), s.id, deadline);
  if (parsed.grammar) {
    // Compiled before the call takes a slot; a cancelled call stops waiting for it.
    LLMSERVE_RETURN_IF_ERROR(attach_request_grammar(engine, parsed, deadline, &engine_requests,
                                                    [ctx] { return ctx->IsCancelled(); }));
    admitted = state.admit(&reason, state.options().max_concurrent_generations);
    if (!admitted.is_ok()) {
      metrics.count_rejection(reject_reason_name(reason));
      return admitted;
    }
  }
  s.slot = state.take_slot();
  auto job = GenerationJob::start(engine, std::move(engine_requests));
  if (!job.is_ok()) {
    if (job.status().code() == StatusCode::kResourceExhausted) {
      metrics.count_rejection("queue_full");
    }
    return job.status();
  }
  s.job = std::move(job).value();
  s.registration->attach(s.job.get());
  return s;
}

}  // namespace llmserve
