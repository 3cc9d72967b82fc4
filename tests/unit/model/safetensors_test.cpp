#include "engine/model/safetensors_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "tests/unit/model/test_files.h"

namespace llmserve {
namespace {

using testing::as_bytes;

std::vector<uint8_t> make_file(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  std::copy(header.begin(), header.end(), out.begin() + 8);
  return out;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  auto r = SafetensorsFile::parse(as_bytes(bytes), "f.safetensors");
  EXPECT_FALSE(r.is_ok());
  return r.is_ok() ? "" : r.status().message();
}

TEST(Safetensors, ParsesValidHeader) {
  const auto bytes = make_file(
      R"({"__metadata__": {"format": "pt"}, "a": {"dtype": "F16", "shape": [2, 3],
         "data_offsets": [0, 12]}, "b": {"dtype": "BF16", "shape": [], "data_offsets": [12, 14]}})",
      14);
  auto r = SafetensorsFile::parse(as_bytes(bytes));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ((*r)->tensors().size(), 2u);
  const auto& a = (*r)->tensors()[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.type, kernels::DType::F16);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data.size(), 12u);
}

TEST(Safetensors, FixtureFile) {
  auto r = SafetensorsFile::open(testing::fixture_path("model/hf_tiny/model.safetensors"));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)->tensors().size(), 21u);
}

TEST(Safetensors, BadHeadersGiveErrors) {
  EXPECT_NE(error_of({1, 2, 3}).find("too short"), std::string::npos);
  auto huge = make_file("{}", 0);
  huge[7] = 0x7F;
  EXPECT_NE(error_of(huge).find("header length"), std::string::npos);
  EXPECT_NE(error_of(make_file("[1]", 0)).find("JSON object"), std::string::npos);
  EXPECT_NE(error_of(make_file("{\"a\": 1", 0)).find("JSON object"), std::string::npos);
  auto err = [](const char* entry, size_t data) {
    return error_of(make_file(std::string("{\"w\": ") + entry + "}", data));
  };
  EXPECT_NE(err(R"({"dtype": "F8_E5M2", "shape": [1], "data_offsets": [0, 1]})", 1).find("F8_E5M2"),
            std::string::npos);
  EXPECT_NE(err(R"({"shape": [1], "data_offsets": [0, 4]})", 4).find("dtype"), std::string::npos);
  EXPECT_NE(err(R"({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]})", 4).find("shape"),
            std::string::npos);
  EXPECT_NE(err(R"({"dtype": "F32", "shape": "x", "data_offsets": [0, 4]})", 4).find("shape"),
            std::string::npos);
  EXPECT_NE(err(R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 4]})", 4).find("need 8"),
            std::string::npos);
  EXPECT_NE(err(R"({"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})", 2)
                .find("tensor 'w': data_offsets [0, 4] outside"),
            std::string::npos);
  EXPECT_NE(err(R"({"dtype": "F32", "shape": [1], "data_offsets": [8, 4]})", 8).find("outside"),
            std::string::npos);
  EXPECT_NE(err(R"({"dtype": "F32", "shape": [1], "data_offsets": [0]})", 4).find("data_offsets"),
            std::string::npos);
  EXPECT_NE(err(R"({"dtype": "F32", "shape": [4294967296, 4294967296, 4294967296],
                   "data_offsets": [0, 4]})",
                4)
                .find("too large"),
            std::string::npos);
  EXPECT_NE(err(R"([1, 2])", 4).find("not an object"), std::string::npos);
}

TEST(Safetensors, TruncationsAndFlipsNeverCrash) {
  const auto bytes = testing::read_bytes(testing::fixture_path("model/hf_tiny/model.safetensors"));
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  for (size_t len = 0; len < bytes.size(); len += (len < header_len + 8 ? 1 : 97)) {
    auto r = SafetensorsFile::parse(as_bytes(bytes).first(len));
    EXPECT_FALSE(r.is_ok()) << len;
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    auto copy = bytes;
    const size_t pos = rng() % (header_len + 8);
    copy[pos] = static_cast<uint8_t>(rng());
    auto r = SafetensorsFile::parse(as_bytes(copy));
    if (r.is_ok()) {
      for (const auto& t : (*r)->tensors()) {
        ASSERT_GE(t.data.data(), reinterpret_cast<const std::byte*>(copy.data()));
        ASSERT_LE(t.data.data() + t.data.size(),
                  reinterpret_cast<const std::byte*>(copy.data() + copy.size()));
      }
    }
  }
}

}  // namespace
}  // namespace llmserve
