// A fixture for the offloader's tests: a host twin of a KV cache (two arrays in one allocation,
// as the CPU backend lays it out), an offloader over it with the tiers asked for, and helpers
// that store a conversation's chain and restore it as the step loop does.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>

#include "engine/kv_offload/kv_offloader.h"
#include "engine/kv_offload/kv_page_file.h"

namespace llmserve::offload_test {

namespace fs = std::filesystem;

constexpr int32_t kBs = 4;
constexpr int32_t kBlocks = 8;

struct HostTwin {
  // Array 0: 32 bytes per block; array 1: 8 bytes per block (like int8 scales).
  std::vector<std::byte> mem = std::vector<std::byte>(kBlocks * 40);
  KvHostMemory memory() {
    KvHostMemory m;
    m.base = mem.data();
    m.bytes = mem.size();
    m.arrays = {{0, 32}, {kBlocks * 32, 8}};
    return m;
  }
  void fill(int32_t block, uint8_t v) {
    for (int i = 0; i < 32; ++i) mem[block * 32 + i] = static_cast<std::byte>(v + i);
    for (int i = 0; i < 8; ++i) mem[kBlocks * 32 + block * 8 + i] = static_cast<std::byte>(v ^ i);
  }
};

struct RestoredBytes {
  std::vector<std::vector<std::byte>> pages;
  int32_t from_host = 0;
};

struct Fixture : ::testing::Test {
  fs::path dir =
      fs::temp_directory_path() / ("kv_offloader_test_" + std::to_string(::getpid()) + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  HostTwin twin;
  KvFingerprint fp = kv_fingerprint({"w", "cpu", "", "int8", kBs, 1, 1, 8, {32, 8}, "theta=1"});
  std::mutex mu;
  std::condition_variable cv;
  int wakes = 0;

  void SetUp() override { fs::remove_all(dir); }
  void TearDown() override { fs::remove_all(dir); }

  // A disk tier of disk_bytes (0: none) and a host tier of host_bytes (0: none).
  std::unique_ptr<KvOffloader> make(int64_t disk_bytes = 1 << 20, int64_t host_bytes = 0) {
    auto io = std::make_unique<KvHostBlockIo>(twin.memory());
    std::unique_ptr<KvDiskTier> disk;
    if (disk_bytes > 0) {
      auto d = KvDiskTier::open(dir.string(), disk_bytes, fp.digest, kBs);
      EXPECT_TRUE(d.is_ok());
      disk = std::move(d).value();
    }
    std::unique_ptr<KvHostTier> host;
    if (host_bytes > 0) {
      auto h = KvHostTier::create(host_bytes, io->block_bytes(), *io);
      EXPECT_TRUE(h.is_ok()) << h.status().message();
      host = std::move(h).value();
    }
    KvOffloadOptions options;
    options.disk_bytes = disk_bytes;
    options.disk_path = dir.string();
    options.host_bytes = host_bytes;
    return std::make_unique<KvOffloader>(options, std::move(io), fp, kBs, std::move(host),
                                         std::move(disk), [this] {
                                           std::lock_guard<std::mutex> l(mu);
                                           ++wakes;
                                           cv.notify_all();
                                         });
  }

  // Hashes of a prompt's full blocks, as the KV cache manager makes them.
  static std::vector<BlockHash> chain(const std::vector<int32_t>& tokens, std::string_view salt) {
    std::vector<BlockHash> out;
    BlockHash parent{};
    for (size_t b = 0; b + kBs <= tokens.size(); b += kBs) {
      parent = hash_block_tokens(parent, std::span(tokens).subspan(b, kBs),
                                 std::as_bytes(std::span(salt.data(), salt.size())));
      out.push_back(parent);
    }
    return out;
  }

  // Stores blocks [0, n) of `tokens`, block i's bytes taken from pool block first_id + i.
  void store_chain(KvOffloader& o, const std::vector<int32_t>& tokens, std::string_view salt,
                   int32_t first_id, int32_t n) {
    const auto hashes = chain(tokens, salt);
    auto shared = std::make_shared<const std::vector<int32_t>>(tokens);
    for (int32_t i = 0; i < n; ++i) {
      ASSERT_TRUE(o.wants(hashes[i]));
      o.store({first_id + i, hashes[i], i == 0 ? BlockHash{} : hashes[i - 1], kv_salt_digest(salt),
               shared, i});
    }
    o.flush();
  }

  RestoredBytes restore(KvOffloader& o, const std::vector<int32_t>& tokens,
                        std::vector<BlockHash> hashes, std::string_view salt) {
    KvRestoreJob job;
    job.key = 7;
    job.hashes = std::move(hashes);
    job.tokens = tokens;
    job.salt = kv_salt_digest(salt);
    o.restore(std::move(job));
    o.flush();
    auto r = o.take_restored();
    EXPECT_EQ(r.size(), 1u);
    if (r.empty()) return {};
    // The pages' bytes, copied out before the result is handed back as the loop does.
    RestoredBytes out;
    for (auto p : r[0].pages) out.pages.emplace_back(p.begin(), p.end());
    out.from_host = r[0].from_host;
    o.release(r[0]);
    return out;
  }

  // Block `id`'s bytes in the twin, as a page payload.
  std::vector<std::byte> block_bytes(int32_t id) {
    KvHostBlockIo io(twin.memory());
    std::vector<std::byte> out(io.block_bytes());
    EXPECT_TRUE(io.copy_out(id, out).is_ok());
    return out;
  }
};

const std::vector<int32_t> kConvA = {10, 11, 12, 13, 14, 15, 16, 17, 18};
const std::vector<int32_t> kConvB = {20, 21, 22, 23, 24, 25, 26, 27, 28};

}  // namespace llmserve::offload_test
