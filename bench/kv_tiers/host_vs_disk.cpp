// Is the host-memory tier worth it on the CPU backend? Restores one long conversation's pages
// through the offloader (kv_offload) from the host tier, from the disk tier with its files in the
// page cache (just written), and from disk with the page cache dropped for those files
// (posix_fadvise DONTNEED), and times each: the worker's read and check (restore until
// take_restored) and the engine thread's copy into the pool. Medians of --reps runs; pages of a
// Llama-3.2-1B-shaped f16 cache by default (16 layers x K, V x 8 KV heads x 64 x 2 bytes per
// token = 32 KiB) with random bytes.
//
//   build/bench/kv_tiers/bench_kv_tiers --tokens 16384 --reps 5 --dir /tmp/kv_bench
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/kv_offload/kv_offloader.h"

using namespace llmserve;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  int tokens = 16384, block_size = 16, layers = 16, kv_heads = 8, head_dim = 64, reps = 5;
  std::string dir = "/tmp/llmserve_kv_tiers_bench";
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double secs(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--tokens")
      a.tokens = std::stoi(v);
    else if (k == "--reps")
      a.reps = std::stoi(v);
    else if (k == "--dir")
      a.dir = v;
    else if (k == "--layers")
      a.layers = std::stoi(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const int blocks = a.tokens / a.block_size;
  const uint64_t array_block = static_cast<uint64_t>(a.block_size) * a.kv_heads * a.head_dim * 2;
  const int arrays = 2 * a.layers;
  // The pool: `blocks` blocks for the conversation and as many to restore into.
  const uint64_t pool_blocks = 2ull * blocks;
  std::vector<std::byte> pool(pool_blocks * array_block * arrays);
  std::mt19937_64 rng(54);
  for (size_t i = 0; i < pool.size(); i += 8) {
    const uint64_t r = rng();
    std::memcpy(pool.data() + i, &r, std::min<size_t>(8, pool.size() - i));
  }
  KvHostMemory mem{pool.data(), pool.size(), {}};
  for (int i = 0; i < arrays; ++i)
    mem.arrays.push_back({i * pool_blocks * array_block, array_block});
  std::vector<int32_t> tokens(static_cast<size_t>(a.tokens));
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % 100000);
  auto shared = std::make_shared<const std::vector<int32_t>>(tokens);
  std::vector<BlockHash> chain;
  BlockHash parent{};
  for (int b = 0; b < blocks; ++b) {
    parent =
        hash_block_tokens(parent, std::span(tokens).subspan(b * a.block_size, a.block_size), {});
    chain.push_back(parent);
  }
  const KvFingerprint fp = kv_fingerprint({"bench",
                                           "cpu",
                                           "",
                                           "f16",
                                           a.block_size,
                                           a.layers,
                                           a.kv_heads,
                                           a.head_dim,
                                           {array_block},
                                           ""});
  const uint64_t page = array_block * arrays;
  const int64_t budget = static_cast<int64_t>((page + 112 + 4ull * a.tokens) * blocks * 2);
  std::printf("%d tokens, %d pages of %llu bytes (%.0f MiB), %d reps\n\n", a.tokens, blocks,
              static_cast<unsigned long long>(page), blocks * page / 1048576.0, a.reps);
  std::printf(
      "| tier | store (write-behind), s | restore: worker read + check, s | GB/s | copy into the "
      "pool, s |\n");
  std::printf("|---|---|---|---|---|\n");

  for (const std::string mode : {"host", "disk (page cache warm)", "disk (page cache dropped)"}) {
    fs::remove_all(a.dir);
    const bool host = mode == "host";
    auto io = std::make_unique<KvHostBlockIo>(mem);
    std::unique_ptr<KvHostTier> host_tier;
    std::unique_ptr<KvDiskTier> disk;
    if (host) {
      host_tier = std::move(KvHostTier::create(budget, io->block_bytes(), *io)).value();
    } else {
      disk = std::move(KvDiskTier::open(a.dir, budget, fp.digest, a.block_size)).value();
    }
    KvOffloadOptions o;
    o.max_pending_writes = 1 << 20;
    KvOffloader off(o, std::move(io), fp, a.block_size, std::move(host_tier), std::move(disk),
                    [] {});
    auto t0 = Clock::now();
    for (int b = 0; b < blocks; ++b) {
      off.store({b, chain[b], b == 0 ? BlockHash{} : chain[b - 1], {}, shared, b});
    }
    off.flush();
    const double store_s = secs(t0);
    std::vector<double> restore_s, copy_s;
    for (int rep = 0; rep < a.reps; ++rep) {
      if (mode == "disk (page cache dropped)") {
        for (const auto& e : fs::directory_iterator(a.dir)) {
          const int fd = ::open(e.path().c_str(), O_RDONLY);
          if (fd >= 0) {
            ::fdatasync(fd);
            ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            ::close(fd);
          }
        }
      }
      KvRestoreJob job;
      job.key = 1;
      job.hashes = chain;
      job.tokens = tokens;
      t0 = Clock::now();
      off.restore(std::move(job));
      off.flush();
      auto results = off.take_restored();
      restore_s.push_back(secs(t0));
      if (results.size() != 1 || results[0].pages.size() != chain.size()) {
        std::fprintf(stderr, "%s: restored %zu of %zu pages\n", mode.c_str(),
                     results.empty() ? 0 : results[0].pages.size(), chain.size());
        return 1;
      }
      t0 = Clock::now();
      for (int b = 0; b < blocks; ++b) {
        if (!off.io().copy_in(blocks + b, results[0].pages[b]).is_ok()) return 1;
      }
      copy_s.push_back(secs(t0));
      off.release(results[0]);
    }
    const double r = median(restore_s);
    std::printf("| %s | %.3f | %.3f | %.2f | %.3f |\n", mode.c_str(), store_s, r,
                blocks * page / r / 1e9, median(copy_s));
  }
  fs::remove_all(a.dir);
  return 0;
}
