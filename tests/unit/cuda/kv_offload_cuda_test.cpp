// The tiers below the page pool on CUDA (engine/kv_offload/cuda): a block of a device KV cache
// copied out into the host tier's pinned memory on the side stream and back into another block
// lands byte for byte in every array; the host tier's memory is page-locked (cudaHostAlloc).
// Needs a device: skips visibly here, fails under LLMSERVE_REQUIRE_GPU (scripts/gpu-check.sh).
#include <gtest/gtest.h>

#include <cstring>

#include "cuda_test_util.h"
#include "engine/kv_offload/cuda/kv_cuda_block_io.h"
#include "engine/kv_offload/kv_offloader.h"

namespace llmserve {
namespace {

using cuda_test::DeviceBuffer;

constexpr int32_t kBlocks = 8, kBs = 4;
constexpr uint64_t kKBytes = 256, kScaleBytes = 32;  // per block: elements, and int8-like scales

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 5));
  return v;
}

// The bytes of block b of a [kBlocks, per_block] device array.
std::vector<uint8_t> block_of(const DeviceBuffer<uint8_t>& a, uint64_t per_block, int32_t b) {
  const auto all = a.download();
  return {all.begin() + b * per_block, all.begin() + (b + 1) * per_block};
}

TEST(KvOffloadCuda, APageGoesToPinnedHostMemoryAndBackIntoAnotherBlock) {
  LLMSERVE_REQUIRE_CUDA();
  DeviceBuffer<uint8_t> k(pattern(kBlocks * kKBytes, 3)), s(pattern(kBlocks * kScaleBytes, 91));
  KvDeviceMemory memory;
  memory.device = 0;
  memory.arrays = {{k.get(), kKBytes}, {s.get(), kScaleBytes}};
  memory.sync_compute = [] { return Status::ok(); };
  auto made = KvCudaBlockIo::create(memory);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  std::unique_ptr<KvBlockIo> io = std::move(made).value();
  ASSERT_EQ(io->block_bytes(), kKBytes + kScaleBytes);
  EXPECT_EQ(io->host_memory_kind(), "pinned");

  auto host = KvHostTier::create(1 << 16, io->block_bytes(), *io);
  ASSERT_TRUE(host.is_ok()) << host.status().message();
  const KvFingerprint fp = kv_fingerprint({"w", "cuda", "", "int8", kBs, 1, 1, 8, {256, 32}, ""});
  KvOffloadOptions options;
  options.host_bytes = 1 << 16;
  KvOffloader o(options, std::move(io), fp, kBs, std::move(host).value(), nullptr, [] {});

  const std::vector<int32_t> tokens = {5, 6, 7, 8, 9};
  const BlockHash h = hash_block_tokens({}, std::span(tokens).first(kBs), {});
  const auto want_k = block_of(k, kKBytes, 3), want_s = block_of(s, kScaleBytes, 3);
  ASSERT_TRUE(o.wants(h));
  o.store({3, h, {}, kv_salt_digest(""), std::make_shared<const std::vector<int32_t>>(tokens), 0});
  o.flush();
  EXPECT_EQ(o.take_copied(), std::vector<int32_t>{3});
  EXPECT_EQ(o.stats().host.pages, 1);

  // The pool's block 3 is overwritten; the page comes back from host memory into block 5.
  ASSERT_EQ(cudaMemset(k.get() + 3 * kKBytes, 0, kKBytes), cudaSuccess);
  KvRestoreJob job;
  job.key = 1;
  job.hashes = {h};
  job.tokens = tokens;
  job.salt = kv_salt_digest("");
  o.restore(std::move(job));
  o.flush();
  auto results = o.take_restored();
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].pages.size(), 1u);
  EXPECT_EQ(results[0].from_host, 1);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, results[0].pages[0].data()), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);  // page-locked, registered with the driver
  ASSERT_TRUE(o.io().copy_in(5, results[0].pages[0]).is_ok());
  o.release(results[0]);
  EXPECT_EQ(block_of(k, kKBytes, 5), want_k);
  EXPECT_EQ(block_of(s, kScaleBytes, 5), want_s);
  EXPECT_EQ(o.stats().host_hits, 1);
}

TEST(KvOffloadCuda, AWrongSizedBufferIsRefused) {
  LLMSERVE_REQUIRE_CUDA();
  DeviceBuffer<uint8_t> k(kBlocks * kKBytes);
  KvDeviceMemory memory;
  memory.arrays = {{k.get(), kKBytes}};
  auto io = KvCudaBlockIo::create(memory);
  ASSERT_TRUE(io.is_ok());
  std::vector<std::byte> small(kKBytes - 1);
  EXPECT_FALSE((*io)->copy_out(0, small).is_ok());
  EXPECT_FALSE((*io)->copy_in(0, small).is_ok());
}

}  // namespace
}  // namespace llmserve
