// The llmserve side of the HF-transformers oracle (tests/reference/gpu_oracle.py): reads one
// model's reference, runs its prompts through a ModelRunner in a fixed schedule, and compares
// every logit row that comes back.
//
// Schedule (P >= 3 prompts; the last one is the long one): step 0 prefills prompts [0, P-2) and
// the first half of prompt P-1 (a chunk); step 1 is mixed: one decode of each of those, the whole
// prefill of prompt P-2 and the rest of prompt P-1 (reading the pages of its first chunk); then
// pure decode steps (CUDA-graph buckets, padded) until each prompt has n_new tokens. Every
// prefill row is sampled. Decodes are teacher-forced with the reference's greedy tokens, so every
// step stays comparable; `free_run` still says how many leading greedy tokens a free-running
// llmserve would have shared with transformers.
//
// Tolerances (bf16 weights in both; transformers computes in f32, llmserve rounds GEMM inputs,
// q / k / v, attention probabilities and the KV cache to bf16, relative rounding error 2^-9
// each): the numpy twin of the two random models with those roundings (`gpu_oracle.py
// --estimate-bf16-error`, prompts of 64 and 600 tokens) gives centered relative L2 logit errors
// of median about 1e-2, max 1.4e-2, and max |error| / std(logits) up to 0.065, so a row passes
// at 2.5e-2 and 0.2. Bugs planted in that twin (RoPE theta doubled, a wrong KV head for a query
// head, one future key unmasked) give 5e-2 to 1.4 on most rows; RoPE frequencies rounded to bf16
// give 1e-2 near position 32, growing to 0.2 by position 600. A greedy token may differ only
// where the reference's top-2 margin is below kTieSigmas x the RMS error measured on that row (a
// flip needs |e1 - e2| > margin; e1 - e2 has RMS sqrt(2) x the RMS error, so 6 is 4.2 sigma).
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/forward_batch.h"
#include "engine/runner/model_runner.h"

namespace llmserve::oracle {

constexpr double kRelL2Tol = 2.5e-2;
constexpr double kMaxAbsOverStdTol = 0.2;
constexpr double kTieSigmas = 6.0;

struct PromptRef {
  std::vector<int32_t> ids, greedy;  // prompt; the reference's greedy continuation
  std::vector<double> margins;       // top-1 minus top-2 logit at each greedy step
  int64_t prefill_row = 0;           // first row of this prompt in prefill
};

struct OracleRef {
  std::string name, model_dir;
  int64_t vocab = 0;
  int n_new = 0;
  std::vector<PromptRef> prompts;
  std::vector<float> prefill;  // [sum of prompt lengths, vocab]: every prompt position
  std::vector<float> decode;   // [prompts, n_new, vocab]: the logits that chose greedy[k]

  std::span<const float> prefill_row(size_t p, int64_t i) const {
    const auto at = static_cast<size_t>((prompts[p].prefill_row + i) * vocab);
    return {prefill.data() + at, static_cast<size_t>(vocab)};
  }
  std::span<const float> decode_row(size_t p, int k) const {
    const auto at = static_cast<size_t>((static_cast<int64_t>(p) * n_new + k) * vocab);
    return {decode.data() + at, static_cast<size_t>(vocab)};
  }
};

inline Result<std::vector<float>> read_f32(const std::string& path, size_t count) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return not_found("cannot open " + path);
  if (static_cast<size_t>(in.tellg()) != count * sizeof(float)) {
    return data_loss(path + ": " + std::to_string(in.tellg()) + " bytes, expected " +
                     std::to_string(count * sizeof(float)));
  }
  std::vector<float> v(count);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!in) return data_loss("short read of " + path);
  return v;
}

inline Result<nlohmann::json> read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) return data_loss(path + " is not JSON");
  return j;
}

