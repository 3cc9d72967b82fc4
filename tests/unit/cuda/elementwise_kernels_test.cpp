// Element-wise CUDA kernels against their CPU twins (kernels/include/llmserve/kernels/*.h).
#include <gtest/gtest.h>

#include <algorithm>

#include "llmserve/kernels/activation.h"
#include "llmserve/kernels/cuda/elementwise.h"
#include "llmserve/kernels/cuda/norm.h"
#include "llmserve/kernels/cuda/paged_kv.h"
#include "llmserve/kernels/cuda/rope.h"
#include "llmserve/kernels/embedding.h"
#include "llmserve/kernels/kv_cache_ops.h"
#include "llmserve/kernels/norm.h"
#include "llmserve/kernels/rope.h"
#include "llmserve/kernels/thread_pool.h"
#include "tests/unit/cuda/cuda_test_util.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;
using cuda_test::DeviceBuffer;
using cuda_test::near_all;
using cuda_test::random_floats;

TEST(CudaKernels, EmbeddingMatchesCpu) {
  LLMSERVE_REQUIRE_CUDA();
  const int64_t vocab = 50, dim = 96;
  const auto table = cuda_test::to_bf16(random_floats(vocab * dim, 1));
  const std::vector<int32_t> ids = {0, 49, 7, 7, 23};
  std::vector<float> want(ids.size() * dim);
  kernels::embedding_lookup(kernels::DType::BF16, table.data(), dim, ids.data(),
                            static_cast<int64_t>(ids.size()), want.data());
  DeviceBuffer<uint16_t> d_table(table);
  DeviceBuffer<int32_t> d_ids(ids);
  DeviceBuffer<float> d_out(want.size());
  ASSERT_EQ(kc::embedding_bf16(d_table.get(), dim, d_ids.get(), 5, d_out.get(), nullptr),
            cudaSuccess);
  EXPECT_TRUE(near_all("embedding_bf16", d_out.download(), want, 0.0f, 0.0f));
}

TEST(CudaKernels, SiluMulWritesBf16RowsFromStridedOrOverlaidInputs) {
  LLMSERVE_REQUIRE_CUDA();
  const int64_t rows = 5, cols = 1531;  // not a multiple of the block: a partial last pass
  // A fused gate/up output [rows, 2 x cols]: gate is the left half, up the right one.
  const auto fused = random_floats(rows * 2 * cols, 2, -8, 8);
  std::vector<float> gate(rows * cols), up(rows * cols), want(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      gate[r * cols + c] = fused[r * 2 * cols + c];
      up[r * cols + c] = fused[r * 2 * cols + cols + c];
    }
  }
  kernels::silu_mul(gate.data(), up.data(), want.data(), rows * cols);
  const auto want_bf16 = cuda_test::round_bf16(want);
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
  ASSERT_EQ(kc::silu_mul(a, nullptr), cudaSuccess);
  auto got = cuda_test::bf16_rows_to_f32(cuda_test::download_as_u16(dout, rows * cols), rows, cols,
                                         2 * cols);
  EXPECT_TRUE(near_all("silu_mul fused halves", got, want_bf16, 1e-6f, 8e-3f));
  // out overlaid on gate's own memory (the unfused graph: silu_mul(gate, up, ..., gate)).
  DeviceBuffer<float> dg(gate), du(up);
  a.gate = dg.get();
  a.gate_stride = cols;
  a.up = du.get();
  a.up_stride = cols;
  a.out = reinterpret_cast<uint16_t*>(dg.get());
  ASSERT_EQ(kc::silu_mul(a, nullptr), cudaSuccess);
  got = cuda_test::bf16_rows_to_f32(cuda_test::download_as_u16(dg, rows * cols), rows, cols,
                                    2 * cols);
  EXPECT_TRUE(near_all("silu_mul in place", got, want_bf16, 1e-6f, 8e-3f));
}

