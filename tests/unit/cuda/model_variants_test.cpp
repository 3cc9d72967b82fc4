// The CUDA pieces of Qwen3, Gemma 3 and Phi-3 against their CPU twins: the kernels of
// kernels/cuda/model_variants.cu and the scaled RoPE, then whole random models of each family
// (HF folders written here) on both backends: head_dim 64 / 128 (the tiled attention kernels) and
// the families' own 256 (Gemma 3) and 96 (Phi-3-mini), which attention_any_head serves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "engine/model/llama_graph.h"
#include "engine/runner/cpu_ops.h"
#include "engine/runner/cuda/cuda_ops.h"
#include "llmserve/kernels/activation.h"
#include "llmserve/kernels/cuda/model_variants.h"
#include "llmserve/kernels/cuda/rope.h"
#include "llmserve/kernels/norm.h"
#include "llmserve/kernels/rope.h"
#include "llmserve/kernels/thread_pool.h"
#include "tests/unit/cuda/cuda_test_util.h"
#include "tests/unit/cuda/step_batch.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;
using cuda_test::DeviceBuffer;
using cuda_test::near_all;
using cuda_test::random_floats;

TEST(CudaVariantKernels, HeadRmsNormInPlaceOnStridedRows) {
  LLMSERVE_REQUIRE_CUDA();
  const int64_t rows = 7, stride = 1000;  // q of a fused q/k/v output: 4 heads of 128
  const int heads = 4, hd = 128;
  auto x = random_floats(rows * stride, 3, -3, 3);
  const auto w = random_floats(hd, 4, 0.5, 1.5);
  std::vector<float> want = x;
  kernels::ThreadPool pool(1);
  for (int64_t r = 0; r < rows; ++r) {
    kernels::rms_norm(pool, x.data() + r * stride, w.data(), heads, hd, 1e-6f,
                      want.data() + r * stride);
  }
  DeviceBuffer<float> dx(x), dw(w);
  ASSERT_EQ(kc::head_rms_norm(dx.get(), stride, rows, heads, hd, dw.get(), 1e-6f, nullptr),
            cudaSuccess);
  EXPECT_TRUE(near_all("head_rms_norm", dx.download(), want, 1e-5f, 1e-5f));
}

TEST(CudaVariantKernels, AddNormedScaleSoftcap) {
  LLMSERVE_REQUIRE_CUDA();
  const int64_t rows = 5, dim = 1152;
  const auto x = random_floats(rows * dim, 5, -4, 4), w = random_floats(dim, 6, 0.5, 1.5);
  auto resid = random_floats(rows * dim, 7, -2, 2);
  std::vector<float> want = resid;
  kernels::ThreadPool pool(1);
  kernels::add_normed(pool, want.data(), x.data(), w.data(), rows, dim, 1e-6f);
  DeviceBuffer<float> dr(resid), dx(x), dw(w);
  ASSERT_EQ(kc::add_normed(dr.get(), dx.get(), dw.get(), rows, dim, 1e-6f, nullptr), cudaSuccess);
  EXPECT_TRUE(near_all("add_normed", dr.download(), want, 1e-5f, 1e-5f));

  std::vector<float> s = x;
  kernels::scale(s.data(), rows * dim, 33.9411f);
  ASSERT_EQ(kc::scale(dx.get(), rows * dim, 33.9411f, nullptr), cudaSuccess);
  EXPECT_TRUE(near_all("scale", dx.download(), s, 0.0f, 1e-6f));

  auto logits = random_floats(rows * dim, 8, -60, 60);
  std::vector<float> capped = logits;
  kernels::softcap(capped.data(), rows * dim, 30.0f);
  DeviceBuffer<float> dl(logits);
  ASSERT_EQ(kc::softcap(dl.get(), rows * dim, 30.0f, nullptr), cudaSuccess);
  EXPECT_TRUE(near_all("softcap", dl.download(), capped, 1e-5f, 1e-5f));
}