// The reference of model `name` listed in dir/manifest.json.
inline Result<OracleRef> load_reference(const std::string& dir, const std::string& name) {
  LLMSERVE_ASSIGN_OR_RETURN(nlohmann::json manifest, read_json(dir + "/manifest.json"));
  std::string ref_file;
  for (const auto& m : manifest.value("models", nlohmann::json::array())) {
    if (m.value("name", "") == name) ref_file = m.value("ref", "");
  }
  if (ref_file.empty()) return not_found(dir + "/manifest.json lists no model '" + name + "'");
  LLMSERVE_ASSIGN_OR_RETURN(nlohmann::json j, read_json(dir + "/" + ref_file));
  try {
    OracleRef r;
    r.name = name;
    r.model_dir = dir + "/" + j.at("model_dir").get<std::string>();
    r.vocab = j.at("vocab_size").get<int64_t>();
    r.n_new = j.at("n_new").get<int>();
    int64_t rows = 0;
    for (const auto& p : j.at("prompts")) {
      PromptRef pr;
      pr.ids = p.at("ids").get<std::vector<int32_t>>();
      pr.greedy = p.at("greedy").get<std::vector<int32_t>>();
      pr.margins = p.at("margins").get<std::vector<double>>();
      if (pr.ids.size() < 2 || static_cast<int>(pr.greedy.size()) != r.n_new ||
          pr.margins.size() != pr.greedy.size()) {
        return data_loss(ref_file + ": a prompt with < 2 ids or not n_new greedy steps");
      }
      pr.prefill_row = rows;
      rows += static_cast<int64_t>(pr.ids.size());
      r.prompts.push_back(std::move(pr));
    }
    if (r.prompts.size() < 3 || r.vocab <= 1 || r.n_new < 2) {
      return data_loss(ref_file + ": needs >= 3 prompts, a vocabulary and n_new >= 2");
    }
    LLMSERVE_ASSIGN_OR_RETURN(r.prefill,
                              read_f32(dir + "/" + j.at("prefill_logits").get<std::string>(),
                                       static_cast<size_t>(rows * r.vocab)));
    LLMSERVE_ASSIGN_OR_RETURN(r.decode,
                              read_f32(dir + "/" + j.at("decode_logits").get<std::string>(),
                                       r.prompts.size() * static_cast<size_t>(r.n_new * r.vocab)));
    return r;
  } catch (const std::exception& e) {
    return data_loss(ref_file + ": " + e.what());
  }
}

struct RowDiff {
  double rel_l2 = 0;            // |d| / |want|, both centered (minus their means)
  double max_abs_over_std = 0;  // max |d| / std(want)
  double err_rms = 0;           // RMS of d, in logits
};

// Softmax ignores a common shift, so both rows are centered first.
inline RowDiff compare_row(std::span<const float> got, std::span<const float> want) {
  const size_t n = want.size();
  double mg = 0, mw = 0;
  for (size_t i = 0; i < n; ++i) mg += got[i], mw += want[i];
  mg /= static_cast<double>(n), mw /= static_cast<double>(n);
  double dd = 0, ww = 0, dmax = 0;
  bool finite = true;
  for (size_t i = 0; i < n; ++i) {
    const double d = (got[i] - mg) - (want[i] - mw), w = want[i] - mw;
    finite = finite && std::isfinite(got[i]);
    dd += d * d, ww += w * w, dmax = std::max(dmax, std::fabs(d));
  }
  if (!finite) return {INFINITY, INFINITY, INFINITY};
  const double std_w = std::sqrt(ww / static_cast<double>(n));
  return {std::sqrt(dd / std::max(ww, 1e-30)), dmax / std::max(std_w, 1e-30),
          std::sqrt(dd / static_cast<double>(n))};
}

inline int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// One step's flattened batch; request r owns blocks [r * blocks_per_seq, (r + 1) * ...).
struct StepBuilder {
  struct Sample {
    size_t prompt;
    int64_t prefill_index;  // >= 0: prompt position of a prefill row
    int k;                  // greedy step whose logits this row is (-1: none)
  };
  StepBuilder(int bs, int64_t bps) : block_size(bs), blocks_per_seq(bps) {}

  int block_size;
  int64_t blocks_per_seq;
  std::vector<int32_t> tokens, positions, query_start{0}, seq_lens, block_tables, slots, rows;
  std::vector<uint8_t> is_prefill;
  std::vector<Sample> samples;
  int64_t num_decodes = 0;

