// `llmserve generate`: one prompt through the CPU model runner, the completion streamed to
// stdout as it is made, then one stats line on stderr. A direct path (no engine, no scheduler)
// for checking the model: one sequence, contiguous KV blocks. On CUDA or with speculation the
// prompt goes through the engine instead.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "config/config_cli.h"
#include "engine/chat/chat_template.h"
#include "engine/engine.h"
#include "engine/model/model_weights.h"
#include "engine/runner/batch_builder.h"
#include "engine/runner/model_runner.h"
#include "engine/runner/sampler.h"
#include "engine/runner/sampling_state.h"
#include "engine/runner/stop_checker.h"
#include "engine/tokenizer/load_tokenizer.h"
#include "server/cli/command.h"
#include "server/cli/generate_prompts_file.h"
#include "server/cli/log_to_stderr.h"
#include "server/common/options_from_config.h"

namespace llmserve::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The request's own options; the engine's come from the configuration (--config, env,
// --engine.* flags), as `serve` takes them.
struct GenerateOptions {
  std::string prompt;
  bool chat = false;
  int32_t max_tokens = 64;
  float temperature = 0.0f;
  float top_p = 1.0f;
  int32_t top_k = 0;
  std::optional<uint64_t> seed;  // --seed (engine.seed) when given, else random
  std::string logits_out;
  std::string prompts_file;  // JSONL of requests run through the engine (generate_prompts_file.h)
  bool ignore_eos = false;
  bool sequential = false;  // prompts file: one request at a time
  EngineOptions engine;
};

// With speculation the one prompt goes through the engine (the direct path has no drafts):
// the text is printed when it is complete, then the stats line with the acceptance figures.
int run_through_engine(const GenerateOptions& o) {
  nlohmann::json line;
  if (o.chat) {
    line["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", o.prompt}}});
  } else {
    line["prompt"] = o.prompt;
  }
  line["max_tokens"] = o.max_tokens;
  line["temperature"] = o.temperature;
  line["top_p"] = o.top_p;
  line["top_k"] = o.top_k;
  line["ignore_eos"] = o.ignore_eos;
  if (o.seed) line["seed"] = *o.seed;
  auto engine = Engine::create(o.engine);
  if (!engine.is_ok()) {
    std::cerr << "error: " << engine.status().to_string() << "\n";
    return engine.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::istringstream in(line.dump());
  std::ostringstream out;
  const int rc = run_prompts_file(**engine, in, out);
  const nlohmann::json result = nlohmann::json::parse(out.str(), nullptr, false);
  const EngineStats stats = (*engine)->stats();
  (*engine)->shutdown();
  if (result.is_discarded() || result.contains("error")) {
    std::cerr << "error: " << (result.is_discarded() ? out.str() : result["error"].dump()) << "\n";
    return 1;
  }
  std::cout << result.value("text", "") << "\n" << std::flush;
  const int generated = result["usage"].value("completion_tokens", 0);
  const double ttft = result.value("ttft_ms", 0.0), e2e = result.value("e2e_ms", 0.0);
  const double decode_tps =
      generated > 1 && e2e > ttft ? 1000.0 * (generated - 1) / (e2e - ttft) : 0;
  char text[256];
  std::snprintf(text, sizeof text,
                "stats: prompt %d tok, generated %d tok, ttft %.1f ms, decode %.1f tok/s",
                result["usage"].value("prompt_tokens", 0), generated, ttft, decode_tps);
  std::cerr << text << "\n";
  if (const std::string spec = spec_stats_line(stats); !spec.empty()) std::cerr << spec << "\n";
  return rc;
}

double ms_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

std::string token_text(const TokenizerSpec& spec, int32_t id) {
  return id >= 0 && static_cast<size_t>(id) < spec.tokens.size()
             ? spec.tokens[static_cast<size_t>(id)]
             : "";
}

Result<std::vector<int32_t>> prompt_ids(const GenerateOptions& o, const Tokenizer& tok) {
  if (!o.chat) return tok.encode(o.prompt, /*add_special=*/true, /*parse_special=*/true);
  const TokenizerSpec& spec = tok.spec();
  if (spec.chat_template.empty()) return not_found(o.engine.model_path + " has no chat template");
  LLMSERVE_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::parse(spec.chat_template));
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "user"}, {"content", o.prompt}});
  LLMSERVE_ASSIGN_OR_RETURN(std::string text,
                            apply_chat_template(tmpl, messages, true, token_text(spec, spec.bos_id),
                                                token_text(spec, spec.eos_id)));
  // As HF apply_chat_template(tokenize=True): the template already placed any BOS.
  return tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
}