TEST(CudaKernels, GatherAndBiasMatchCpu) {
  LLMSERVE_REQUIRE_CUDA();
  const int64_t n = 10007;
  const auto gate = random_floats(n, 2, -8, 8);
  DeviceBuffer<float> dg(gate);
  const int64_t dim = 33;
  const std::vector<int32_t> rows = {4, 0, 300};
  std::vector<float> gathered;
  for (int32_t r : rows)
    gathered.insert(gathered.end(), gate.begin() + r * dim, gate.begin() + (r + 1) * dim);
  DeviceBuffer<int32_t> drows(rows);
  DeviceBuffer<float> dgath(gathered.size());
  ASSERT_EQ(kc::gather_rows(dg.get(), dim, drows.get(), 3, dgath.get(), nullptr), cudaSuccess);
  EXPECT_TRUE(near_all("gather_rows", dgath.download(), gathered, 0.0f, 0.0f));

  const auto bias = random_floats(dim, 4);
  std::vector<float> y(gate.begin(), gate.begin() + 5 * dim), want_y = y;
  for (int64_t i = 0; i < 5 * dim; ++i) want_y[i] += bias[i % dim];
  DeviceBuffer<float> dy(y), db(bias);
  ASSERT_EQ(kc::add_bias(dy.get(), db.get(), 5, dim, nullptr), cudaSuccess);
  EXPECT_TRUE(near_all("add_bias", dy.download(), want_y, 0.0f, 0.0f));

  DeviceBuffer<uint16_t> dbf(n);
  ASSERT_EQ(kc::f32_to_bf16(dg.get(), n, dbf.get(), nullptr), cudaSuccess);
  EXPECT_EQ(dbf.download(), cuda_test::to_bf16(gate)) << "KERNEL MISMATCH f32_to_bf16";
}

TEST(CudaKernels, RmsNormWritesBf16RowsAndFusedResidualMatchesCpu) {
  LLMSERVE_REQUIRE_CUDA();
  kernels::ThreadPool pool(1);
  for (int64_t dim : {64, 576, 1000, 4096}) {
    const int64_t rows = 7;
    const auto x = random_floats(rows * dim, 5), w = random_floats(dim, 6, 0.5f, 1.5f);
    const auto resid = random_floats(rows * dim, 7);
    std::vector<float> want(rows * dim), want_resid = resid, want2(rows * dim);
    kernels::rms_norm(pool, x.data(), w.data(), rows, dim, 1e-5f, want.data());
    kernels::add_rms_norm(pool, want_resid.data(), x.data(), w.data(), rows, dim, 1e-5f,
                          want2.data());
    want = cuda_test::round_bf16(want);
    want2 = cuda_test::round_bf16(want2);
    DeviceBuffer<float> dx(x), dw(w), dy(rows * dim), dr(resid);
    const std::string tag = " dim " + std::to_string(dim);
    auto* y16 = reinterpret_cast<uint16_t*>(dy.get());
    ASSERT_EQ(kc::rms_norm(dx.get(), dw.get(), rows, dim, 1e-5f, y16, 2 * dim, nullptr),
              cudaSuccess);
    EXPECT_TRUE(near_all(
        "rms_norm" + tag,
        cuda_test::bf16_rows_to_f32(cuda_test::download_as_u16(dy, rows * dim), rows, dim, 2 * dim),
        want, 1e-5f, 8e-3f));
    // y overlays x, as the graph's final norm uses it.
    auto* x16 = reinterpret_cast<uint16_t*>(dx.get());
    ASSERT_EQ(
        kc::add_rms_norm(dr.get(), dx.get(), dw.get(), rows, dim, 1e-5f, x16, 2 * dim, nullptr),
        cudaSuccess);
    EXPECT_TRUE(near_all("add_rms_norm residual" + tag, dr.download(), want_resid, 1e-6f, 1e-6f));
    EXPECT_TRUE(near_all(
        "add_rms_norm out" + tag,
        cuda_test::bf16_rows_to_f32(cuda_test::download_as_u16(dx, rows * dim), rows, dim, 2 * dim),
        want2, 1e-5f, 8e-3f));
    // rms_norm in place over its own input.
    DeviceBuffer<float> dx2(x);
    ASSERT_EQ(kc::rms_norm(dx2.get(), dw.get(), rows, dim, 1e-5f,
                           reinterpret_cast<uint16_t*>(dx2.get()), 2 * dim, nullptr),
              cudaSuccess);
    EXPECT_TRUE(near_all("rms_norm in place" + tag,
                         cuda_test::bf16_rows_to_f32(cuda_test::download_as_u16(dx2, rows * dim),
                                                     rows, dim, 2 * dim),
                         want, 1e-5f, 8e-3f));
  }
}