  // Prompt p appends `toks` at positions [cached, cached + n); prefill rows are all sampled.
  void add(size_t p, std::span<const int32_t> toks, int64_t cached, bool prefill, int k_last) {
    const auto n = static_cast<int64_t>(toks.size());
    for (int64_t i = 0; i < n; ++i) {
      const int64_t pos = cached + i;
      tokens.push_back(toks[static_cast<size_t>(i)]);
      positions.push_back(static_cast<int32_t>(pos));
      slots.push_back(static_cast<int32_t>(
          (static_cast<int64_t>(p) * blocks_per_seq + pos / block_size) * block_size +
          pos % block_size));
      if (prefill || i == n - 1) {
        rows.push_back(static_cast<int32_t>(tokens.size()) - 1);
        samples.push_back({p, prefill ? pos : -1, i == n - 1 ? k_last : -1});
      }
    }
    query_start.push_back(static_cast<int32_t>(tokens.size()));
    seq_lens.push_back(static_cast<int32_t>(cached + n));
    for (int64_t j = 0; j < blocks_per_seq; ++j)
      block_tables.push_back(static_cast<int32_t>(static_cast<int64_t>(p) * blocks_per_seq + j));
    is_prefill.push_back(prefill ? 1 : 0);
    if (!prefill) ++num_decodes;
  }

  ForwardBatch view() const {
    ForwardBatch b;
    b.token_ids = tokens;
    b.positions = positions;
    b.query_start = query_start;
    b.seq_lens = seq_lens;
    b.block_tables = block_tables;
    b.max_blocks_per_seq = blocks_per_seq;
    b.slot_mapping = slots;
    b.sample_rows = rows;
    b.is_prefill = is_prefill;
    b.num_decodes = num_decodes;
    return b;
  }
};

// Prompt p's work in step s of the schedule above: k = the greedy step its last row produces.
struct Work {
  size_t prompt;
  int64_t begin, end;  // prompt positions prefilled (begin < end), or none (decode)
  int k;
};

inline std::vector<std::vector<Work>> make_schedule(const OracleRef& ref) {
  const size_t P = ref.prompts.size(), late = P - 2, lng = P - 1;
  const auto len = [&](size_t p) { return static_cast<int64_t>(ref.prompts[p].ids.size()); };
  const int64_t chunk = len(lng) / 2;
  std::vector<std::vector<Work>> steps(static_cast<size_t>(ref.n_new) + 1);
  for (size_t p = 0; p < late; ++p) steps[0].push_back({p, 0, len(p), 0});
  steps[0].push_back({lng, 0, chunk, -1});
  for (size_t s = 1; s < steps.size(); ++s) {
    for (size_t p = 0; p < late; ++p)
      if (static_cast<int>(s) < ref.n_new) steps[s].push_back({p, 0, 0, static_cast<int>(s)});
    for (size_t p : {late, lng}) {
      if (s == 1) {
        steps[s].push_back({p, p == lng ? chunk : 0, len(p), 0});
      } else if (static_cast<int>(s) - 1 < ref.n_new) {
        steps[s].push_back({p, 0, 0, static_cast<int>(s) - 1});
      }
    }
  }
  return steps;
}

struct OracleResult {
  int64_t rows = 0, bad_rows = 0;
  double worst_rel_l2 = 0, worst_max_abs = 0, median_rel_l2 = 0;
  std::string worst_where;
  int greedy_equal = 0, near_ties = 0, mismatches = 0;
  std::vector<int> free_run;                      // per prompt: leading greedy tokens equal
  std::vector<std::string> failures;              // the first few, readable
  std::vector<double> prompt_median, prompt_max;  // per prompt, its prefill and decode rows
  std::vector<double> long_prefill_profile;       // the longest prompt: median per 64 positions
};