Status write_logits(const std::string& path, std::span<const float> logits) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return not_found("cannot write " + path);
  out.write(reinterpret_cast<const char*>(logits.data()),
            static_cast<std::streamsize>(logits.size() * sizeof(float)));
  return out ? Status::ok() : internal_error("short write to " + path);
}

Status run(const GenerateOptions& o) {
  LLMSERVE_ASSIGN_OR_RETURN(auto tok, load_tokenizer(o.engine.model_path));
  LLMSERVE_ASSIGN_OR_RETURN(auto model, load_model(o.engine.model_path));
  const ModelConfig cfg = model->config();
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, prompt_ids(o, *tok));
  if (prompt.empty()) return invalid_argument("the prompt has no tokens");
  const int64_t context = cfg.max_context > 0 ? cfg.max_context : 4096;
  if (static_cast<int64_t>(prompt.size()) >= context) {
    return out_of_range("prompt of " + std::to_string(prompt.size()) +
                        " tokens fills the context of " + std::to_string(context));
  }
  const int32_t max_new = static_cast<int32_t>(
      std::min<int64_t>(o.max_tokens, context - static_cast<int64_t>(prompt.size())));

  ModelRunnerOptions ro;
  ro.num_threads = o.engine.threads > 0
                       ? o.engine.threads
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  LLMSERVE_ASSIGN_OR_RETURN(ro.matmul_precision,
                            parse_matmul_precision_setting(o.engine.cpu_matmul_precision));
  const auto kv_dtype = kernels::parse_kv_dtype(o.engine.kv_cache_dtype);
  if (!kv_dtype) return invalid_argument("engine.kv_cache_dtype must be f16, f32, int8 or fp8");
  ro.kv_cache_dtype = *kv_dtype;
  ro.quantize = o.engine.quantize;
  LLMSERVE_RETURN_IF_ERROR(apply_cpu_isa(o.engine.cpu_isa));
  ro.max_tokens_per_step = std::min<int64_t>(static_cast<int64_t>(prompt.size()), 2048);
  ro.max_samples_per_step = 1;
  const int64_t total = static_cast<int64_t>(prompt.size()) + max_new;
  const int64_t blocks = (total + ro.block_size - 1) / ro.block_size;
  ro.kv_cache_bytes =
      static_cast<uint64_t>(blocks * ro.block_size) * cfg.kv_bytes_per_token(ro.kv_cache_dtype);
  LLMSERVE_ASSIGN_OR_RETURN(auto runner, ModelRunner::create(std::move(model), ro));

  SamplingParams params;
  params.temperature = o.temperature;
  params.top_p = o.top_p;
  params.top_k = o.top_k;
  params.max_tokens = max_new;
  params.ignore_eos = o.ignore_eos;
  params.seed = o.seed ? *o.seed : std::random_device{}();
  LLMSERVE_RETURN_IF_ERROR(params.validate(static_cast<int32_t>(cfg.vocab_size)));
  const std::vector<int32_t>& stop_ids = tok->spec().stop_ids;
  Sampler sampler(static_cast<int32_t>(cfg.vocab_size), stop_ids);
  SamplingState state(params, prompt, *params.seed);
  const size_t ctx_n = std::min<size_t>(prompt.size(), 4);
  StopChecker stop(*tok, params, stop_ids, max_new,
                   std::span<const int32_t>(prompt).subspan(prompt.size() - ctx_n));

  std::vector<int32_t> tokens = prompt;
  tokens.reserve(static_cast<size_t>(total));
  const std::vector<int32_t> table = contiguous_block_table(0, total, ro.block_size);
  BatchBuilder builder(ro.block_size);
  int32_t computed = 0;
  int32_t generated = 0;

  const auto t0 = Clock::now();
  Clock::time_point t_first = t0;
  while (max_new > 0 && !stop.finished()) {
    const int32_t known = static_cast<int32_t>(tokens.size());
    const int32_t n =
        std::min<int32_t>(known - computed, static_cast<int32_t>(ro.max_tokens_per_step));
    BatchEntry entry{tokens, computed, n, table, computed + n == known};
    entry.num_prompt = static_cast<int32_t>(prompt.size());
    LLMSERVE_ASSIGN_OR_RETURN(ForwardBatch batch, builder.build(std::span(&entry, 1)));
    LLMSERVE_ASSIGN_OR_RETURN(std::span<const float> logits, runner->execute(batch));
    computed += n;
    if (!entry.sample) continue;
    if (generated == 0 && !o.logits_out.empty()) {
      LLMSERVE_RETURN_IF_ERROR(write_logits(o.logits_out, logits));
    }
    const SampleResult r = sampler.sample(logits, params, state);
    if (generated == 0) t_first = Clock::now();
    ++generated;
    tokens.push_back(r.token_id);
    const OutputDelta d = stop.append(r.token_id);
    std::cout << d.text << std::flush;
  }
  std::cout << stop.flush() << "\n" << std::flush;
  const auto t_end = Clock::now();
  const double ttft = ms_since(t0, t_first);
  const double prefill_tps = ttft > 0 ? 1000.0 * static_cast<double>(prompt.size()) / ttft : 0;
  const double decode_ms = ms_since(t_first, t_end);
  const double decode_tps =
      generated > 1 && decode_ms > 0 ? 1000.0 * (generated - 1) / decode_ms : 0;
  char line[256];
  std::snprintf(line, sizeof line,
                "stats: prompt %zu tok, generated %d tok, ttft %.1f ms, prefill %.1f tok/s, decode "
                "%.1f tok/s",
                prompt.size(), generated, ttft, prefill_tps, decode_tps);
  std::cerr << line << ", matmul activations " << matmul_precision_name(runner->matmul_precision())
            << "\n";
  return Status::ok();
}

}  // namespace

