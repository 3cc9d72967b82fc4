// bench_model_speed: end-to-end CPU speed of the model runner on one GGUF, without the engine or
// the server, for bench/llamacpp/compare.py and bench/RESULTS.md.
//   bench_model_speed --model M [--threads T] [--prompt-ids "1 2 3 ..." | --prompt-tokens N]
//                     [--gen-tokens G] [--streams 1,16] [--stream-prompt 32]
// Prints, one per line:
//   single prefill_tok_s=X decode_tok_s=Y prefill_cpu_ms=.. decode_cpu_ms_per_tok=..
//     one sequence: the prompt in one step, then G - 1 greedy decode steps (argmax included);
//   streams=S decode_tok_s=X step_ms=Y cpu_ms_per_step=Z
//     S sequences (distinct --stream-prompt-token prompts, prefilled untimed) decoding G steps
//     together: aggregate tok/s = S * G / time.
// CPU figures are the process's user + system time (both pool threads; the pool spins briefly
// while waiting, so they are an upper bound on the work).
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/model_weights.h"
#include "engine/runner/batch_builder.h"
#include "engine/runner/matmul_precision.h"
#include "engine/runner/model_runner.h"

namespace {

using namespace llmserve;
using Clock = std::chrono::steady_clock;

double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

struct Seq {
  std::vector<int32_t> tokens;
  std::vector<int32_t> table;
  int32_t computed = 0;
  int32_t num_prompt = 0;  // tokens[0, num_prompt) are the prompt
};

// One step over all sequences (each runs its uncomputed tokens); appends the greedy tokens.
Status step(ModelRunner& runner, BatchBuilder& builder, std::vector<Seq>& seqs) {
  std::vector<BatchEntry> entries;
  for (auto& s : seqs) {
    const int32_t n = static_cast<int32_t>(s.tokens.size()) - s.computed;
    BatchEntry e{s.tokens, s.computed, n, s.table, true};
    e.num_prompt = s.num_prompt;
    entries.push_back(e);
  }
  LLMSERVE_ASSIGN_OR_RETURN(ForwardBatch batch, builder.build(entries));
  LLMSERVE_ASSIGN_OR_RETURN(std::span<const float> logits, runner.execute(batch));
  const int64_t V = runner.config().vocab_size;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int32_t row = builder.sample_index(i);
    seqs[i].computed = static_cast<int32_t>(seqs[i].tokens.size());
    seqs[i].tokens.push_back(argmax(logits.subspan(static_cast<size_t>(row * V), V)));
  }
  return Status::ok();
}

MatmulPrecision g_precision;
kernels::KvDtype g_kv_dtype = kernels::KvDtype::kF16;