// Runs the schedule on `runner` (its model must be ref.model_dir's) and compares.
inline Result<OracleResult> run_oracle(const OracleRef& ref, ModelRunner& runner) {
  if (runner.config().vocab_size != ref.vocab) return invalid_argument("vocabulary differs");
  int64_t longest = 0;
  for (const auto& p : ref.prompts) longest = std::max<int64_t>(longest, p.ids.size());
  const int bs = runner.block_size();
  const int64_t bps = (longest + ref.n_new + bs - 1) / bs;
  if (runner.num_blocks() < static_cast<int64_t>(ref.prompts.size()) * bps) {
    return resource_exhausted("KV cache too small for the oracle's prompts");
  }
  OracleResult res;
  res.free_run.assign(ref.prompts.size(), -1);
  std::vector<double> rels;
  const auto fail = [&](std::string m) {
    if (res.failures.size() < 12) res.failures.push_back(std::move(m));
  };
  const auto steps = make_schedule(ref);
  std::vector<std::vector<double>> per_prompt(ref.prompts.size());
  size_t longest_prompt = 0;
  for (size_t p = 0; p < ref.prompts.size(); ++p) {
    if (ref.prompts[p].ids.size() > ref.prompts[longest_prompt].ids.size()) longest_prompt = p;
  }
  std::vector<std::vector<double>> by_window((longest + 63) / 64);
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  for (size_t s = 0; s < steps.size(); ++s) {
    StepBuilder sb{bs, bps};
    for (const Work& w : steps[s]) {
      const PromptRef& pr = ref.prompts[w.prompt];
      if (w.begin < w.end) {
        sb.add(w.prompt, std::span(pr.ids).subspan(w.begin, w.end - w.begin), w.begin, true,
               w.end == static_cast<int64_t>(pr.ids.size()) ? w.k : -1);
      } else {
        const int32_t tok = pr.greedy[static_cast<size_t>(w.k - 1)];
        sb.add(w.prompt, std::span(&tok, 1), static_cast<int64_t>(pr.ids.size()) + w.k - 1, false,
               w.k);
      }
    }
    if (static_cast<int64_t>(sb.tokens.size()) > runner.max_tokens_per_step() ||
        static_cast<int64_t>(sb.rows.size()) > runner.max_samples_per_step()) {
      return resource_exhausted("step " + std::to_string(s) + " exceeds the runner's sizes");
    }
    auto logits = runner.execute(sb.view());
    if (!logits.is_ok()) {
      return Status(logits.status().code(),
                    "step " + std::to_string(s) + ": " + logits.status().message());
    }
    for (size_t i = 0; i < sb.samples.size(); ++i) {
      const auto& smp = sb.samples[i];
      const auto got =
          logits->subspan(i * static_cast<size_t>(ref.vocab), static_cast<size_t>(ref.vocab));
      const PromptRef& pr = ref.prompts[smp.prompt];
      const auto want = smp.prefill_index >= 0 ? ref.prefill_row(smp.prompt, smp.prefill_index)
                                               : ref.decode_row(smp.prompt, smp.k);
      const RowDiff d = compare_row(got, want);
      char where[96];
      std::snprintf(where, sizeof where, "prompt %zu %s %lld (step %zu)", smp.prompt,
                    smp.prefill_index >= 0 ? "position" : "greedy step",
                    static_cast<long long>(smp.prefill_index >= 0 ? smp.prefill_index : smp.k), s);
      ++res.rows;
      rels.push_back(d.rel_l2);
      per_prompt[smp.prompt].push_back(d.rel_l2);
      if (smp.prefill_index >= 0 && smp.prompt == longest_prompt) {
        by_window[static_cast<size_t>(smp.prefill_index / 64)].push_back(d.rel_l2);
      }
      if (!(d.rel_l2 <= res.worst_rel_l2)) res.worst_rel_l2 = d.rel_l2, res.worst_where = where;
      res.worst_max_abs = std::max(res.worst_max_abs, d.max_abs_over_std);
      if (!(d.rel_l2 <= kRelL2Tol && d.max_abs_over_std <= kMaxAbsOverStdTol)) {
        ++res.bad_rows;
        fail(std::string(where) + ": relative L2 error " + std::to_string(d.rel_l2) +
             ", max |error| / std " + std::to_string(d.max_abs_over_std));
      }
      if (smp.k < 0) continue;
      const auto k = static_cast<size_t>(smp.k);
      const int32_t a = argmax(got);
      int& run = res.free_run[smp.prompt];
      if (a == pr.greedy[k]) {
        ++res.greedy_equal;
        if (run < 0 && smp.k == ref.n_new - 1) run = ref.n_new;
        continue;
      }
      if (run < 0) run = smp.k;
      if (pr.margins[k] < kTieSigmas * d.err_rms) {
        ++res.near_ties;
      } else {
        ++res.mismatches;
        fail(std::string(where) + ": greedy token " + std::to_string(a) + " != reference " +
             std::to_string(pr.greedy[k]) + " (top-2 margin " + std::to_string(pr.margins[k]) +
             ", RMS logit error " + std::to_string(d.err_rms) + ")");
      }
    }
  }
  res.median_rel_l2 = median(rels);
  for (const auto& v : per_prompt) {
    res.prompt_median.push_back(median(v));
    res.prompt_max.push_back(v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
  }
  for (const auto& v : by_window) res.long_prefill_profile.push_back(median(v));
  return res;
}

}  // namespace llmserve::oracle
