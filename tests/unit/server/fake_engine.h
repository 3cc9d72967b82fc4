// An Engine with scripted output for server tests: every request streams `script.pieces`
// (one piece per step, `script.step_delay` apart) for each of its n samples, then finishes
// with "stop" (script exhausted) or "length" (max_tokens reached). Aborts, deadlines and
// submit errors behave like the real engine's contract (engine/engine.h).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/model/model_config.h"
#include "tests/unit/server/fake_tokenizer.h"

namespace llmserve::testing {

struct FakeScript {
  std::vector<std::string> pieces = {"hello", " world"};
  std::chrono::milliseconds step_delay{0};
  std::chrono::milliseconds first_delay{0};  // before the first piece (a "prefill")
  bool error_mid_stream = false;             // finish the first sample with kError
};

class FakeEngine : public Engine {
 public:
  FakeEngine();
  ~FakeEngine() override;

  Result<std::shared_ptr<RequestStream>> submit(GenerateRequest request) override;
  void abort(uint64_t request_id) override;
  bool abort_external(const std::string& external_id) override;

  const Tokenizer& tokenizer() const override { return tokenizer_; }
  const ChatTemplate* chat_template() const override { return nullptr; }
  GrammarCompiler& grammar_compiler() override { return grammar_compiler_; }
  const ModelConfig& model_config() const override { return config_; }
  int32_t max_model_len() const override { return max_model_len_; }
  const EngineOptions& options() const override { return options_; }
  std::string model_name() const override { return "fake-model"; }

  EngineStats stats() const override;
  const EngineMetrics& metrics() const override { return metrics_; }
  void stop_accepting() override { accepting_ = false; }
  void shutdown() override;

  // Test controls and observations.
  void set_script(FakeScript s);
  void set_max_model_len(int32_t n) { max_model_len_ = n; }
  void set_submit_error(Status s);         // the next submits fail with it (OK clears)
  void set_stats_override(EngineStats s);  // stats() returns this (for /ready, admission)
  std::vector<GenerateRequest> submitted() const;
  std::set<uint64_t> aborted() const;
  int running() const { return running_.load(); }
  bool wait_until_idle(std::chrono::milliseconds timeout) const;

 private:
  void run(uint64_t id, GenerateRequest req, std::shared_ptr<RequestStream> stream);
  bool is_aborted(uint64_t id) const;

  FakeTokenizer tokenizer_;
  ModelConfig config_;
  GrammarCompiler grammar_compiler_{tokenizer_, FakeTokenizer::kVocab,
                                    GrammarCompilerOptions{1, 16}};
  EngineOptions options_;
  EngineMetrics metrics_;
  int32_t max_model_len_ = 256;
  std::atomic<bool> accepting_{true};
  std::atomic<int> running_{0};
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> steps_{0};

  mutable std::mutex mu_;
  FakeScript script_;
  Status submit_error_;
  bool stats_override_set_ = false;
  EngineStats stats_override_;
  std::vector<GenerateRequest> submitted_;
  std::set<uint64_t> aborted_;
  std::map<std::string, uint64_t> external_;
  std::vector<std::thread> threads_;
};

}  // namespace llmserve::testing
