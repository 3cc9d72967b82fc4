#include "engine/llm_engine.h"

#include <cstdlib>
#include <utility>

#include <spdlog/spdlog.h>

#include "engine/core/fault_injection.h"
#include "engine/model/bert_config.h"

namespace llmserve {
namespace {

using Clock = std::chrono::steady_clock;

GrammarCompilerOptions grammar_compiler_options(const EngineOptions& o) {
  GrammarCompilerOptions g;
  g.threads = o.grammar_compile_threads;
  g.cache_entries = o.grammar_cache_size;
  g.cache_bytes = o.grammar_cache_bytes;
  g.max_grammar_bytes = o.grammar_max_bytes;
  g.compile_timeout_seconds = o.grammar_compile_timeout_seconds;
  g.compile_memory_bytes = o.grammar_compile_memory_bytes;
  g.schema.max_depth = o.grammar_max_schema_depth;
  g.schema.max_nodes = o.grammar_max_schema_nodes;
  return g;
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string model_name_of(const std::string& model_path) {
  std::string name = model_path;
  if (auto slash = name.find_last_of('/'); slash != std::string::npos)
    name = name.substr(slash + 1);
  if (name.ends_with(".gguf")) name.resize(name.size() - 5);
  return name;
}

LlmEngine::LlmEngine(const EngineOptions& options, std::unique_ptr<Tokenizer> tokenizer,
                     std::unique_ptr<ChatTemplate> chat_template,
                     std::unique_ptr<ModelRunner> runner, std::unique_ptr<Scheduler> scheduler,
                     int32_t max_model_len, Speculation speculation,
                     std::unique_ptr<KvTransferAgent> kv_agent, KvWakeHook kv_wake,
                     std::shared_ptr<const Pooler> pooler, std::unique_ptr<KvOffloader> offloader)
    : options_(options),
      tokenizer_(std::move(tokenizer)),
      chat_template_(std::move(chat_template)),
      config_(runner->config()),
      pooler_(std::move(pooler)),
      grammar_compiler_(std::make_unique<GrammarCompiler>(*tokenizer_,
                                                          static_cast<int32_t>(config_.vocab_size),
                                                          grammar_compiler_options(options))),
      max_model_len_(max_model_len),
      intake_(options.max_num_seqs, options.max_waiting_requests, options.max_waiting_tokens),
      wedge_after_steps_(fault_wedge_engine_after_steps()) {
  model_name_ = model_name_of(options.model_path);
  kv_usable_tokens_ =
      int64_t{scheduler->kv_cache().num_usable_blocks()} * scheduler->kv_cache().block_size();
  if (options.kv_events_buffer_steps > 0) {
    kv_events_ = std::make_unique<KvEventBus>(static_cast<size_t>(options.kv_events_buffer_steps));
    scheduler->enable_kv_events(true);
  }
  loop_ = std::make_unique<StepLoop>(
      std::move(runner), std::move(scheduler), *tokenizer_, metrics_, options.seed,
      [this](uint64_t id, const std::string& ext) { intake_.forget(id, ext); },
      std::move(speculation));
  loop_->set_pooler(pooler_);
  if (kv_wake) *kv_wake = [this] { intake_.wake(); };
  if (offloader != nullptr) loop_->set_kv_offloader(std::move(offloader));
  if (kv_agent != nullptr) {
    kv_engine_id_ = kv_agent->engine_id();
    kv_transfer_port_ = kv_agent->port();
    loop_->set_kv_agent(std::move(kv_agent));
  }
  publish_stats();
  last_step_ns_ = now_ns();
  thread_ = std::thread([this] { run(); });
}

LlmEngine::~LlmEngine() {
  shutdown();
}

Status LlmEngine::validate_images(const GenerateRequest& r) const {
  if (r.images.empty()) return Status::ok();
  if (image_encoder_ == nullptr) {
    return invalid_argument("this model (" + config_.architecture + ") does not accept images");
  }
  if (r.pooling || r.params.prompt_logprobs >= 0 || r.kv_transfer.produce ||
      r.kv_transfer.consume) {
    return invalid_argument(
        "a prompt with images cannot be pooled, scored (prompt logprobs) or moved (KV transfer)");
  }
  const vision::VisionConfig& vc = image_encoder_->config();
  const std::vector<ImageSpan> spans = find_image_spans(r.prompt_token_ids, vc.image_token_id);
  if (spans.size() != r.images.size()) {
    return invalid_argument("the prompt has " + std::to_string(spans.size()) +
                            " runs of image tokens for " + std::to_string(r.images.size()) +
                            " images");
  }
  for (size_t k = 0; k < spans.size(); ++k) {
    const PromptImage& im = r.images[k];
    if (!(im.span == spans[k]) || im.span.length != vc.mm_tokens_per_image || !im.features ||
        static_cast<int64_t>(im.features->size()) != int64_t{im.span.length} * vc.text_hidden ||
        vc.text_hidden != config_.hidden_size) {
      return invalid_argument("image " + std::to_string(k) +
                              ": its span or features do not match the prompt's image tokens (" +
                              std::to_string(vc.mm_tokens_per_image) + " rows of " +
                              std::to_string(config_.hidden_size) + " floats)");
    }
  }
  return Status::ok();
}

Status LlmEngine::validate(const GenerateRequest& r) const {
  if (r.prompt_token_ids.empty()) return invalid_argument("prompt is empty");
  if (!r.pooling && config_.pooling_only()) {
    return invalid_argument("this model (" + config_.architecture +
                            (config_.bidirectional ? ", bidirectional attention" : "") +
                            ") is an encoder: it serves embeddings, rerank and score, not "
                            "generation");
  }
  const auto vocab = static_cast<int32_t>(config_.vocab_size);
  for (int32_t id : r.prompt_token_ids) {
    if (id < 0 || id >= vocab) {
      return invalid_argument("prompt token id " + std::to_string(id) +
                              " is outside the vocab [0, " + std::to_string(vocab) + ")");
    }
  }
  LLMSERVE_RETURN_IF_ERROR(r.params.validate(vocab, options_.max_logprobs));
  LLMSERVE_RETURN_IF_ERROR(r.reasoning_budget.validate());
  if (r.grammar && r.grammar->vocab_size() != vocab) {
    return invalid_argument("the request's grammar was compiled for a vocab of " +
                            std::to_string(r.grammar->vocab_size()) + " tokens, not " +
                            std::to_string(vocab));
  }
  const int64_t prompt = static_cast<int64_t>(r.prompt_token_ids.size());
  LLMSERVE_RETURN_IF_ERROR(validate_images(r));
  if (r.pooling) {
    if (pooler_ == nullptr) return invalid_argument("this engine cannot pool (embeddings)");
    if (r.params.max_tokens != 0 || r.params.n != 1 || r.grammar || r.params.prompt_logprobs >= 0) {
      return invalid_argument("a pooling request samples nothing (max_tokens 0, n 1)");
    }
    LLMSERVE_RETURN_IF_ERROR(pooler_->check_dimensions(r.pooling->dimensions));
    if (prompt > options_.max_num_batched_tokens) {
      return out_of_range("this input has " + std::to_string(prompt) +
                          " tokens; embeddings take at most " +
                          std::to_string(options_.max_num_batched_tokens) +
                          " (max_num_batched_tokens: an input runs in one step)");
    }
  }
  const int64_t total = prompt + r.params.max_tokens;
  if (prompt >= max_model_len_ || total > max_model_len_) {
    return out_of_range("this model's maximum context length is " + std::to_string(max_model_len_) +
                        " tokens; the request asks for " + std::to_string(total) + " (" +
                        std::to_string(prompt) + " in the prompt + " +
                        std::to_string(r.params.max_tokens) + " max_tokens)");
  }
  if (total > kv_usable_tokens_) {
    // It would never fit, however long it waits: a client error, not a retryable 429.
    return out_of_range(
        "max_tokens: the request needs up to " + std::to_string(total) + " tokens of KV cache (" +
        std::to_string(prompt) + " in the prompt + " + std::to_string(r.params.max_tokens) +
        " max_tokens) and the whole cache holds " + std::to_string(kv_usable_tokens_) +
        "; prompt + max_tokens must be <= " + std::to_string(kv_usable_tokens_));
  }
  return Status::ok();
}

Result<std::shared_ptr<RequestStream>> LlmEngine::submit(GenerateRequest request) {
  LLMSERVE_RETURN_IF_ERROR(validate(request));
  if (!intake_.accepting()) return unavailable("engine is not accepting requests");
  const uint64_t id = next_id_.fetch_add(1);
  auto stream = std::make_shared<RequestStream>(id, std::max(request.params.n, 1),
                                                std::max<size_t>(options_.stream_buffer, 1));
  PendingSubmit p;
  p.id = id;
  p.request = std::move(request);
  p.stream = stream;
  p.arrival = Clock::now();
  LLMSERVE_RETURN_IF_ERROR(intake_.submit(std::move(p)));
  return stream;
}

void LlmEngine::abort(uint64_t request_id) {
  intake_.abort(request_id);
}

bool LlmEngine::abort_external(const std::string& external_id) {
  return intake_.abort_external(external_id);
}

void LlmEngine::stop_accepting() {
  intake_.stop_accepting();
  grammar_compiler_->shutdown();  // queued compiles fail, running ones are killed
}

void LlmEngine::shutdown() {
  std::lock_guard<std::mutex> lock(shutdown_mu_);
  intake_.shutdown();
  if (thread_.joinable()) thread_.join();
  if (kv_events_) kv_events_->close();
}

void LlmEngine::publish_kv_events() {
  if (!kv_events_) return;
  std::vector<KvEvent> events = loop_->scheduler().take_kv_events();
  if (!events.empty()) kv_events_->publish(std::move(events), unix_seconds());
}

Result<bool> LlmEngine::reset_prefix_cache() {
  std::unique_lock<std::mutex> lock(invariant_mu_);
  reset_requested_ = true;
  reset_done_ = false;
  intake_.wake();
  invariant_cv_.wait(lock, [this] { return reset_done_ || stopped_; });
  if (!reset_done_) return unavailable("engine thread has stopped");
  return reset_result_;
}

void LlmEngine::serve_engine_thread_calls() {
  std::lock_guard<std::mutex> lock(invariant_mu_);
  if (reset_requested_) {
    reset_result_ = loop_->scheduler().reset_prefix_cache();
    publish_kv_events();
    publish_stats();
    reset_requested_ = false;
    reset_done_ = true;
    invariant_cv_.notify_all();
  }
  if (invariant_requested_) {
    loop_->settle_kv_offload();  // the worker's pins (a block being copied out) go first
    publish_stats();             // so stats() read after the check sees this state
    const Scheduler& sched = loop_->scheduler();
    Status st = sched.check_invariants();
    const KvCacheManager& kv = sched.kv_cache();
    if (st.is_ok() && !sched.has_unfinished_requests() &&
        (kv.usage() != 0.0 || kv.num_free_blocks() != kv.num_usable_blocks())) {
      st =
          internal_error("idle engine holds KV blocks: " +
                         std::to_string(kv.num_usable_blocks() - kv.num_free_blocks()) + " in use");
    }
    invariant_result_ = std::move(st);
    invariant_requested_ = false;
    invariant_done_ = true;
    invariant_cv_.notify_all();
  }
}

EngineStats LlmEngine::stats() const {
  EngineStats s;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    s = stats_;
  }
  s.has_pending_work = s.has_pending_work || intake_.has_pending();
  s.requests_waiting = intake_.num_waiting();  // counts what the last snapshot missed
  s.last_step_age_ms = (now_ns() - last_step_ns_.load()) / 1000000;
  const GrammarCompilerStats g = grammar_compiler_->stats();
  s.grammar_compiles = g.compiled;
  if (image_encoder_ != nullptr) {
    const vision::ImageEncoderStats v = image_encoder_->stats();
    s.images_encoded = v.encoded;
    s.image_cache_hits = v.cache.hits;
    s.image_cache_bytes = v.cache.bytes;
  }
  s.grammar_cache_hits = g.cache_hits;
  s.grammar_compile_errors = g.failed;
  s.grammar_cache_entries = g.cached;
  s.grammar_cache_bytes = g.cached_bytes;
  s.grammar_compiles_abandoned = g.abandoned;
  s.grammar_compile_timeouts = g.timed_out;
  s.grammar_compile_seconds = g.compile_seconds;
  if (kv_events_) {
    s.kv_event_batches = kv_events_->batches_published();
    s.kv_event_batches_dropped = kv_events_->batches_dropped();
  }
  return s;
}

void LlmEngine::publish_stats() {
  EngineStats s;
  loop_->fill_stats(s);
  s.has_pending_work = loop_->has_work();
  intake_.set_backlog(static_cast<int32_t>(s.requests_running),
                      static_cast<int32_t>(s.requests_waiting), s.waiting_prompt_tokens);
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_ = s;
}

Status LlmEngine::check_kv_invariants() {
  std::unique_lock<std::mutex> lock(invariant_mu_);
  invariant_requested_ = true;
  invariant_done_ = false;
  intake_.wake();
  invariant_cv_.wait(lock, [this] { return invariant_done_ || stopped_; });
  if (!invariant_done_) return unavailable("engine thread has stopped");
  return invariant_result_;
}

void LlmEngine::run() {
  while (true) {
    IntakeBatch batch = intake_.drain();
    for (PendingSubmit& p : batch.submits) {
      if (!loop_->hold_for_restore(p)) loop_->admit(std::move(p));
    }
    for (uint64_t id : batch.aborts) loop_->end_request(id, FinishReason::kAbort);
    if (batch.shutdown) {
      loop_->abort_all();
      publish_stats();
      break;
    }
    loop_->check_streams_and_deadlines(Clock::now());
    loop_->poll_kv_transfer(Clock::now());
    loop_->poll_kv_offload();
    serve_engine_thread_calls();
    if (wedge_after_steps_ != 0 && loop_->has_work() && loop_->steps() >= wedge_after_steps_) {
      spdlog::warn("fault injection: engine loop wedged after {} steps", loop_->steps());
      intake_.wait_for_shutdown();
      continue;
    }
    const bool ran = loop_->has_work() && loop_->step();
    loop_->offload_new_blocks();
    publish_kv_events();
    publish_stats();
    if (ran) {
      last_step_ns_ = now_ns();
      continue;
    }
    if (loop_->has_work()) {
      intake_.wait(Clock::now() + std::chrono::milliseconds(5));  // nothing fit this step
    } else {
      intake_.wait(loop_->kv_next_expiry());  // a lease may expire meanwhile
    }
  }
  std::lock_guard<std::mutex> lock(invariant_mu_);
  stopped_ = true;
  invariant_cv_.notify_all();
}

}  // namespace llmserve
