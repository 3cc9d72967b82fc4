// Malformed GGUF input: truncations, random corruption and crafted bad fields must give an error
// Status, never a crash, a hang or a huge allocation.
#include <gtest/gtest.h>

#include <random>

#include "engine/model/gguf_file.h"
#include "tests/unit/model/gguf_writer_for_tests.h"
#include "tests/unit/model/test_files.h"

namespace llmserve {
namespace {

using kernels::DType;
using testing::as_bytes;
using testing::GgufBuilder;

std::vector<uint8_t> small_valid_file() {
  testing::TinyLlamaSpec spec;
  spec.hidden = 8;
  spec.heads = 2;
  spec.kv_heads = 1;
  spec.ffn = 16;
  spec.layers = 1;
  spec.vocab = 6;
  GgufBuilder b = testing::tiny_llama_gguf(spec);
  b.add_array<int32_t>("test.arr", GgufBuilder::kI32, {1, 2, 3})
      .add_raw_kv("test.nested", GgufBuilder::kArray,
                  {9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,                // 1 array of
                   5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0});  //   1 int32 = 7
  return b.build();
}

Status parse_status(const std::vector<uint8_t>& bytes) {
  auto r = GgufFile::parse(as_bytes(bytes));
  return r.is_ok() ? Status::ok() : r.status();
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  const Status st = parse_status(bytes);
  EXPECT_FALSE(st.is_ok());
  return st.message();
}

TEST(GgufRobustness, SmallFileParses) {
  const auto bytes = small_valid_file();
  auto r = GgufFile::parse(as_bytes(bytes));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)->find("test.nested")->items[0].array_i64(0), 7);
}

TEST(GgufRobustness, EveryTruncationFails) {
  const auto bytes = small_valid_file();
  auto full = GgufFile::parse(as_bytes(bytes));
  ASSERT_TRUE(full.is_ok());
  uint64_t needed = 0;
  for (const auto& t : (*full)->tensors()) needed = std::max(needed, t.offset + t.nbytes);
  for (size_t len = 0; len < needed; ++len) {
    std::span<const std::byte> cut = as_bytes(bytes).first(len);
    auto r = GgufFile::parse(cut);
    ASSERT_FALSE(r.is_ok()) << "length " << len;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << len << ": " << r.status().message();
  }
}

TEST(GgufRobustness, RandomByteFlipsNeverCrash) {
  const auto bytes = small_valid_file();
  auto full = GgufFile::parse(as_bytes(bytes));
  ASSERT_TRUE(full.is_ok());
  const size_t header = (*full)->data_offset();
  std::mt19937 rng(2024);
  int errors = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    auto copy = bytes;
    const int flips = 1 + iter % 4;
    for (int k = 0; k < flips; ++k) {
      const size_t limit = iter % 5 == 0 ? copy.size() : header;
      const size_t pos = rng() % limit;
      copy[pos] = iter % 3 == 0 ? static_cast<uint8_t>(rng()) : copy[pos] ^ (1u << (rng() % 8));
    }
    auto r = GgufFile::parse(as_bytes(copy));
    if (!r.is_ok()) {
      ++errors;
      EXPECT_FALSE(r.status().message().empty());
    } else {
      for (const auto& t : (*r)->tensors()) ASSERT_LE(t.offset + t.nbytes, copy.size());
    }
  }
  EXPECT_GT(errors, 1000);
}

TEST(GgufRobustness, DefaultModelHeaderTruncations) {
  const char* model = std::getenv("LLMSERVE_TEST_MODEL");
  if (model == nullptr) GTEST_SKIP() << "LLMSERVE_TEST_MODEL not set";
  auto full = GgufFile::open(model);
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  auto map = MappedFile::open(model);
  ASSERT_TRUE(map.is_ok());
  const uint64_t header = (*full)->data_offset();
  std::mt19937 rng(99);
  for (int i = 0; i < 60; ++i) {
    const uint64_t len = i < 10 ? static_cast<uint64_t>(i) * 4 : rng() % header;
    auto r = GgufFile::parse(map->bytes().first(len));
    ASSERT_FALSE(r.is_ok()) << len;
  }
  // Header intact but data cut: the tensor that runs past the end is named.
  auto r = GgufFile::parse(map->bytes().first(map->size() - 1));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("past end of file"), std::string::npos);
}