Status run(const std::string& model, int threads, std::vector<int32_t> prompt, int gen,
           const std::vector<int>& streams, int stream_prompt) {
  const int max_streams =
      streams.empty() ? 1 : std::max(1, *std::max_element(streams.begin(), streams.end()));
  ModelRunnerOptions ro;
  ro.model_path = model;
  ro.num_threads = threads;
  ro.matmul_precision = g_precision;
  ro.kv_cache_dtype = g_kv_dtype;
  ro.max_tokens_per_step = std::max<int64_t>(static_cast<int64_t>(prompt.size()),
                                             static_cast<int64_t>(max_streams) * stream_prompt);
  ro.max_samples_per_step = max_streams;
  const int64_t per_seq =
      std::max<int64_t>(static_cast<int64_t>(prompt.size()), stream_prompt) + gen + 1;
  const int64_t blocks_per_seq = (per_seq + ro.block_size - 1) / ro.block_size;
  LLMSERVE_ASSIGN_OR_RETURN(auto probe, load_model(model));
  ro.kv_cache_bytes = static_cast<uint64_t>(max_streams * blocks_per_seq * ro.block_size) *
                      probe->config().kv_bytes_per_token(g_kv_dtype);
  probe.reset();
  LLMSERVE_ASSIGN_OR_RETURN(auto runner, ModelRunner::create(ro));
  BatchBuilder builder(ro.block_size);
  auto table = [&](int s) {
    return contiguous_block_table(static_cast<int32_t>(s * blocks_per_seq), per_seq, ro.block_size);
  };

  if (!prompt.empty()) {
    std::vector<Seq> one{{prompt, table(0), 0, static_cast<int32_t>(prompt.size())}};
    const double c0 = cpu_ms();
    const auto t0 = Clock::now();
    LLMSERVE_RETURN_IF_ERROR(step(*runner, builder, one));
    const auto t1 = Clock::now();
    const double c1 = cpu_ms();
    for (int i = 1; i < gen; ++i) LLMSERVE_RETURN_IF_ERROR(step(*runner, builder, one));
    const auto t2 = Clock::now();
    const double c2 = cpu_ms();
    std::printf(
        "single prompt=%zu prefill_tok_s=%.2f decode_tok_s=%.2f prefill_cpu_ms=%.1f "
        "decode_cpu_ms_per_tok=%.3f\n",
        prompt.size(), 1e3 * static_cast<double>(prompt.size()) / ms(t0, t1),
        1e3 * (gen - 1) / ms(t1, t2), c1 - c0, (c2 - c1) / std::max(1, gen - 1));
  }
  for (int S : streams) {
    std::vector<Seq> seqs;
    for (int s = 0; s < S; ++s) {
      std::vector<int32_t> p(static_cast<size_t>(stream_prompt));
      for (int i = 0; i < stream_prompt; ++i)
        p[static_cast<size_t>(i)] = 1000 + (37 * s + 11 * i) % 30000;
      seqs.push_back({std::move(p), table(s), 0, stream_prompt});
    }
    LLMSERVE_RETURN_IF_ERROR(step(*runner, builder, seqs));  // prefill, not timed
    const double c0 = cpu_ms();
    const auto t0 = Clock::now();
    for (int i = 0; i < gen; ++i) LLMSERVE_RETURN_IF_ERROR(step(*runner, builder, seqs));
    const double wall = ms(t0, Clock::now());
    std::printf("streams=%d decode_tok_s=%.2f step_ms=%.3f cpu_ms_per_step=%.3f\n", S,
                1e3 * S * gen / wall, wall / gen, (cpu_ms() - c0) / gen);
  }
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"End-to-end CPU speed of the model runner"};
  std::string model, prompt_ids;
  int threads = 2, prompt_tokens = 512, gen = 128, stream_prompt = 32;
  std::vector<int> streams;
  app.add_option("--model", model)->required();
  app.add_option("--threads", threads);
  app.add_option("--prompt-ids", prompt_ids, "space-separated token ids (else a synthetic prompt)");
  app.add_option("--prompt-tokens", prompt_tokens, "synthetic prompt length (0 = no single run)");
  app.add_option("--gen-tokens", gen);
  app.add_option("--streams", streams, "concurrent stream counts")->delimiter(',');
  app.add_option("--stream-prompt", stream_prompt, "prompt tokens of each stream");
  std::string precision = "q8x2";
  app.add_option("--precision", precision,
                 "CPU matmul activations: auto, q8x2 or q8 (engine.cpu_matmul_precision)")
      ->check(CLI::IsMember({"auto", "q8x2", "q8"}));
  std::string kv_dtype = "f16";
  app.add_option("--kv-cache-dtype", kv_dtype, "KV cache elements: f16, f32 or int8")
      ->check(CLI::IsMember({"f16", "f32", "int8"}));
  CLI11_PARSE(app, argc, argv);
  g_precision = *parse_matmul_precision(precision);
  g_kv_dtype = kernels::parse_kv_dtype(kv_dtype).value_or(kernels::KvDtype::kF16);
  std::vector<int32_t> prompt;
  if (!prompt_ids.empty()) {
    std::istringstream in(prompt_ids);
    for (int32_t id; in >> id;) prompt.push_back(id);
  } else {
    for (int i = 0; i < prompt_tokens; ++i) prompt.push_back(100 + (i * 7919) % 30000);
  }
  const Status st =
      run(model, threads, std::move(prompt), std::max(2, gen), streams, stream_prompt);
  if (!st.is_ok()) {
    std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
    return 1;
  }
  return 0;
}
