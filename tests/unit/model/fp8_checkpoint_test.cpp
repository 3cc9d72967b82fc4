// HF FP8 checkpoints (engine/model/fp8_checkpoint.h): quantization_config as the published
// files write it, the scale layouts by shape, and the refusals (each naming what is wrong) when a
// checkpoint's config or scale tensors do not fit; the load of the tiny fixtures
// (tests/reference/make_tiny_fp8.py) with a scale tensor dropped or the block size removed.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/model/fp8_checkpoint.h"
#include "engine/model/model_weights.h"
#include "llmserve/kernels/dequantize.h"
#include "test_files.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;
using kernels::DType;
using nlohmann::json;

Result<Fp8CheckpointConfig> config_of(const json& q) {
  json j = {{"model_type", "llama"}};
  if (!q.is_null()) j["quantization_config"] = q;
  return read_fp8_checkpoint_config(j.dump());
}

TEST(Fp8Checkpoint, ReadsThePublishedConfigs) {
  auto none = config_of(nullptr);
  ASSERT_TRUE(none.is_ok());
  EXPECT_TRUE(none.value().method.empty());
  // Qwen3-8B-FP8 / DeepSeek-V3.
  auto block = config_of({{"quant_method", "fp8"},
                          {"activation_scheme", "dynamic"},
                          {"fmt", "e4m3"},
                          {"weight_block_size", {128, 128}}});
  ASSERT_TRUE(block.is_ok()) << block.status().to_string();
  EXPECT_EQ(block.value().method, "fp8");
  EXPECT_EQ(block.value().block_rows, 128);
  EXPECT_EQ(block.value().block_cols, 128);
  // RedHatAI -FP8-dynamic (compressed-tensors, channel) and a block strategy.
  json groups = {{"group_0",
                  {{"targets", {"Linear"}},
                   {"weights",
                    {{"num_bits", 8},
                     {"type", "float"},
                     {"strategy", "block"},
                     {"block_structure", {64, 32}}}}}}};
  auto ct = config_of({{"quant_method", "compressed-tensors"},
                       {"format", "float-quantized"},
                       {"config_groups", groups}});
  ASSERT_TRUE(ct.is_ok()) << ct.status().to_string();
  EXPECT_EQ(ct.value().block_rows, 64);
  EXPECT_EQ(ct.value().block_cols, 32);
  // Meta's Llama-3.1-405B-Instruct-FP8.
  auto fb = config_of({{"quant_method", "fbgemm_fp8"}, {"activation_scale_ub", 1200.0}});
  ASSERT_TRUE(fb.is_ok());
  EXPECT_EQ(fb.value().block_rows, 0);
}

