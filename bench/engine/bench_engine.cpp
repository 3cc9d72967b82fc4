// bench_engine: for each concurrency level C, submits C requests of `prompt_tokens` random
// tokens each (distinct, so no prefix hits) asking for exactly `gen_tokens` tokens, waits for all,
// and reports the median over repeats of: aggregate output tok/s (all tokens / wall time),
// decode tok/s (decode-only steps: tokens / their wall time), and per step the scheduler's own
// time (schedule + update + batch building) next to the model's (ModelRunner::execute).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/engine.h"
#include "engine/llm_engine.h"

namespace {

using llmserve::Engine;
using llmserve::EngineOptions;
using llmserve::GenerateRequest;
using llmserve::LlmEngine;
using llmserve::StepTimings;

struct Run {
  double wall_s = 0;
  double output_tok_s = 0;
  double decode_tok_s = 0;
  double sched_ms_per_step = 0;
  double model_ms_per_step = 0;
  double sample_ms_per_step = 0;
  double output_ms_per_step = 0;
  double decode_step_ms = 0;
  uint64_t steps = 0;
  int64_t tokens = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

StepTimings diff(const StepTimings& a, const StepTimings& b) {
  StepTimings d;
  d.steps = a.steps - b.steps;
  d.schedule_s = a.schedule_s - b.schedule_s;
  d.model_s = a.model_s - b.model_s;
  d.sample_s = a.sample_s - b.sample_s;
  d.output_s = a.output_s - b.output_s;
  d.decode_only_steps = a.decode_only_steps - b.decode_only_steps;
  d.decode_only_s = a.decode_only_s - b.decode_only_s;
  d.decode_only_tokens = a.decode_only_tokens - b.decode_only_tokens;
  return d;
}

Run run_level(LlmEngine& engine, int concurrency, int prompt_tokens, int gen_tokens,
              std::mt19937& rng) {
  const auto vocab = static_cast<int32_t>(engine.model_config().vocab_size);
  std::uniform_int_distribution<int32_t> token(100, std::min(vocab, 20000) - 1);
  std::vector<GenerateRequest> reqs(static_cast<size_t>(concurrency));
  for (auto& r : reqs) {
    r.prompt_token_ids.resize(static_cast<size_t>(prompt_tokens));
    for (auto& t : r.prompt_token_ids) t = token(rng);
    r.params.max_tokens = gen_tokens;
    r.params.temperature = 0.0f;
    r.params.ignore_eos = true;
  }
  const StepTimings before = engine.step_timings();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<llmserve::RequestStream>> streams;
  for (auto& r : reqs) {
    auto s = engine.submit(std::move(r));
    if (!s.is_ok()) {
      std::fprintf(stderr, "submit: %s\n", s.status().to_string().c_str());
      std::exit(1);
    }
    streams.push_back(*s);
  }
  int64_t tokens = 0;
  for (auto& s : streams) {
    while (auto out = s->next()) tokens += static_cast<int64_t>(out->token_ids.size());
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const StepTimings d = diff(engine.step_timings(), before);
  Run r;
  r.wall_s = wall;
  r.tokens = tokens;
  r.steps = d.steps;
  r.output_tok_s = static_cast<double>(tokens) / wall;
  r.decode_tok_s =
      d.decode_only_s > 0 ? static_cast<double>(d.decode_only_tokens) / d.decode_only_s : 0;
  r.decode_step_ms = d.decode_only_steps > 0
                         ? 1e3 * d.decode_only_s / static_cast<double>(d.decode_only_steps)
                         : 0;
  const double steps = std::max<double>(1, static_cast<double>(d.steps));
  r.sched_ms_per_step = 1e3 * d.schedule_s / steps;
  r.model_ms_per_step = 1e3 * d.model_s / steps;
  r.sample_ms_per_step = 1e3 * d.sample_s / steps;
  r.output_ms_per_step = 1e3 * d.output_s / steps;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_engine: engine throughput at several concurrency levels"};
  std::string model;
  if (const char* m = std::getenv("LLMSERVE_TEST_MODEL")) model = m;
  if (model.empty()) model = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
  std::vector<int> levels = {1, 4, 16, 64};
  int threads = 2, prompt_tokens = 256, gen_tokens = 128, repeats = 3, max_batched = 2048;
  uint64_t kv_mib = 1536;
  app.add_option("--model", model, "model path (.gguf or HF dir)");
  app.add_option("--concurrency", levels, "concurrency levels")->delimiter(',');
  app.add_option("--threads", threads, "CPU threads");
  app.add_option("--prompt-tokens", prompt_tokens, "prompt tokens per request");
  app.add_option("--gen-tokens", gen_tokens, "generated tokens per request");
  app.add_option("--repeats", repeats, "runs per level (the median is reported)");
  app.add_option("--kv-mib", kv_mib, "KV cache budget in MiB");
  app.add_option("--max-batched-tokens", max_batched, "max_num_batched_tokens");
  std::string precision = "q8x2";
  app.add_option("--cpu-matmul-precision", precision, "q8x2 or q8")
      ->check(CLI::IsMember({"q8x2", "q8"}));
  std::string kv_dtype = "f16";
  app.add_option("--kv-cache-dtype", kv_dtype, "f16, f32 or int8")
      ->check(CLI::IsMember({"f16", "f32", "int8"}));
  CLI11_PARSE(app, argc, argv);

  EngineOptions o;
  o.model_path = model;
  o.threads = threads;
  o.cpu_matmul_precision = precision;
  o.kv_cache_dtype = kv_dtype;
  o.kv_cache_bytes = kv_mib << 20;
  o.max_num_seqs = std::max(64, *std::max_element(levels.begin(), levels.end()));
  o.max_num_batched_tokens = std::max(max_batched, o.max_num_seqs);
  o.max_model_len = prompt_tokens + gen_tokens + 16;
  o.enable_prefix_caching = false;
  auto created = Engine::create(o);
  if (!created.is_ok()) {
    std::fprintf(stderr, "engine: %s\n", created.status().to_string().c_str());
    return 1;
  }
  auto* engine = dynamic_cast<LlmEngine*>(created->get());
  std::mt19937 rng(42);
  std::printf("model %s, %d threads, %d prompt + %d generated tokens, median of %d runs\n",
              model.c_str(), threads, prompt_tokens, gen_tokens, repeats);
  std::printf("%5s %9s %11s %11s %12s %10s %10s %10s %10s\n", "conc", "wall_s", "out_tok/s",
              "decode_t/s", "decode_step", "sched_ms", "model_ms", "sample_ms", "output_ms");
  for (int c : levels) {
    std::vector<double> wall, out, dec, dstep, sched, mdl, smp, outp;
    for (int i = 0; i < repeats; ++i) {
      const Run r = run_level(*engine, c, prompt_tokens, gen_tokens, rng);
      wall.push_back(r.wall_s);
      out.push_back(r.output_tok_s);
      dec.push_back(r.decode_tok_s);
      dstep.push_back(r.decode_step_ms);
      sched.push_back(r.sched_ms_per_step);
      mdl.push_back(r.model_ms_per_step);
      smp.push_back(r.sample_ms_per_step);
      outp.push_back(r.output_ms_per_step);
    }
    std::printf("%5d %9.2f %11.1f %11.1f %10.2fms %10.3f %10.2f %10.3f %10.3f\n", c, median(wall),
                median(out), median(dec), median(dstep), median(sched), median(mdl), median(smp),
                median(outp));
    std::fflush(stdout);
  }
  return 0;
}