std::vector<uint8_t> header_with_counts(uint64_t n_tensors, uint64_t n_kv) {
  std::vector<uint8_t> b = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  for (uint64_t v : {n_tensors, n_kv}) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  b.resize(b.size() + 64, 0);
  return b;
}

TEST(GgufRobustness, HugeCounts) {
  EXPECT_NE(parse_error(header_with_counts(0, ~0ull)).find("metadata count"), std::string::npos);
  EXPECT_NE(parse_error(header_with_counts(~0ull, 0)).find("tensor count"), std::string::npos);
  EXPECT_NE(parse_error(header_with_counts(1ull << 40, 1)).find("past end"), std::string::npos);
}

TEST(GgufRobustness, BadMagicAndVersion) {
  auto bytes = GgufBuilder().build();
  EXPECT_TRUE(parse_status(bytes).is_ok());
  auto bad = bytes;
  bad[0] = 'X';
  EXPECT_NE(parse_error(bad).find("magic"), std::string::npos);
  for (uint32_t v : {1u, 4u, 0xFFFFFFFFu}) {
    auto b = GgufBuilder().version(v).build();
    EXPECT_EQ(parse_status(b).code(), StatusCode::kUnimplemented);
  }
}

TEST(GgufRobustness, HugeStringAndArrayLengths) {
  // String length 2^63 and array lengths whose byte size overflows 64 bits.
  std::vector<uint8_t> huge_str(8, 0xFF);
  huge_str[7] = 0x7F;
  std::string err =
      parse_error(GgufBuilder().add_raw_kv("k", GgufBuilder::kString, huge_str).build());
  EXPECT_NE(err.find("key #0 'k' length"), std::string::npos) << err;
  EXPECT_NE(err.find("past end of file"), std::string::npos) << err;
  for (uint32_t elem : {0u, 4u, 8u, 9u, 10u}) {  // u8, u32, string, array, u64 elements
    std::vector<uint8_t> v = {static_cast<uint8_t>(elem), 0, 0, 0};
    for (int i = 0; i < 8; ++i) v.push_back(i == 7 ? 0x40 : 0);  // 2^62 elements
    err = parse_error(GgufBuilder().add_raw_kv("arr", GgufBuilder::kArray, v).build());
    EXPECT_NE(err.find("array length"), std::string::npos) << err;
  }
  // Huge key length.
  auto bytes = GgufBuilder().add_u8("key", 1).build();
  bytes[24 + 7] = 0x10;
  EXPECT_NE(parse_error(bytes).find("key #0 length"), std::string::npos);
}

TEST(GgufRobustness, UnknownValueTypes) {
  EXPECT_NE(parse_error(GgufBuilder().add_raw_kv("k", 13, {0, 0, 0, 0}).build())
                .find("unknown value type 13"),
            std::string::npos);
  EXPECT_NE(
      parse_error(GgufBuilder()
                      .add_raw_kv("k", GgufBuilder::kArray, {99, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0})
                      .build())
          .find("unknown array element type 99"),
      std::string::npos);
}

