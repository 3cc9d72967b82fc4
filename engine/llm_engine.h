// LlmEngine: the Engine implementation (DESIGN §2). submit() / abort() run on any thread and
// only touch the EngineIntake; one engine thread drains it and drives the StepLoop, waiting on
// the intake's condition variable when idle. Stats are published as a snapshot after each step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/chat/chat_template.h"
#include "engine/engine.h"
#include "engine/engine_intake.h"
#include "engine/kv_events/kv_event_bus.h"
#include "engine/model/model_config.h"
#include "engine/pooling/pooler.h"
#include "engine/step_loop.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/vision/image_encoder.h"

namespace llmserve {

// The model name an engine serves: the model path's last component without ".gguf".
std::string model_name_of(const std::string& model_path);

// Where the KV transfer's thread wakes the engine thread: set once by LlmEngine before its
// thread starts, called only after the first pull or lease the engine thread made.
using KvWakeHook = std::shared_ptr<std::function<void()>>;

class LlmEngine final : public Engine {
 public:
  // Takes the loaded parts; starts the engine thread. `runner` and `scheduler` must agree on
  // block_size and num_blocks. chat_template and kv_agent may be null; kv_wake is the hook
  // kv_agent was created with.
  LlmEngine(const EngineOptions& options, std::unique_ptr<Tokenizer> tokenizer,
            std::unique_ptr<ChatTemplate> chat_template, std::unique_ptr<ModelRunner> runner,
            std::unique_ptr<Scheduler> scheduler, int32_t max_model_len,
            Speculation speculation = {}, std::unique_ptr<KvTransferAgent> kv_agent = nullptr,
            KvWakeHook kv_wake = nullptr, std::shared_ptr<const Pooler> pooler = nullptr,
            std::unique_ptr<KvOffloader> offloader = nullptr);
  ~LlmEngine() override;

  Result<std::shared_ptr<RequestStream>> submit(GenerateRequest request) override;
  void abort(uint64_t request_id) override;
  bool abort_external(const std::string& external_id) override;

  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  const ChatTemplate* chat_template() const override { return chat_template_.get(); }
  GrammarCompiler& grammar_compiler() override { return *grammar_compiler_; }
  const ModelConfig& model_config() const override { return config_; }
  const Pooler* pooler() const override { return pooler_.get(); }
  vision::ImageEncoder* image_encoder() const override { return image_encoder_.get(); }
  // Set once by Engine::create before the engine is handed out.
  void set_image_encoder(std::unique_ptr<vision::ImageEncoder> encoder) {
    image_encoder_ = std::move(encoder);
  }
  int32_t max_model_len() const override { return max_model_len_; }
  const EngineOptions& options() const override { return options_; }
  std::string model_name() const override { return model_name_; }

  EngineStats stats() const override;
  const EngineMetrics& metrics() const override { return metrics_; }

  void stop_accepting() override;
  void shutdown() override;

  KvEventBus* kv_event_bus() override { return kv_events_.get(); }
  std::string kv_engine_id() const override { return kv_engine_id_; }
  int32_t kv_transfer_port() const override { return kv_transfer_port_; }
  Result<bool> reset_prefix_cache() override;

  // Phase timings of the steps run so far (benchmarks).
  StepTimings step_timings() const { return loop_->step_timings(); }
  // KV cache consistency once the engine is idle: every block free or cached, nothing held.
  // Runs on the engine thread; blocks the caller until it has.
  Status check_kv_invariants();

 private:
  void run();
  void publish_stats();
  void publish_kv_events();
  // Engine thread: answers a pending reset_prefix_cache() / check_kv_invariants() call.
  void serve_engine_thread_calls();
  Status validate(const GenerateRequest& r) const;
  Status validate_images(const GenerateRequest& r) const;

  EngineOptions options_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_template_;
  ModelConfig config_;
  std::shared_ptr<const Pooler> pooler_;
  std::unique_ptr<vision::ImageEncoder> image_encoder_;
  std::unique_ptr<GrammarCompiler> grammar_compiler_;
  int32_t max_model_len_;
  std::string model_name_;
  EngineMetrics metrics_;
  EngineIntake intake_;
  std::unique_ptr<StepLoop> loop_;
  std::atomic<uint64_t> next_id_{1};

  mutable std::mutex stats_mu_;
  EngineStats stats_;
  std::atomic<int64_t> last_step_ns_{0};
  uint64_t wedge_after_steps_ = 0;  // fault injection: 0 = never

  int64_t kv_usable_tokens_ = 0;
  std::string kv_engine_id_;
  int32_t kv_transfer_port_ = 0;
  std::unique_ptr<KvEventBus> kv_events_;  // null when KV events are off

  std::mutex invariant_mu_;
  std::condition_variable invariant_cv_;
  bool invariant_requested_ = false;
  bool invariant_done_ = false;
  bool reset_requested_ = false;  // reset_prefix_cache(), guarded by invariant_mu_ like the rest
  bool reset_done_ = false;
  bool reset_result_ = false;
  bool stopped_ = false;  // engine thread has exited (guarded by invariant_mu_)
  Status invariant_result_;

  std::mutex shutdown_mu_;
  std::thread thread_;
};

}  // namespace llmserve
