#include "server/grpc/vllm_info.h"

#include <chrono>
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/model/model_config.h"
#include "engine/runner/stop_checker.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/common/version.h"

namespace llmserve {

namespace {

namespace vpb = ::vllm::grpc::engine;

// The Hugging Face class name of an architecture ("llama" -> "LlamaForCausalLM").
std::string hf_architecture(const std::string& arch) {
  if (arch == "llama") return "LlamaForCausalLM";
  if (arch == "mistral") return "MistralForCausalLM";
  if (arch == "qwen2") return "Qwen2ForCausalLM";
  return "";
}

std::string iso8601_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

vpb::GetModelInfoResponse vllm_model_info(const ServerState& state) {
  vpb::GetModelInfoResponse m;
  const Engine& engine = *state.engine();
  const ModelConfig& cfg = engine.model_config();
  const Tokenizer& tok = engine.tokenizer();
  // Absolute, so that a router on this host can read a model folder's tokenizer from any cwd.
  std::string path = engine.options().model_path;
  std::error_code ec;
  if (!path.empty()) {
    if (auto abs = std::filesystem::absolute(path, ec); !ec) path = abs.lexically_normal().string();
  }
  m.set_model_path(path);
  m.set_tokenizer_path(path);
  m.set_is_generation(true);
  m.set_max_context_length(static_cast<uint32_t>(engine.max_model_len()));
  m.set_vocab_size(static_cast<uint32_t>(tok.vocab_size()));
  m.set_supports_vision(false);
  m.set_served_model_name(state.model_name());
  m.set_model_type(cfg.architecture);
  if (const std::string hf = hf_architecture(cfg.architecture); !hf.empty()) {
    m.add_architectures(hf);
  }
  for (int32_t id : generation_eos_ids(tok, cfg)) m.add_eos_token_ids(id);
  m.set_pad_token_id(tok.spec().pad_id >= 0 ? tok.spec().pad_id : cfg.pad_id);
  m.set_bos_token_id(tok.spec().bos_id >= 0 ? tok.spec().bos_id : cfg.bos_id);
  m.set_max_req_input_len(std::max(engine.max_model_len() - 1, 0));
  nlohmann::json defaults = nlohmann::json::object();
  for (const auto& [key, value] : state.options().default_sampling.items()) defaults[key] = value;
  if (!defaults.empty()) m.set_default_sampling_params_json(defaults.dump());
  return m;
}

vpb::GetServerInfoResponse vllm_server_info(const ServerState& state, double uptime_seconds,
                                            double last_receive) {
  vpb::GetServerInfoResponse m;
  const Engine& engine = *state.engine();
  const EngineOptions& o = engine.options();
  m.set_active_requests(static_cast<uint32_t>(std::max(state.in_flight(), 0)));
  m.set_is_paused(state.draining());
  m.set_last_receive_timestamp(last_receive);
  m.set_uptime_seconds(uptime_seconds);
  m.set_server_type("llmserve-grpc");
  m.set_data_parallel_size(1);
  m.set_kv_cache_dtype(o.kv_cache_dtype);
  m.set_block_size(o.block_size);
  m.set_attention_backend("llmserve");
  m.set_pairing_protocol(kLlmservePairingProtocol);
  // Disaggregated prefill/decode: the connector is llmserve's own (UCX), not NIXL.
  if (o.kv_transfer.role != "none") {
    m.set_kv_connector("LlmserveConnector");
    m.set_kv_role(o.kv_transfer.role == "both" ? "kv_both"
                  : o.kv_transfer.produces()   ? "kv_producer"
                                               : "kv_consumer");
    m.set_kv_engine_id(engine.kv_engine_id());
  }
  m.set_max_num_seqs(o.max_num_seqs);
  m.set_constrained_decoding_start("first_token");
  return m;
}

vpb::GetLoadsResponse vllm_loads(const ServerState& state, const vpb::GetLoadsRequest& r) {
  vpb::GetLoadsResponse m;
  m.set_timestamp(iso8601_now());
  m.set_version(kLlmserveVersion);
  m.set_dp_rank_count(1);
  if (r.has_dp_rank() && r.dp_rank() != 0) return m;
  const Engine& engine = *state.engine();
  const EngineStats s = engine.stats();
  vpb::SchedulerLoad* l = m.add_loads();
  l->set_dp_rank(0);
  l->set_num_running_reqs(static_cast<int32_t>(s.requests_running));
  l->set_num_waiting_reqs(static_cast<int32_t>(s.requests_waiting));
  l->set_num_total_reqs(static_cast<int32_t>(s.requests_running + s.requests_waiting));
  const int64_t block = engine.options().block_size;
  const int64_t used_blocks = std::max<int64_t>(s.kv_blocks_total - s.kv_blocks_free, 0);
  l->set_num_used_tokens(static_cast<int32_t>(std::min<int64_t>(used_blocks * block, INT32_MAX)));
  l->set_max_total_num_tokens(
      static_cast<int32_t>(std::min<int64_t>(s.kv_capacity_tokens, INT32_MAX)));
  l->set_token_usage(std::clamp(s.kv_cache_usage_ratio, 0.0, 1.0));
  if (s.prefix_cache_queries > 0) {
    l->set_cache_hit_rate(static_cast<double>(s.prefix_cache_hits) /
                          static_cast<double>(s.prefix_cache_queries));
  }
  l->set_max_running_requests(engine.options().max_num_seqs);
  l->set_utilization(engine.options().max_num_seqs > 0
                         ? static_cast<double>(s.requests_running) / engine.options().max_num_seqs
                         : 0.0);
  l->set_num_waiting_uncached_tokens(
      static_cast<int32_t>(std::min<int64_t>(s.waiting_prompt_tokens, INT32_MAX)));
  return m;
}

}  // namespace llmserve