TEST(CudaVariantKernels, GeluTanhMulWritesBf16Rows) {
  LLMSERVE_REQUIRE_CUDA();
  const int64_t rows = 3, cols = 1531;
  const auto fused = random_floats(rows * 2 * cols, 9, -6, 6);
  std::vector<float> gate(rows * cols), up(rows * cols), want(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      gate[r * cols + c] = fused[r * 2 * cols + c];
      up[r * cols + c] = fused[r * 2 * cols + cols + c];
    }
  }
  kernels::gelu_tanh_mul(gate.data(), up.data(), want.data(), rows * cols);
  DeviceBuffer<float> dfused(fused), dout(rows * cols);
  kc::SiluMulArgs a;
  a.gate = dfused.get();
  a.gate_stride = 2 * cols;
  a.up = dfused.get() + cols;
  a.up_stride = 2 * cols;
  a.out = reinterpret_cast<uint16_t*>(dout.get());
  a.out_stride = 2 * cols;
  a.rows = rows;
  a.cols = cols;
  ASSERT_EQ(kc::gelu_tanh_mul(a, nullptr), cudaSuccess);
  const auto got = cuda_test::bf16_rows_to_f32(cuda_test::download_as_u16(dout, rows * cols), rows,
                                               cols, 2 * cols);
  EXPECT_TRUE(near_all("gelu_tanh_mul", got, cuda_test::round_bf16(want), 1e-6f, 8e-3f));
}

TEST(CudaVariantKernels, PartialRopeWithCosSinScale) {
  LLMSERVE_REQUIRE_CUDA();
  const int64_t T = 6;
  const int heads = 3, hd = 64, rot = 48;  // Phi-4-mini's 0.75 of the head rotates
  auto x = random_floats(T * heads * hd, 10, -2, 2);
  const std::vector<int32_t> pos = {0, 1, 2, 40, 41, 4000};
  const auto inv = kernels::rope_inv_freq(rot, 10000.0f);
  std::vector<float> cs;
  kernels::rope_table(pos.data(), T, inv, cs);
  for (float& v : cs) v *= 1.19f;
  std::vector<float> want = x;
  kernels::apply_rope_table(want.data(), T, heads, hd, cs.data(), rot / 2,
                            kernels::RopePairing::kHalves);
  DeviceBuffer<float> dx(x), dinv(inv);
  DeviceBuffer<int32_t> dpos(pos);
  ASSERT_EQ(kc::apply_rope(dx.get(), heads * hd, T, heads, hd, dpos.get(), dinv.get(), rot / 2,
                           false, nullptr, 1.19f),
            cudaSuccess);
  EXPECT_TRUE(near_all("rope scaled", dx.download(), want, 2e-4f, 2e-4f));
}

// A random F32 HF folder: config.json as given, every tensor of `shapes` N(0, 0.1) (norms
// about 1; Gemma's about 0, its (1 + w) applied on load).
void write_hf_model(const std::string& dir, const std::string& config,
                    const std::vector<std::pair<std::string, std::vector<int64_t>>>& shapes,
                    bool gemma) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << config;
  std::string header = "{";
  int64_t offset = 0;
  for (const auto& [name, shape] : shapes) {
    int64_t n = 1;
    std::string dims;
    for (int64_t d : shape) {
      n *= d;
      dims += (dims.empty() ? "" : ",") + std::to_string(d);
    }
    header += (header.size() > 1 ? "," : "") + std::string("\"") + name +
              "\":{\"dtype\":\"F32\",\"shape\":[" + dims + "],\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + 4 * n) + "]}";
    offset += 4 * n;
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  std::ofstream f(dir + "/model.safetensors", std::ios::binary);
  const uint64_t len = header.size();
  f.write(reinterpret_cast<const char*>(&len), 8);
  f << header;
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const auto& [name, shape] : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const bool norm = name.find("norm") != std::string::npos;
    for (int64_t i = 0; i < n; ++i) {
      const float v = norm ? (gemma ? 0.1f * nd(rng) : 1.0f + 0.1f * nd(rng))
                           : 0.6f / std::sqrt(static_cast<float>(shape.back())) * nd(rng);
      f.write(reinterpret_cast<const char*>(&v), 4);
    }
  }
}

struct Family {
  std::string name;
  std::string config;
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  bool gemma = false;
};

