// `llmserve perplexity`: perplexity of a model over a text file, through the engine, as
// llama.cpp's llama-perplexity defines it: the text is tokenized once (with BOS when the model
// adds one), cut into windows of --ctx tokens (a trailing partial window is dropped), the first
// token of each window replaced by BOS when the model adds one, and in each window only the
// second half is scored: the tokens at positions ctx/2 + 1 .. ctx - 1, each from the logits of the
// position before it. PPL = exp(mean negative log-likelihood over all scored tokens). Windows
// run as prompt-scoring requests (prompt_logprobs 0, max_tokens 0), several at once.
#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/request_stream.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/cli/command.h"
#include "server/cli/log_to_stderr.h"

namespace llmserve::cli {
namespace {

struct PerplexityOptions {
  std::string model;
  std::string file;
  int32_t ctx = 512;
  int32_t chunks = -1;  // windows scored at most; -1 = all
  int32_t parallel = 2;
  int32_t threads = 0;
  std::string kv_dtype = "f16";
  std::string device = "cpu";
  std::string precision = "by_format";
  std::string quantize;         // model.quantize
  uint64_t kv_cache_bytes = 0;  // 0 = what `parallel` windows need
  bool json = false;
};

struct Window {
  std::shared_ptr<RequestStream> stream;
  std::vector<TokenLogprob> logprobs;
  Status error;
};

// Reads one window's stream to its end.
void drain(Window& w) {
  while (auto out = w.stream->next()) {
    if (!out->prompt_logprobs.empty()) w.logprobs = std::move(out->prompt_logprobs);
    if (out->finish == FinishReason::kError) w.error = out->error;
  }
}

Status run(const PerplexityOptions& o, std::ostream& log) {
  std::ifstream in(o.file, std::ios::binary);
  if (!in) return invalid_argument("--file: cannot open '" + o.file + "'");
  std::stringstream text;
  text << in.rdbuf();
  if (o.ctx < 4) return invalid_argument("--ctx must be >= 4");

  EngineOptions eo;
  eo.model_path = o.model;
  eo.device = o.device;
  eo.threads = o.threads;
  eo.kv_cache_dtype = o.kv_dtype;
  eo.cpu_matmul_precision = o.precision;
  eo.quantize = o.quantize;
  eo.max_model_len = o.ctx + 1;  // a prompt must be shorter than the model length
  eo.max_num_seqs = std::max(o.parallel, 1);
  eo.max_num_batched_tokens = std::max(o.ctx, eo.max_num_seqs);
  eo.max_scored_tokens_per_step = o.ctx;
  eo.enable_prefix_caching = false;
  eo.max_logprobs = 0;
  eo.seed = 1;
  eo.kv_cache_bytes = o.kv_cache_bytes;
  if (eo.kv_cache_bytes == 0) {  // room for `parallel` windows (the model file is only mapped)
    LLMSERVE_ASSIGN_OR_RETURN(auto model, load_model(o.model));
    const auto dtype = kernels::parse_kv_dtype(o.kv_dtype).value_or(kernels::KvDtype::kF16);
    eo.kv_cache_bytes = model->config().kv_bytes_per_token(dtype) *
                        static_cast<uint64_t>(o.ctx + 64) * static_cast<uint64_t>(eo.max_num_seqs);
  }
  LLMSERVE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(eo));

  const Tokenizer& tok = engine->tokenizer();
  const std::vector<int32_t> tokens = tok.encode(text.str(), /*add_special=*/true,
                                                 /*parse_special=*/false);
  const int64_t n_ctx = o.ctx;
  if (static_cast<int64_t>(tokens.size()) < 2 * n_ctx) {
    return invalid_argument("--file tokenizes to " + std::to_string(tokens.size()) +
                            " tokens; at least 2 x --ctx = " + std::to_string(2 * n_ctx) +
                            " are needed");
  }
  int64_t n_chunk = static_cast<int64_t>(tokens.size()) / n_ctx;
  if (o.chunks > 0) n_chunk = std::min<int64_t>(n_chunk, o.chunks);
  const bool add_bos = tok.spec().add_bos && tok.spec().bos_id >= 0;
  const int64_t first = n_ctx / 2;
  log << "perplexity: " << tokens.size() << " tokens, " << n_chunk << " windows of " << n_ctx
      << ", scoring positions " << first + 1 << ".." << n_ctx - 1 << " of each"
      << (add_bos ? " (BOS first)" : "") << ", kv " << o.kv_dtype << "\n";

