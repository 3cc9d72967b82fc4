// The CPU backend holds repacked weights once (issue 36): once a matrix of the model's file mapping
// has its packed copy, its mapped pages leave the RSS, and the model computes the same logits as
// with the pages kept (LLMSERVE_CPU_KEEP_SOURCE=1). A random Q8_0 llama written to a temporary
// GGUF; the resident bytes of its mapping come from /proc/self/smaps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/mapped_file.h"
#include "engine/runner/model_runner.h"
#include "tests/unit/graph/graph_test_util.h"
#include "tests/unit/model/gguf_writer_for_tests.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;

// Resident bytes of this process's mappings of `path` (the Rss lines of /proc/self/smaps).
uint64_t resident_bytes_of(const std::string& path) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool ours = false;
  uint64_t total = 0;
  while (std::getline(f, line)) {
    const size_t sp = line.find(' ');
    const std::string first = line.substr(0, sp);
    const bool header = first.find('-') != std::string::npos &&
                        std::all_of(first.begin(), first.end(),
                                    [](char c) { return std::isxdigit(c) || c == '-'; });
    if (header) {
      ours = line.size() >= path.size() &&
             line.compare(line.size() - path.size(), path.size(), path) == 0;
    } else if (ours && line.rfind("Rss:", 0) == 0) {
      std::istringstream in(line.substr(4));
      uint64_t kib = 0;
      in >> kib;
      total += kib << 10;
    }
  }
  return total;
}

// A llama of Q8_0 matrices (random quants, one small scale) and F32 norms.
std::string write_q8_llama(bool tied) {
  constexpr int64_t kHidden = 1024, kHeads = 16, kKvHeads = 8, kFfn = 4096, kLayers = 2,
                    kVocab = 512;
  testing::GgufBuilder b;
  b.add_string("general.architecture", "llama")
      .add_u32("llama.block_count", kLayers)
      .add_u32("llama.context_length", 256)
      .add_u32("llama.embedding_length", kHidden)
      .add_u32("llama.feed_forward_length", kFfn)
      .add_u32("llama.attention.head_count", kHeads)
      .add_u32("llama.attention.head_count_kv", kKvHeads)
      .add_f32("llama.rope.freq_base", 10000.0f)
      .add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f)
      .add_u32("tokenizer.ggml.bos_token_id", 1)
      .add_u32("tokenizer.ggml.eos_token_id", 2);
  std::vector<std::string> toks;
  for (int64_t i = 0; i < kVocab; ++i) toks.push_back("t" + std::to_string(i));
  b.add_string_array("tokenizer.ggml.tokens", toks);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> q(-64, 64);
  auto mat = [&](const std::string& name, int64_t rows, int64_t cols) {
    std::vector<uint8_t> d;
    d.reserve(static_cast<size_t>(rows * cols / 32 * 34));
    for (int64_t blk = 0; blk < rows * cols / 32; ++blk) {
      d.push_back(0x00);  // f16 0x1C00 = 2^-8, little-endian
      d.push_back(0x1C);
      for (int i = 0; i < 32; ++i) d.push_back(static_cast<uint8_t>(static_cast<int8_t>(q(rng))));
    }
    b.add_tensor(name, kernels::DType::Q8_0, {cols, rows}, std::move(d));
  };
  auto norm = [&](const std::string& name) {
    b.add_f32_tensor(name, {kHidden}, std::vector<float>(kHidden, 1.0f));
  };
  const int64_t hd = kHidden / kHeads;
  mat("token_embd.weight", kVocab, kHidden);
  for (int64_t i = 0; i < kLayers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    norm(p + "attn_norm.weight");
    mat(p + "attn_q.weight", kHeads * hd, kHidden);
    mat(p + "attn_k.weight", kKvHeads * hd, kHidden);
    mat(p + "attn_v.weight", kKvHeads * hd, kHidden);
    mat(p + "attn_output.weight", kHidden, kHeads * hd);
    norm(p + "ffn_norm.weight");
    mat(p + "ffn_gate.weight", kFfn, kHidden);
    mat(p + "ffn_up.weight", kFfn, kHidden);
    mat(p + "ffn_down.weight", kHidden, kFfn);
  }
  norm("output_norm.weight");
  if (!tied) mat("output.weight", kVocab, kHidden);
  const std::string path =
      (fs::temp_directory_path() / ("llmserve_weight_release_" + std::to_string(::getpid()) +
                                    (tied ? "_tied" : "_untied") + ".gguf"))
          .string();
  EXPECT_TRUE(b.write(path));
  return path;
}

std::unique_ptr<ModelRunner> make_runner(const std::string& path, bool keep_source) {
  if (keep_source) {
    ::setenv("LLMSERVE_CPU_KEEP_SOURCE", "1", 1);
  } else {
    ::unsetenv("LLMSERVE_CPU_KEEP_SOURCE");
  }
  ModelRunnerOptions o;
  o.model_path = path;
  o.num_threads = 2;
  o.block_size = 16;
  o.kv_cache_bytes = 8ull << 20;
  o.max_tokens_per_step = 32;
  o.max_samples_per_step = 32;
  auto r = ModelRunner::create(o);
  ::unsetenv("LLMSERVE_CPU_KEEP_SOURCE");
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : nullptr;
}

class WeightRelease : public ::testing::TestWithParam<bool> {};  // tied embeddings