TEST(GgufRobustness, DeeplyNestedArraysRejected) {
  std::vector<uint8_t> v;
  for (int d = 0; d < 100000; ++d) {
    v.insert(v.end(), {9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0});
  }
  v.insert(v.end(), {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  const std::string err =
      parse_error(GgufBuilder().add_raw_kv("deep", GgufBuilder::kArray, v).build());
  EXPECT_NE(err.find("nested deeper"), std::string::npos) << err;
}

TEST(GgufRobustness, DuplicateKeysAndTensors) {
  EXPECT_NE(parse_error(GgufBuilder().add_u8("a", 1).add_u8("a", 2).build()).find("duplicate"),
            std::string::npos);
  EXPECT_NE(
      parse_error(GgufBuilder().add_f32_tensor("t", {1}, {1}).add_f32_tensor("t", {1}, {2}).build())
          .find("duplicate tensor name 't'"),
      std::string::npos);
}

TEST(GgufRobustness, BadAlignment) {
  for (uint32_t a : {0u, 3u, 48u}) {
    GgufBuilder b;
    b.add_u32("general.alignment", a);
    EXPECT_NE(parse_error(b.build()).find("general.alignment"), std::string::npos) << a;
  }
  EXPECT_NE(parse_error(GgufBuilder().add_string("general.alignment", "32").build())
                .find("general.alignment"),
            std::string::npos);
}

TEST(GgufRobustness, BadTensorShapes) {
  std::string err = parse_error(GgufBuilder().add_tensor("z", DType::F32, {4, 0}, {}).build());
  EXPECT_NE(err.find("tensor 'z'"), std::string::npos) << err;
  EXPECT_NE(err.find("ne[1] = 0"), std::string::npos) << err;
  err = parse_error(GgufBuilder().add_tensor("nodims", DType::F32, {}, {}).build());
  EXPECT_NE(err.find("dimension count 0"), std::string::npos) << err;
  err = parse_error(
      GgufBuilder().add_tensor("five", DType::F32, {1, 1, 1, 1, 1}, {0, 0, 0, 0}).build());
  EXPECT_NE(err.find("dimension count 5"), std::string::npos) << err;
  err =
      parse_error(GgufBuilder().add_tensor("big", DType::F32, {1ll << 40, 1ll << 40}, {}).build());
  EXPECT_NE(err.find("tensor 'big'"), std::string::npos) << err;
  // 2^61 F32 elements: the element count fits int64 but the byte size does not fit 64 bits.
  err = parse_error(
      GgufBuilder().add_tensor("bytes", DType::F32, {1ll << 31, 1ll << 30}, {}).build());
  EXPECT_NE(err.find("tensor 'bytes'"), std::string::npos) << err;
  err = parse_error(
      GgufBuilder().add_tensor("q", DType::Q8_0, {16}, std::vector<uint8_t>(17)).build());
  EXPECT_NE(err.find("not a multiple of the Q8_0 block size 32"), std::string::npos) << err;
}

TEST(GgufRobustness, UnknownTensorTypeNamesTensorAndId) {
  const Status st = parse_status(
      GgufBuilder()
          .add_tensor("blk.0.x", static_cast<DType>(39), {32}, std::vector<uint8_t>(32))
          .build());
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("tensor 'blk.0.x'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("type id 39"), std::string::npos) << st.message();
}

TEST(GgufRobustness, OffsetsPastEndAndMisaligned) {
  std::string err = parse_error(GgufBuilder()
                                    .add_f32_tensor("blk.3.attn_q.weight", {4}, {1, 2, 3, 4})
                                    .override_last_offset(1 << 20)
                                    .build());
  EXPECT_NE(err.find("tensor 'blk.3.attn_q.weight': data offset"), std::string::npos) << err;
  EXPECT_NE(err.find("past end of file (size"), std::string::npos) << err;
  err = parse_error(GgufBuilder()
                        .add_f32_tensor("t", {4}, {1, 2, 3, 4})
                        .override_last_offset(~0ull - 31)
                        .build());
  EXPECT_NE(err.find("past end of file"), std::string::npos) << err;
  err = parse_error(
      GgufBuilder().add_f32_tensor("m", {4}, {1, 2, 3, 4}).override_last_offset(4).build());
  EXPECT_NE(err.find("tensor 'm': data offset 4 is not a multiple of the alignment 32"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace llmserve
