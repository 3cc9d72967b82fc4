#include "engine/model/gguf_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "llmserve/kernels/dequantize.h"
#include "tests/unit/model/gguf_writer_for_tests.h"
#include "tests/unit/model/test_files.h"

namespace llmserve {
namespace {

using nlohmann::json;
using testing::as_bytes;
using testing::fixture_path;
using testing::GgufBuilder;
using testing::read_bytes;

json load_json(const std::string& rel) {
  const auto bytes = read_bytes(fixture_path(rel));
  return json::parse(bytes.begin(), bytes.end());
}

// Checks every tensor (and the dequantized values where the fixture has them) against what
// gguf.GGUFReader read from the same file.
void expect_tensors_match(const GgufFile& f, const json& expected) {
  for (const json& t : expected["tensors"]) {
    const std::string name = t["name"];
    const GgufTensorInfo* info = f.find_tensor(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(static_cast<uint32_t>(info->type), t["type"].get<uint32_t>()) << name;
    EXPECT_EQ(info->ne, t["ne"].get<std::vector<int64_t>>()) << name;
    EXPECT_EQ(info->offset, t["offset"].get<uint64_t>()) << name;
    EXPECT_EQ(info->nbytes, t["nbytes"].get<uint64_t>()) << name;
    if (!t.contains("first_values")) continue;
    std::vector<float> vals(static_cast<size_t>(info->num_elements));
    kernels::dequantize_row(info->type, info->data.data(), vals.data(), info->num_elements);
    const auto first = t["first_values"].get<std::vector<float>>();
    for (size_t i = 0; i < first.size(); ++i)
      ASSERT_FLOAT_EQ(vals[i], first[i]) << name << " " << i;
    double sum = 0;
    for (float v : vals) sum += v;
    EXPECT_NEAR(sum, t["sum"].get<double>(), 1e-3 * std::max(1.0, std::fabs(sum))) << name;
  }
}

TEST(GgufFile, TinyFileMatchesPythonReader) {
  auto r = GgufFile::open(fixture_path("model/tiny.gguf"));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const GgufFile& f = **r;
  const json exp = load_json("model/tiny_gguf_expected.json");
  EXPECT_EQ(f.version(), exp["version"].get<uint32_t>());
  EXPECT_EQ(f.alignment(), exp["alignment"].get<uint64_t>());
  EXPECT_EQ(f.data_offset(), exp["data_offset"].get<uint64_t>());
  EXPECT_EQ(f.metadata().size(), exp["metadata"].size());
  EXPECT_EQ(f.tensors().size(), exp["tensors"].size());

  EXPECT_EQ(f.get_u32("test.u8"), 200u);
  EXPECT_EQ(f.get_i32("test.i8"), -100);
  EXPECT_EQ(f.get_u32("test.u16"), 60000u);
  EXPECT_EQ(f.get_i32("test.i16"), -30000);
  EXPECT_EQ(f.get_u32("test.u32"), 4000000000u);
  EXPECT_EQ(f.get_i32("test.i32"), -2000000000);
  EXPECT_EQ(f.get_u64("test.u64"), exp["metadata"]["test.u64"]["value"].get<uint64_t>());
  EXPECT_EQ(f.get_i64("test.u64"), std::nullopt);  // does not fit int64
  EXPECT_EQ(f.get_i64("test.i64"), exp["metadata"]["test.i64"]["value"].get<int64_t>());
  EXPECT_EQ(f.get_u64("test.i64"), std::nullopt);  // negative
  EXPECT_EQ(f.get_f32("test.f32"), 1.5f);
  EXPECT_EQ(f.get_f32("test.f64"), -2.25f);
  EXPECT_EQ(f.get_bool("test.bool"), true);
  EXPECT_EQ(f.get_string("test.string"),
            exp["metadata"]["test.string"]["value"].get<std::string>());
  EXPECT_EQ(f.get_string("test.u8"), std::nullopt);
  EXPECT_EQ(f.get_i32_array("test.arr_i16"), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(f.get_f32_array("test.arr_f32"), (std::vector<float>{0.5f, -1.0f, 2.0f}));
  EXPECT_EQ(f.get_i32_array("test.arr_bool"), (std::vector<int32_t>{1, 0, 1}));
  auto strs = f.get_string_array("test.arr_str");
  ASSERT_TRUE(strs.has_value());
  ASSERT_EQ(strs->size(), 3u);
  EXPECT_EQ((*strs)[0], "a");
  EXPECT_EQ((*strs)[1], "");
  EXPECT_EQ((*strs)[2], "ccc");
  const GgufValue* nested = f.find("test.nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->elem_type, GgufType::kArray);
  ASSERT_EQ(nested->items.size(), 2u);
  EXPECT_EQ(nested->items[0].count, 2u);
  EXPECT_EQ(nested->items[1].count, 3u);
  EXPECT_EQ(nested->items[1].array_i64(2), 5);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->size(), 16u);
  EXPECT_EQ(f.find("no.such.key"), nullptr);
  // Every key the Python reader saw is here with the same type.
  for (const auto& [key, v] : exp["metadata"].items()) {
    const GgufValue* val = f.find(key);
    ASSERT_NE(val, nullptr) << key;
    EXPECT_EQ(static_cast<int>(val->type), v["types"][0].get<int>()) << key;
  }
  expect_tensors_match(f, exp);
}

TEST(GgufFile, DefaultModelMatchesPythonReader) {
  const char* model = std::getenv("LLMSERVE_TEST_MODEL");
  if (model == nullptr) GTEST_SKIP() << "LLMSERVE_TEST_MODEL not set";
  auto r = GgufFile::open(model);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const json exp = load_json("model/default_model_expected.json");
  EXPECT_EQ((*r)->version(), exp["version"].get<uint32_t>());
  EXPECT_EQ((*r)->data_offset(), exp["data_offset"].get<uint64_t>());
  EXPECT_EQ((*r)->tensors().size(), exp["config"]["tensor_count"].get<size_t>());
  const auto tokens = (*r)->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.has_value());
  const json& tk = exp["metadata"]["tokenizer.ggml.tokens"];
  EXPECT_EQ(tokens->size(), tk["count"].get<size_t>());
  EXPECT_EQ((*tokens)[0], tk["first"][0].get<std::string>());
  EXPECT_EQ(tokens->back(), tk["last"].get<std::string>());
  expect_tensors_match(**r, exp);
}

TEST(GgufFile, BuilderRoundTripEveryValueType) {
  GgufBuilder b;
  b.version(2)
      .add_u8("u8", 7)
      .add_i8("i8", -7)
      .add_u16("u16", 700)
      .add_i16("i16", -700)
      .add_u32("u32", 70000)
      .add_i32("i32", -70000)
      .add_u64("u64", 1ull << 40)
      .add_i64("i64", -(1ll << 40))
      .add_f32("f32", 0.25f)
      .add_f64("f64", 1e100)
      .add_bool("b", false)
      .add_string("s", "text")
      .add_string_array("sa", {"x", "yy"})
      .add_array<uint64_t>("u64a", GgufBuilder::kU64, {1, 2, 3})
      .add_array<double>("f64a", GgufBuilder::kF64, {0.5, 1.5});
  b.add_f32_tensor("t", {2, 3}, {1, 2, 3, 4, 5, 6});
  const auto bytes = b.build();
  auto r = GgufFile::parse(as_bytes(bytes));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.get_u32("u8"), 7u);
  EXPECT_EQ(f.get_i64("i8"), -7);
  EXPECT_EQ(f.get_u32("u16"), 700u);
  EXPECT_EQ(f.get_i32("i16"), -700);
  EXPECT_EQ(f.get_u32("u32"), 70000u);
  EXPECT_EQ(f.get_i32("i32"), -70000);
  EXPECT_EQ(f.get_u64("u64"), 1ull << 40);
  EXPECT_EQ(f.get_u32("u64"), std::nullopt);
  EXPECT_EQ(f.get_i64("i64"), -(1ll << 40));
  EXPECT_EQ(f.get_f32("f32"), 0.25f);
  EXPECT_EQ(f.find("f64")->f, 1e100);
  EXPECT_EQ(f.get_bool("b"), false);
  EXPECT_EQ(f.get_bool("u8"), std::nullopt);
  EXPECT_EQ(f.get_string("s"), "text");
  EXPECT_EQ(f.get_string_array("sa")->size(), 2u);
  EXPECT_EQ(f.get_i32_array("u64a"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(f.get_f32_array("f64a"), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_EQ(f.get_i32_array("f64a"), std::nullopt);
  const GgufTensorInfo* t = f.find_tensor("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ne, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t->num_elements, 6);
  EXPECT_EQ(t->nbytes, 24u);
  EXPECT_EQ(t->offset % 32, 0u);
  float v[6];
  std::memcpy(v, t->data.data(), 24);
  EXPECT_EQ(v[5], 6.0f);
  EXPECT_FALSE(f.find("u8")->to_string().empty());
}

TEST(GgufFile, CustomAlignment) {
  GgufBuilder b;
  b.alignment(64).add_f32_tensor("a", {3}, {1, 2, 3}).add_f32_tensor("b", {1}, {4});
  auto r = GgufFile::parse(as_bytes(b.build()));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)->alignment(), 64u);
  EXPECT_EQ((*r)->find_tensor("b")->offset % 64, 0u);
}

TEST(GgufFile, OpenMissingFileIsNotFound) {
  auto r = GgufFile::open("/nonexistent/file.gguf");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace llmserve