TEST(CudaKernels, RopeMatchesCpuBothPairingsAndLlama3Scaling) {
  LLMSERVE_REQUIRE_CUDA();
  kernels::RopeScaling llama3;
  llama3.kind = kernels::RopeScaling::Kind::kLlama3;
  llama3.factor = 8.0f;
  for (int head_dim : {64, 128}) {
    for (const auto& [theta, scaling] :
         {std::pair{10000.0f, kernels::RopeScaling{}}, std::pair{500000.0f, llama3}}) {
      for (auto pairing : {kernels::RopePairing::kAdjacent, kernels::RopePairing::kHalves}) {
        const int64_t T = 9;
        const int heads = 3;
        const auto inv = kernels::rope_inv_freq(head_dim, theta, scaling);
        const std::vector<int32_t> pos = {0, 1, 2, 15, 16, 17, 1000, 4095, 131000};
        // The rotated rows sit inside wider rows (q inside a fused QKV output).
        const int64_t width = heads * head_dim, stride = width + 40;
        auto wide = random_floats(T * stride, 8);
        std::vector<float> x(T * width);
        for (int64_t t = 0; t < T; ++t)
          std::copy_n(wide.begin() + t * stride, width, x.begin() + t * width);
        DeviceBuffer<float> dx(wide), dinv(inv);
        DeviceBuffer<int32_t> dpos(pos);
        kernels::apply_rope(x.data(), T, heads, head_dim, pos.data(), inv, pairing);
        for (int64_t t = 0; t < T; ++t)
          std::copy_n(x.begin() + t * width, width, wide.begin() + t * stride);
        const bool inter = pairing == kernels::RopePairing::kAdjacent;
        ASSERT_EQ(kc::apply_rope(dx.get(), stride, T, heads, head_dim, dpos.get(), dinv.get(),
                                 static_cast<int>(inv.size()), inter, nullptr),
                  cudaSuccess);
        EXPECT_TRUE(near_all("rope head_dim " + std::to_string(head_dim) + " theta " +
                                 std::to_string(theta) + (inter ? " adjacent" : " halves"),
                             dx.download(), wide, 2e-5f, 2e-4f));
      }
    }
  }
}

TEST(CudaKernels, WriteKvMatchesCpuLayout) {
  LLMSERVE_REQUIRE_CUDA();
  const kernels::KvCacheShape shape{6, 2, 16, 64};
  const int64_t T = 5, n = shape.num_kv_heads * shape.head_dim;
  const std::vector<int32_t> slots = {0, 17, -1, 95, 40};
  const auto k = cuda_test::round_bf16(random_floats(T * n, 9));
  const auto v = cuda_test::round_bf16(random_floats(T * n, 10));
  const size_t cache = static_cast<size_t>(shape.num_blocks) * n * shape.block_size;
  std::vector<float> kc_want(cache, 0.0f), vc_want(cache, 0.0f);
  kernels::write_kv(shape, k.data(), v.data(), slots.data(), T, kc_want.data(), vc_want.data());
  // k and v as slices of fused [T, q | k | v] rows.
  const int64_t q_width = 3 * n, stride = q_width + 2 * n;
  std::vector<float> fused(static_cast<size_t>(T * stride), 99.0f);
  for (int64_t t = 0; t < T; ++t) {
    std::copy_n(k.begin() + t * n, n, fused.begin() + t * stride + q_width);
    std::copy_n(v.begin() + t * n, n, fused.begin() + t * stride + q_width + n);
  }
  DeviceBuffer<float> dfused(fused);
  DeviceBuffer<int32_t> ds(slots);
  DeviceBuffer<uint16_t> dkc(std::vector<uint16_t>(cache, 0)), dvc(std::vector<uint16_t>(cache, 0));
  ASSERT_EQ(kc::write_kv(dfused.get() + q_width, dfused.get() + q_width + n, stride, ds.get(), T,
                         shape.num_kv_heads, shape.block_size, shape.head_dim, dkc.get(), dvc.get(),
                         nullptr),
            cudaSuccess);
  auto to_f32 = [](const std::vector<uint16_t>& b) {
    std::vector<float> f(b.size());
    for (size_t i = 0; i < b.size(); ++i) f[i] = kernels::bf16_to_fp32(b[i]);
    return f;
  };
  EXPECT_TRUE(near_all("write_kv K", to_f32(dkc.download()), kc_want, 0.0f, 0.0f));
  EXPECT_TRUE(near_all("write_kv V", to_f32(dvc.download()), vc_want, 0.0f, 0.0f));
}

}  // namespace
}  // namespace llmserve