TEST_P(WeightRelease, RepackedSourcePagesLeaveTheRssAndLogitsStayTheSame) {
  if (std::getenv("LLMSERVE_CPU_NO_PACK") != nullptr) GTEST_SKIP() << "packing is off";
  const bool tied = GetParam();
  const std::string path = write_q8_llama(tied);
  const std::vector<int32_t> tokens = {1, 17, 300, 5, 42, 511, 64, 3, 9, 250};

  std::vector<float> kept_logits;
  uint64_t kept_resident = 0;
  {
    auto kept = make_runner(path, /*keep_source=*/true);
    ASSERT_NE(kept, nullptr);
    EXPECT_EQ(kept->weight_stats().released_bytes, 0u);
    kept_logits = testing::prefill_all_logits(*kept, tokens, 0);
    kept_resident = resident_bytes_of(path);
  }
  auto runner = make_runner(path, /*keep_source=*/false);
  ASSERT_NE(runner, nullptr);
  const CpuWeightStats& s = runner->weight_stats();
  ASSERT_EQ(s.packed.count("Q8_0"), 1u);
  const uint64_t packed_src = s.packed.at("Q8_0").source_bytes;
  // The 14 layer matrices and the LM head (untied: output.weight; tied: the embedding table,
  // packed but kept mapped for the rows embedding() reads).
  EXPECT_EQ(s.packed.at("Q8_0").matrices, 2 * 7 + 1);
  EXPECT_GT(s.released_bytes, packed_src * 9 / 10);
  EXPECT_LE(s.released_bytes, packed_src);
  const uint64_t resident = resident_bytes_of(path);
  // What stays: the embedding table (512 x 1088 bytes), norms, metadata, the page-cache folios
  // around them (large folios map whole).
  EXPECT_LT(resident, packed_src / 8) << "kept: " << kept_resident;
  EXPECT_GT(kept_resident, packed_src);  // the measurement sees the pages when they are kept

  // The dropped pages are never read again: the same logits, and they stay out of the RSS.
  const std::vector<float> logits = testing::prefill_all_logits(*runner, tokens, 0);
  ASSERT_EQ(logits.size(), kept_logits.size());
  for (size_t i = 0; i < logits.size(); ++i) ASSERT_EQ(logits[i], kept_logits[i]) << i;
  // Steps read embedding rows only (norms are copied): a folio or so around each row comes back.
  EXPECT_LT(resident_bytes_of(path), packed_src / 4);
  runner.reset();
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Embeddings, WeightRelease, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Tied" : "Untied"; });

// release_mapped_pages drops whole pages of a file mapping only, and the bytes read afterwards are
// the file's.
TEST(ReleaseMappedPages, WholePagesOnlyAndTheBytesComeBack) {
  const std::string path =
      (fs::temp_directory_path() / ("llmserve_release_pages_" + std::to_string(::getpid())))
          .string();
  const long page = ::sysconf(_SC_PAGESIZE);
  std::vector<char> bytes(static_cast<size_t>(page * 8));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 31 + 7);
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  auto map = MappedFile::open(path);
  ASSERT_TRUE(map.is_ok());
  const std::byte* p = map->bytes().data();
  uint64_t sum = 0;
  for (std::byte b : map->bytes()) sum += static_cast<uint8_t>(b);  // fault every page in
  EXPECT_GE(resident_bytes_of(path), static_cast<uint64_t>(page * 8));
  EXPECT_EQ(release_mapped_pages(p + 1, static_cast<size_t>(page) - 1), 0u);  // no whole page
  EXPECT_EQ(release_mapped_pages(nullptr, 100), 0u);
  // From the middle of page 0 to the middle of page 7: pages 1..6.
  EXPECT_EQ(release_mapped_pages(p + page / 2, static_cast<size_t>(page * 7)),
            static_cast<size_t>(page * 6));
  EXPECT_EQ(resident_bytes_of(path), static_cast<uint64_t>(page * 2));
  uint64_t again = 0;
  for (std::byte b : map->bytes()) again += static_cast<uint8_t>(b);
  EXPECT_EQ(again, sum);
  EXPECT_EQ(std::memcmp(p, bytes.data(), bytes.size()), 0);
  EXPECT_TRUE(in_mapped_file(p, bytes.size()));
  EXPECT_FALSE(in_mapped_file(p, bytes.size() + 1));
  fs::remove(path);
}

// Memory that is not a live MappedFile is never dropped (MADV_DONTNEED would zero it).
TEST(ReleaseMappedPages, LeavesOtherMemoryAlone) {
  const long page = ::sysconf(_SC_PAGESIZE);
  std::vector<char> heap(static_cast<size_t>(page * 8), 'x');
  EXPECT_FALSE(in_mapped_file(heap.data(), heap.size()));
  EXPECT_EQ(release_mapped_pages(heap.data(), heap.size()), 0u);
  EXPECT_TRUE(std::all_of(heap.begin(), heap.end(), [](char c) { return c == 'x'; }));
  const std::byte* gone = nullptr;
  {
    const std::string path =
        (fs::temp_directory_path() / ("llmserve_release_gone_" + std::to_string(::getpid())))
            .string();
    std::ofstream(path, std::ios::binary)
        .write(heap.data(), static_cast<std::streamsize>(heap.size()));
    auto map = MappedFile::open(path);
    ASSERT_TRUE(map.is_ok());
    gone = map->bytes().data();
    fs::remove(path);
  }
  EXPECT_FALSE(in_mapped_file(gone, static_cast<size_t>(page)));  // unmapped with its MappedFile
}

}  // namespace
}  // namespace llmserve
