// vllm.grpc.engine.VllmEngine, the worker service of the SGLang Model Gateway (smg), beside
// llmserve.v1.Generation on the same port. Raw callback methods (wire_codec.h), so malformed
// bytes are INVALID_ARGUMENT; API keys as for Generation, except HealthCheck (as grpc.health).
// Generate runs a GenerationJob (vllm_generate_call.h); Abort cancels requests by their id;
// GetModelInfo / GetServerInfo / GetLoads describe the engine (vllm_info.h); GetTokenizer
// streams the tokenizer files as a zip (tokenizer_bundle.h); FlushCache drops the prefix cache.
// SubscribeKvEvents streams the engine's KV events (kv_events_fanout.h: one thread for every
// subscriber, at most ServerOptions::max_kv_event_subscribers). Embed runs a pooling request
// (vllm_embed_call.h). The profiler calls are UNIMPLEMENTED, as is SubscribeKvEvents when the
// engine publishes no KV events. Metrics label each method "VllmEngine/<name>".
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "server/common/server_state.h"
#include "server/grpc/generation_service.h"
#include "server/grpc/kv_events_fanout.h"
#include "server/grpc/tokenizer_bundle.h"
#include "server/metrics/server_metrics.h"
#include "vllm/grpc/engine/vllm_engine.grpc.pb.h"

namespace llmserve {

namespace vllm_raw {
using E = ::vllm::grpc::engine::VllmEngine;
using Service = E::WithRawCallbackMethod_Generate<
    E::WithRawCallbackMethod_HealthCheck<E::WithRawCallbackMethod_FlushCache<
        E::WithRawCallbackMethod_Abort<E::WithRawCallbackMethod_GetModelInfo<
            E::WithRawCallbackMethod_GetServerInfo<E::WithRawCallbackMethod_GetLoads<
                E::WithRawCallbackMethod_GetTokenizer<E::WithRawCallbackMethod_SubscribeKvEvents<
                    E::WithRawCallbackMethod_Embed<E::Service>>>>>>>>>>;
}  // namespace vllm_raw

class VllmEngineService final : public vllm_raw::Service {
 public:
  // `calls`: the Generation service, whose call helpers (API keys, retry hints, unary
  // finishing and counting) this service shares.
  VllmEngineService(ServerState& state, ServerMetrics& metrics, GenerationService& calls);

  using Writer = grpc::ServerWriteReactor<grpc::ByteBuffer>;
  using Unary = grpc::ServerUnaryReactor;
  using Ctx = grpc::CallbackServerContext;
  using Bytes = grpc::ByteBuffer;

  Writer* Generate(Ctx* ctx, const Bytes* req) override;
  Unary* HealthCheck(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  Unary* FlushCache(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  Unary* Abort(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  Unary* GetModelInfo(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  Unary* GetServerInfo(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  Unary* GetLoads(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  Unary* Embed(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  Writer* GetTokenizer(Ctx* ctx, const Bytes* req) override;
  Writer* SubscribeKvEvents(Ctx* ctx, const Bytes* req) override;

  ServerState& state() { return state_; }
  ServerMetrics& metrics() { return metrics_; }
  GenerationService& calls() { return calls_; }

 private:
  // The zip of GetTokenizer, made on the first call and kept.
  Result<std::shared_ptr<const TokenizerBundle>> bundle();
  Writer* fail_stream(Ctx* ctx, const char* method, const grpc::Status& status);

  ServerState& state_;
  ServerMetrics& metrics_;
  GenerationService& calls_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<double> last_receive_{0.0};
  std::mutex bundle_mu_;
  std::shared_ptr<const TokenizerBundle> bundle_;
  std::mutex kv_events_mu_;
  std::unique_ptr<KvEventsFanout> kv_events_;  // made with the first SubscribeKvEvents
};

}  // namespace llmserve
