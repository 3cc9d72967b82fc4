#include "tests/unit/server/fake_engine.h"

namespace llmserve::testing {

FakeEngine::FakeEngine() {
  config_.architecture = "fake";
  config_.vocab_size = FakeTokenizer::kVocab;
  config_.max_context = 256;
  options_.model_path = "fake.gguf";
}

FakeEngine::~FakeEngine() {
  shutdown();
}

void FakeEngine::shutdown() {
  accepting_ = false;
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
    for (const auto& [ext, id] : external_) aborted_.insert(id);
  }
  for (auto& t : threads) t.join();
}

void FakeEngine::set_script(FakeScript s) {
  std::lock_guard lock(mu_);
  script_ = std::move(s);
}

void FakeEngine::set_submit_error(Status s) {
  std::lock_guard lock(mu_);
  submit_error_ = std::move(s);
}

void FakeEngine::set_stats_override(EngineStats s) {
  std::lock_guard lock(mu_);
  stats_override_ = s;
  stats_override_set_ = true;
}

std::vector<GenerateRequest> FakeEngine::submitted() const {
  std::lock_guard lock(mu_);
  return submitted_;
}

std::set<uint64_t> FakeEngine::aborted() const {
  std::lock_guard lock(mu_);
  return aborted_;
}

bool FakeEngine::wait_until_idle(std::chrono::milliseconds timeout) const {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (running_.load() > 0) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

EngineStats FakeEngine::stats() const {
  std::lock_guard lock(mu_);
  if (stats_override_set_) return stats_override_;
  EngineStats s;
  s.requests_running = running_.load();
  s.kv_blocks_total = 100;
  s.kv_blocks_free = 100 - 4 * s.requests_running;
  s.kv_cache_usage_ratio = 0.04 * static_cast<double>(s.requests_running);
  s.steps = steps_.load();
  s.has_pending_work = s.requests_running > 0;
  return s;
}

Result<std::shared_ptr<RequestStream>> FakeEngine::submit(GenerateRequest request) {
  if (!accepting_) return unavailable("engine is shutting down");
  {
    std::lock_guard lock(mu_);
    if (!submit_error_.is_ok()) return submit_error_;
  }
  if (request.prompt_token_ids.empty()) return invalid_argument("prompt: must not be empty");
  for (int32_t id : request.prompt_token_ids) {
    if (id < 0 || id >= FakeTokenizer::kVocab) return invalid_argument("prompt: id out of vocab");
  }
  const int64_t need =
      static_cast<int64_t>(request.prompt_token_ids.size()) + request.params.max_tokens;
  if (need > max_model_len_) return out_of_range("prompt + max_tokens exceeds max_model_len");
  const uint64_t id = next_id_.fetch_add(1);
  auto stream = std::make_shared<RequestStream>(id, request.params.n, 4096);
  running_.fetch_add(1);
  std::lock_guard lock(mu_);
  submitted_.push_back(request);
  if (!request.external_id.empty()) external_[request.external_id] = id;
  threads_.emplace_back(
      [this, id, request, stream]() mutable { run(id, std::move(request), stream); });
  return stream;
}

void FakeEngine::abort(uint64_t request_id) {
  std::lock_guard lock(mu_);
  aborted_.insert(request_id);
}

bool FakeEngine::abort_external(const std::string& external_id) {
  std::lock_guard lock(mu_);
  auto it = external_.find(external_id);
  if (it == external_.end()) return false;
  aborted_.insert(it->second);
  return true;
}

bool FakeEngine::is_aborted(uint64_t id) const {
  std::lock_guard lock(mu_);
  return aborted_.count(id) > 0;
}

void FakeEngine::run(uint64_t id, GenerateRequest req, std::shared_ptr<RequestStream> stream) {
  FakeScript script;
  {
    std::lock_guard lock(mu_);
    script = script_;
  }
  const int32_t n = std::max(req.params.n, 1);
  const auto prompt_len = static_cast<int32_t>(req.prompt_token_ids.size());
  std::vector<int32_t> produced(static_cast<size_t>(n), 0);
  int32_t completion = 0;
  auto make = [&](int32_t index) {
    StepOutput o;
    o.request_id = id;
    o.index = index;
    o.usage.prompt_tokens = prompt_len;
    return o;
  };
  auto finish_all = [&](FinishReason r) {
    for (int32_t i = 0; i < n; ++i) {
      StepOutput o = make(i);
      o.finish = r;
      o.usage.completion_tokens = completion;
      stream->push(std::move(o));
    }
  };
  std::this_thread::sleep_for(script.first_delay);
  FinishReason reason = FinishReason::kStop;
  bool done = false;
  for (size_t step = 0; !done; ++step) {
    if (is_aborted(id) || stream->cancelled()) {
      finish_all(FinishReason::kAbort);
      break;
    }
    if (req.deadline && std::chrono::steady_clock::now() > *req.deadline) {
      finish_all(FinishReason::kTimeout);
      break;
    }
    steps_.fetch_add(1);
    if (step >= script.pieces.size() || static_cast<int32_t>(step) >= req.params.max_tokens) {
      reason = step >= script.pieces.size() ? FinishReason::kStop : FinishReason::kLength;
      finish_all(reason);
      break;
    }
    const std::string& piece = script.pieces[step];
    for (int32_t i = 0; i < n; ++i) {
      StepOutput o = make(i);
      o.text = piece;
      o.token_ids = {
          static_cast<int32_t>(static_cast<unsigned char>(piece.empty() ? 'x' : piece[0]))};
      completion += 1;
      if (req.params.logprobs >= 0) {
        TokenLogprob lp{o.token_ids[0], -0.5f, {}};
        for (int32_t k = 0; k < req.params.logprobs; ++k) lp.top.push_back({k + 'a', -1.0f - k});
        o.logprobs.push_back(lp);
      }
      const bool last = step + 1 == script.pieces.size() ||
                        static_cast<int32_t>(step) + 1 >= req.params.max_tokens;
      if (script.error_mid_stream && i == 0 && step == 0) {
        o.finish = FinishReason::kError;
        o.error = internal_error("scripted failure");
        done = true;
      } else if (last) {
        o.finish = step + 1 == script.pieces.size() ? FinishReason::kStop : FinishReason::kLength;
        done = true;
      }
      produced[static_cast<size_t>(i)]++;
      o.usage.completion_tokens = completion;
      stream->push(std::move(o));
    }
    if (done) break;
    std::this_thread::sleep_for(script.step_delay);
  }
  stream->close();
  {
    std::lock_guard lock(mu_);
    for (auto it = external_.begin(); it != external_.end();) {
      it = it->second == id ? external_.erase(it) : std::next(it);
    }
  }
  metrics_.time_to_first_token.observe(0.01);
  running_.fetch_sub(1);
}

}  // namespace llmserve::testing