  double nll = 0, nll2 = 0;
  int64_t count = 0;
  std::deque<Window> inflight;
  int64_t next = 0, done = 0;
  auto submit_next = [&]() -> Status {
    GenerateRequest r;
    r.prompt_token_ids.assign(tokens.begin() + next * n_ctx, tokens.begin() + (next + 1) * n_ctx);
    if (add_bos) r.prompt_token_ids[0] = tok.spec().bos_id;
    r.params.max_tokens = 0;
    r.params.prompt_logprobs = 0;
    r.params.temperature = 0;
    LLMSERVE_ASSIGN_OR_RETURN(auto stream, engine->submit(std::move(r)));
    inflight.push_back(Window{std::move(stream), {}, Status::ok()});
    ++next;
    return Status::ok();
  };
  while (done < n_chunk) {
    while (next < n_chunk && static_cast<int64_t>(inflight.size()) < eo.max_num_seqs) {
      LLMSERVE_RETURN_IF_ERROR(submit_next());
    }
    Window& w = inflight.front();
    drain(w);
    LLMSERVE_RETURN_IF_ERROR(w.error);
    // logprobs[k] scores the window's token k + 1.
    if (static_cast<int64_t>(w.logprobs.size()) != n_ctx - 1) {
      return internal_error("window " + std::to_string(done) + " came back with " +
                            std::to_string(w.logprobs.size()) + " prompt logprobs, not " +
                            std::to_string(n_ctx - 1));
    }
    for (int64_t k = first; k < n_ctx - 1; ++k) {
      const double v = -static_cast<double>(w.logprobs[static_cast<size_t>(k)].logprob);
      nll += v;
      nll2 += v * v;
      ++count;
    }
    inflight.pop_front();
    ++done;
    log << "[" << done << "]" << std::fixed << std::setprecision(4) << std::exp(nll / count)
        << (done == n_chunk ? "\n" : ",") << std::flush;
  }
  engine->shutdown();
  const double mean = nll / count;
  const double ppl = std::exp(mean);
  const double var = nll2 / count - mean * mean;
  const double err = var > 0 ? std::sqrt(var / static_cast<double>(count - 1)) * ppl : 0;
  if (o.json) {
    std::cout << nlohmann::json{{"ppl", ppl},
                                {"ppl_stderr", err},
                                {"tokens_scored", count},
                                {"windows", n_chunk},
                                {"ctx", n_ctx},
                                {"kv_cache_dtype", o.kv_dtype},
                                {"quantize", o.quantize}}
                     .dump()
              << "\n";
  } else {
    std::cout << "Final estimate: PPL = " << std::fixed << std::setprecision(4) << ppl << " +/- "
              << std::setprecision(5) << err << "\n";
  }
  return Status::ok();
}

}  // namespace

void add_perplexity_command(CLI::App& root, int& exit_code) {
  auto o = std::make_shared<PerplexityOptions>();
  CLI::App* cmd = root.add_subcommand(
      "perplexity",
      "Perplexity over a text file in windows of --ctx tokens, the second half of each scored "
      "(llama-perplexity's definition), through the engine");
  cmd->add_option("--model", o->model, "A .gguf file or an HF model directory")->required();
  cmd->add_option("--file", o->file, "The text file")->required();
  cmd->add_option("--ctx", o->ctx, "Window length in tokens (default 512)")
      ->check(CLI::Range(4, 1 << 20));
  cmd->add_option("--chunks", o->chunks, "Score at most this many windows (default all)");
  cmd->add_option("--parallel", o->parallel, "Windows in flight at once (default 2)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--threads", o->threads, "CPU threads (default all cores)");
  cmd->add_option("--kv-cache-dtype", o->kv_dtype, "f16 (default), f32, int8 or fp8 (CUDA)")
      ->check(CLI::IsMember({"f16", "f32", "int8", "fp8"}));
  cmd->add_option("--kv-cache-bytes", o->kv_cache_bytes,
                  "KV cache bytes (default: what --parallel windows need)");
  cmd->add_option("--device", o->device, "cpu (default), cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_option("--cpu-matmul-precision", o->precision,
                  "by_format (default: as the daemon; q8 for K-quant files, else q8x2), q8x2, q8 "
                  "or auto (scored tokens are prompt rows, so auto = q8)")
      ->check(CLI::IsMember({"by_format", "q8x2", "q8", "auto"}));
  cmd->add_option("--quantize", o->quantize,
                  "Quantize F32 / F16 / BF16 matmul weights at load, as model.quantize: q8_0, "
                  "q4_0, q4_k or fp8 (default: as stored)")
      ->check(CLI::IsMember({"", "q8_0", "q4_0", "q4_k", "fp8"}));
  cmd->add_flag("--json", o->json, "Print the result as one JSON line");
  cmd->callback([o, &exit_code] {
    log_to_stderr();
    const Status st = run(*o, std::cerr);
    if (!st.is_ok()) {
      std::cerr << "error: " << st.to_string() << "\n";
      exit_code = 1;
      return;
    }
    exit_code = 0;
  });
}

}  // namespace llmserve::cli