// which: "qwen3", "gemma3", "phi3", or "gemma3_hd256" / "phi3_hd96" (Gemma 3's and Phi-3-mini's
// real head_dim, 384 hidden for Phi-3's 4 heads of 96).
Family family(const std::string& variant) {
  const std::string which = variant.substr(0, variant.find('_'));
  const int64_t V = 512, H = variant == "phi3_hd96" ? 384 : 256, L = 4, F = 512;
  Family f;
  auto layer = [&](int64_t l, const std::string& s) {
    return "model.layers." + std::to_string(l) + "." + s;
  };
  f.shapes.push_back({"model.embed_tokens.weight", {V, H}});
  f.shapes.push_back({"model.norm.weight", {H}});
  const std::string common = R"("vocab_size": 512, "hidden_size": )" + std::to_string(H) +
                             R"(, "num_hidden_layers": 4,
      "intermediate_size": 512, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6,
      "bos_token_id": 1, "eos_token_id": 2, )";
  if (which == "qwen3") {
    f.name = variant;
    f.config = "{" + common + R"("model_type": "qwen3", "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 128, "rope_theta": 1000000.0,
        "tie_word_embeddings": true})";
  } else if (which == "gemma3") {
    f.name = variant;
    f.gemma = true;
    f.config = "{" + common + R"("model_type": "gemma3_text", "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": )" +
               std::string(variant == "gemma3_hd256" ? "256" : "128") +
               R"(, "query_pre_attn_scalar": 100,
        "final_logit_softcapping": 8.0, "sliding_window": 20, "sliding_window_pattern": 2,
        "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
        "rope_scaling": {"rope_type": "linear", "factor": 4.0}})";
  } else {
    f.name = variant;
    std::string factors_s = "[", factors_l = "[";
    for (int i = 0; i < H / 4 * 3 / 8; ++i) {  // rot 0.75 head_dim: 48 of 64, 72 of 96
      factors_s += (i ? "," : "") + std::to_string(1.0 + 0.02 * i);
      factors_l += (i ? "," : "") + std::to_string(1.0 + 0.5 * i);
    }
    f.config = "{" + common + R"("model_type": "phi3", "num_attention_heads": 4,
        "num_key_value_heads": 2, "tie_word_embeddings": false, "partial_rotary_factor": 0.75,
        "original_max_position_embeddings": 64, "rope_theta": 10000.0,
        "rope_scaling": {"type": "longrope", "short_factor": )" +
               factors_s + "], \"long_factor\": " + factors_l + "]}}";
    f.shapes.push_back({"lm_head.weight", {V, H}});
  }
  const int64_t hd = which == "phi3" ? H / 4 : variant == "gemma3_hd256" ? 256 : 128;
  const int64_t q = 4 * hd, kv = 2 * hd;
  for (int64_t l = 0; l < L; ++l) {
    f.shapes.push_back({layer(l, "input_layernorm.weight"), {H}});
    f.shapes.push_back({layer(l, "post_attention_layernorm.weight"), {H}});
    f.shapes.push_back({layer(l, "self_attn.o_proj.weight"), {H, q}});
    f.shapes.push_back({layer(l, "mlp.down_proj.weight"), {H, F}});
    if (which == "phi3") {
      f.shapes.push_back({layer(l, "self_attn.qkv_proj.weight"), {q + 2 * kv, H}});
      f.shapes.push_back({layer(l, "mlp.gate_up_proj.weight"), {2 * F, H}});
      continue;
    }
    f.shapes.push_back({layer(l, "self_attn.q_proj.weight"), {q, H}});
    f.shapes.push_back({layer(l, "self_attn.k_proj.weight"), {kv, H}});
    f.shapes.push_back({layer(l, "self_attn.v_proj.weight"), {kv, H}});
    f.shapes.push_back({layer(l, "self_attn.q_norm.weight"), {hd}});
    f.shapes.push_back({layer(l, "self_attn.k_norm.weight"), {hd}});
    f.shapes.push_back({layer(l, "mlp.gate_proj.weight"), {F, H}});
    f.shapes.push_back({layer(l, "mlp.up_proj.weight"), {F, H}});
    if (which == "gemma3") {
      f.shapes.push_back({layer(l, "pre_feedforward_layernorm.weight"), {H}});
      f.shapes.push_back({layer(l, "post_feedforward_layernorm.weight"), {H}});
    }
  }
  return f;
}