// The engine path (the scheduler, speculation, CUDA) or the direct one (CPU model runner,
// streams as it goes, --logits-out).
bool needs_engine(const EngineOptions& e) {
  const bool cuda = e.device == "cuda" || (e.device == "auto" && cuda_backend_available());
  return cuda || e.speculative.enabled();
}

void add_generate_command(CLI::App& root, int& exit_code) {
  auto o = std::make_shared<GenerateOptions>();
  auto flags = std::make_shared<ConfigFlags>();
  CLI::App* cmd = root.add_subcommand(
      "generate",
      "Complete one prompt, streaming the text to stdout and stats to stderr; takes the engine's "
      "configuration as `serve` does (--config, LLMSERVE_* env, --engine.* flags)");
  cmd->add_option("--prompt", o->prompt, "The prompt text (or --prompts-file)");
  cmd->add_option("--prompts-file", o->prompts_file,
                  "JSONL, one request per line with its own params, run concurrently through the "
                  "engine; prints one JSON result per line in input order (- = stdin)");
  cmd->add_flag("--chat", o->chat,
                "Wrap the prompt as a user message with the model's chat template");
  cmd->add_option("--max-tokens", o->max_tokens, "Most new tokens")->check(CLI::NonNegativeNumber);
  cmd->add_option("--temperature", o->temperature, "0 = greedy (the default)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-p", o->top_p, "Nucleus sampling mass, (0, 1]")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--top-k", o->top_k, "Keep the k most likely tokens; 0 = off");
  cmd->add_option("--logits-out", o->logits_out,
                  "Write the last prompt position's logits here (float32 little-endian)");
  cmd->add_flag("--ignore-eos", o->ignore_eos, "Do not stop at the model's stop tokens");
  cmd->add_flag("--sequential", o->sequential,
                "--prompts-file: run the lines one after the other (single-stream figures)");
  add_config_options(*cmd, *flags);
  cmd->callback([o, flags, &exit_code] {
    log_to_stderr();
    auto config = load_config(*flags, current_environment());
    if (!config.is_ok()) {
      std::cerr << "error: " << config.status().message() << "\n";
      exit_code = 2;
      return;
    }
    auto engine = engine_options_from_config(*config);
    if (!engine.is_ok()) {
      std::cerr << "error: " << engine.status().message() << "\n";
      exit_code = 2;
      return;
    }
    o->engine = std::move(engine).value();
    for (const ConfigOverride& ov : flags->overrides()) {
      if (ov.key == "engine.seed") o->seed = config->engine.seed;
    }
    if (!o->prompts_file.empty()) {
      exit_code = run_generate_prompts_file(o->engine, o->prompts_file, o->sequential);
      return;
    }
    if (o->prompt.empty()) {
      std::cerr << "error: --prompt or --prompts-file is required\n";
      exit_code = 2;
      return;
    }
    if (needs_engine(o->engine)) {
      exit_code = run_through_engine(*o);
      return;
    }
    const Status st = run(*o);
    if (!st.is_ok()) {
      std::cerr << "error: " << st.to_string() << "\n";
      exit_code = st.code() == StatusCode::kInvalidArgument ? 2 : 1;
      return;
    }
    exit_code = 0;
  });
}

}  // namespace llmserve::cli