TEST(Fp8Checkpoint, RefusesOtherSchemesNamingTheKey) {
  auto awq = config_of({{"quant_method", "awq"}, {"bits", 4}});
  EXPECT_EQ(awq.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(awq.status().message().find("quant_method 'awq'"), std::string::npos);
  auto e5 = config_of({{"quant_method", "fp8"}, {"fmt", "e5m2"}});
  EXPECT_EQ(e5.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(e5.status().message().find("fmt 'e5m2'"), std::string::npos);
  json int8 = {{"group_0", {{"weights", {{"num_bits", 8}, {"type", "int"}}}}}};
  auto ct = config_of({{"quant_method", "compressed-tensors"}, {"config_groups", int8}});
  EXPECT_EQ(ct.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(ct.status().message().find("8-bit float"), std::string::npos);
  auto packed = config_of({{"quant_method", "compressed-tensors"},
                           {"format", "pack-quantized"},
                           {"config_groups", int8}});
  EXPECT_NE(packed.status().message().find("format 'pack-quantized'"), std::string::npos);
  auto bad = config_of({{"quant_method", "fp8"}, {"weight_block_size", {128}}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("weight_block_size"), std::string::npos);
}

TEST(Fp8Checkpoint, ScaleNames) {
  EXPECT_EQ(fp8_scale_owner("model.layers.0.mlp.up_proj.weight_scale_inv"),
            "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(fp8_scale_owner("model.layers.0.mlp.up_proj.weight_scale"),
            "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(fp8_scale_owner("model.layers.0.mlp.up_proj.weight"), "");
  EXPECT_TRUE(is_fp8_activation_scale("model.layers.0.mlp.up_proj.input_scale"));
  EXPECT_FALSE(is_fp8_activation_scale("model.layers.0.mlp.up_proj.weight_scale"));
}

// A scale tensor over `values` (F32 or BF16) of `shape`.
struct ScaleTensor {
  std::vector<uint8_t> bytes;
  SafetensorsTensor t;
  ScaleTensor(DType type, std::vector<int64_t> shape, const std::vector<float>& values) {
    for (float v : values) {
      if (type == DType::BF16) {
        const uint16_t h = kernels::fp32_to_bf16(v);
        bytes.insert(bytes.end(), {static_cast<uint8_t>(h), static_cast<uint8_t>(h >> 8)});
      } else {
        uint8_t b[4];
        std::memcpy(b, &v, 4);
        bytes.insert(bytes.end(), b, b + 4);
      }
    }
    t.name = "w.weight_scale";
    t.type = type;
    t.shape = std::move(shape);
    t.data = testing::as_bytes(bytes);
  }
};

TEST(Fp8Checkpoint, ScaleLayoutsByShape) {
  Fp8CheckpointConfig block{"fp8", 128, 128};
  kernels::Fp8Scales g;
  ScaleTensor tensor(DType::F32, {}, {0.5f});
  auto r = fp8_scale_grid(tensor.t, "w.weight", 200, 300, block, &g);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(g.block_rows, 200);
  EXPECT_EQ(g.block_cols, 300);
  EXPECT_EQ(g.at(199, 299, 300), 0.5f);
  ScaleTensor one(DType::F32, {1}, {0.25f});
  ASSERT_TRUE(fp8_scale_grid(one.t, "w.weight", 200, 300, {}, &g).is_ok());
  EXPECT_EQ(g.block_rows, 200);
  std::vector<float> rows(200);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = 0.001f * static_cast<float>(i + 1);
  ScaleTensor channel(DType::BF16, {200, 1}, rows);
  r = fp8_scale_grid(channel.t, "w.weight", 200, 300, {}, &g);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(g.block_rows, 1);
  EXPECT_EQ(g.block_cols, 300);
  EXPECT_EQ(g.at(7, 123, 300), kernels::bf16_to_fp32(kernels::fp32_to_bf16(0.008f)));
  ScaleTensor flat(DType::F32, {200}, rows);
  ASSERT_TRUE(fp8_scale_grid(flat.t, "w.weight", 200, 300, {}, &g).is_ok());
  EXPECT_EQ(g.block_rows, 1);
  // Ragged 128 x 128 blocks of [200, 300]: a 2 x 3 grid.
  ScaleTensor grid(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto blocks = fp8_scale_grid(grid.t, "w.weight", 200, 300, block, &g);  // owns g.data
  ASSERT_TRUE(blocks.is_ok());
  EXPECT_EQ(g.at(127, 127, 300), 1.0f);
  EXPECT_EQ(g.at(128, 256, 300), 6.0f);
  EXPECT_EQ(g.at(199, 299, 300), 6.0f);
}

TEST(Fp8Checkpoint, RefusesScalesThatFitNoLayout) {
  kernels::Fp8Scales g;
  ScaleTensor grid(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto no_block = fp8_scale_grid(grid.t, "w.weight", 200, 300, {"fp8", 0, 0}, &g);
  EXPECT_EQ(no_block.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(no_block.status().message().find("weight_block_size"), std::string::npos);
  auto wrong = fp8_scale_grid(grid.t, "w.weight", 300, 300, {"fp8", 128, 128}, &g);
  EXPECT_EQ(wrong.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(wrong.status().message().find("expected"), std::string::npos);
  EXPECT_NE(wrong.status().message().find("[3, 3]"), std::string::npos);
  ScaleTensor negative(DType::F32, {1}, {-1.0f});
  EXPECT_EQ(fp8_scale_grid(negative.t, "w.weight", 4, 4, {}, &g).status().code(),
            StatusCode::kDataLoss);
  ScaleTensor ints(DType::F32, {1}, {1.0f});
  ints.t.type = DType::I32;
  auto i32 = fp8_scale_grid(ints.t, "w.weight", 4, 4, {}, &g);
  EXPECT_NE(i32.status().message().find("dtype I32"), std::string::npos);
}

// A copy of a tiny_fp8 fixture folder whose safetensors header leaves out `drop` and whose
// config.json is `config` (the data section is kept as is: the other offsets stay valid).
std::string copy_fixture(const std::string& variant, const std::string& drop, const json& config) {
  const std::string src = testing::fixture_path("tiny_fp8/" + variant);
  const fs::path dst = fs::temp_directory_path() /
                       ("llmserve_fp8_" + variant + "_" + std::to_string(::getpid()) + "_" +
                        std::to_string(std::hash<std::string>{}(drop + config.dump())));
  fs::create_directories(dst);
  std::vector<uint8_t> st = testing::read_bytes(src + "/model.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, st.data(), 8);
  json header = json::parse(std::string(st.begin() + 8, st.begin() + 8 + static_cast<long>(n)));
  header.erase(drop);
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t len = text.size();
  std::ofstream out(dst / "model.safetensors", std::ios::binary);
  out.write(reinterpret_cast<const char*>(&len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.write(reinterpret_cast<const char*>(st.data()) + 8 + n,
            static_cast<std::streamsize>(st.size() - 8 - n));
  out.close();
  std::ofstream(dst / "config.json") << config.dump(2);
  return dst.string();
}

json fixture_config(const std::string& variant) {
  std::ifstream f(testing::fixture_path("tiny_fp8/" + variant + "/config.json"));
  return json::parse(f);
}

TEST(Fp8Checkpoint, LoadsTheFixturesWithTheirGrids) {
  for (const char* v : {"block", "channel"}) {
    auto m = load_model(testing::fixture_path(std::string("tiny_fp8/") + v));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    const TensorView* t = m.value()->tensor("blk.1.ffn_down.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, DType::F8_E4M3);
    EXPECT_FALSE(t->scales.empty());
  }
}

TEST(Fp8Checkpoint, MissingScaleTensorNamesTheWeight) {
  const std::string dir =
      copy_fixture("block", "model.layers.1.mlp.up_proj.weight_scale_inv", fixture_config("block"));
  auto m = load_model(dir);
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("'model.layers.1.mlp.up_proj.weight' has no"),
            std::string::npos)
      << m.status().message();
  fs::remove_all(dir);
}

TEST(Fp8Checkpoint, BlockGridWithoutBlockSizeIsRefused) {
  json cfg = fixture_config("block");
  cfg["quantization_config"].erase("weight_block_size");
  const std::string dir = copy_fixture("block", "", cfg);
  auto m = load_model(dir);
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("weight_block_size"), std::string::npos)
      << m.status().message();
  fs::remove_all(dir);
}

TEST(Fp8Checkpoint, OtherQuantMethodIsRefusedAtLoad) {
  json cfg = fixture_config("channel");
  cfg["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}};
  const std::string dir = copy_fixture("channel", "", cfg);
  auto m = load_model(dir);
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(m.status().message().find("quant_method 'gptq'"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace llmserve