struct Backend {
  std::unique_ptr<Ops> ops;
  std::unique_ptr<LlamaGraph> graph;
};

Backend make_backend(const LoadedModel& model, bool cuda, int64_t context_len) {
  Backend b;
  if (cuda) {
    CudaOpsOptions o;
    o.num_heads = static_cast<int>(model.config().num_heads);
    o.max_tokens = 256;
    o.max_samples = 16;
    o.max_num_seqs = 16;
    o.max_model_len = 128;
    auto ops = CudaOps::create(o);
    EXPECT_TRUE(ops.is_ok()) << ops.status().message();
    if (!ops.is_ok()) return b;
    b.ops = std::move(ops.value());
  } else {
    b.ops = std::make_unique<CpuOps>(2);
  }
  const ModelConfig& c = model.config();
  KvCacheSpec spec{c.num_layers, 8, static_cast<int>(c.num_kv_heads), 16,
                   static_cast<int>(c.head_dim)};
  spec.layer_windows = c.layer_windows();
  EXPECT_TRUE(b.ops->alloc_kv_cache(spec).is_ok());
  auto g = LlamaGraph::create(model, *b.ops, 256, 16, context_len);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  if (g.is_ok()) b.graph = std::move(g.value());
  return b;
}

class CudaFamily : public ::testing::TestWithParam<const char*> {};

// A 70-token prompt (past Gemma's window of 20 and Phi-3's original context of 64, with the
// long factors) then 24 greedy decodes, both backends following the CPU's tokens.
TEST_P(CudaFamily, ForwardAndGreedyTokensMatchCpu) {
  LLMSERVE_REQUIRE_CUDA();
  const Family f = family(GetParam());
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("llmserve_cuda_" + f.name)).string();
  write_hf_model(dir, f.config, f.shapes, f.gemma);
  auto model = load_model(dir);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  Backend cpu = make_backend(**model, false, 128), gpu = make_backend(**model, true, 128);
  ASSERT_TRUE(cpu.graph && gpu.graph);
  std::vector<int32_t> next;
  for (int i = 0; i < 70; ++i) next.push_back((i * 37 + 11) % 512);
  int cached = 0, divergence = -1;
  double worst = 0;
  for (int step = 0; step < 25; ++step) {
    cuda_test::StepBatch sb;
    sb.blocks_per_seq = 8;
    sb.add(0, next, cached);
    auto lc = cpu.graph->forward(sb.view());
    ASSERT_TRUE(lc.is_ok()) << lc.status().message();
    const std::vector<float> ref(lc->begin(), lc->end());
    auto lg = gpu.graph->forward(sb.view());
    ASSERT_TRUE(lg.is_ok()) << lg.status().message();
    double d = 0, lo = 1e30, hi = -1e30;
    for (size_t i = 0; i < ref.size(); ++i) {
      d = std::max(d, std::fabs(static_cast<double>((*lg)[i]) - ref[i]));
      lo = std::min<double>(lo, ref[i]);
      hi = std::max<double>(hi, ref[i]);
    }
    worst = std::max(worst, d / (hi - lo));
    const auto top = [](std::span<const float> r) {
      return static_cast<int32_t>(std::max_element(r.begin(), r.end()) - r.begin());
    };
    if (divergence < 0 && top(ref) != top(*lg)) divergence = step;
    cached += static_cast<int>(next.size());
    next = {top(ref)};
  }
  EXPECT_LT(worst, 2e-2) << f.name << ": logits differ from the CPU backend";
  EXPECT_EQ(divergence, -1) << f.name << ": greedy token " << divergence << " differs";
  std::printf("[ %s ] 25 steps, worst logit diff / spread vs CPU %.3g\n", f.name.c_str(), worst);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Families, CudaFamily,
                         ::testing::Values("qwen3", "gemma3", "phi3", "gemma3_hd256", "phi3_hd96"));

}  // namespace
}  // namespace llmserve
