// The tokenizer files GetTokenizer serves for a GGUF model (server/common/hf_tokenizer_export.h).
// SentencePiece: the export of the fixture's tokenizer.gguf equals the Hugging Face tokenizer.json
// it was made beside (tests/reference/make_tokenizer_fixtures.py), whose encodings are the
// spm_ids.json oracle: same vocabulary, merges in the same order, normalizer, decoder, special
// tokens and BOS rule. (Byte-level exports are checked with HF `tokenizers` itself in
// tests/routers/test_smg_grpc.py.)
#include "server/common/hf_tokenizer_export.h"

#include <gtest/gtest.h>

#include "engine/tokenizer/load_tokenizer.h"
#include "tests/unit/tokenizer/tokenizer_fixtures.h"

namespace llmserve {
namespace {

nlohmann::json file_json(const std::vector<ExportedFile>& files, const std::string& name) {
  for (const auto& f : files) {
    if (f.name == name) return nlohmann::json::parse(f.bytes);
  }
  ADD_FAILURE() << name << " was not exported";
  return nullptr;
}

TEST(HfTokenizerExport, SentencePieceGgufEqualsTheHuggingFaceTokenizer) {
  auto spec = load_tokenizer_spec(testing::fixture_path("spm/tokenizer.gguf"));
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  auto files = export_hf_tokenizer(*spec, HfExportOptions{});
  ASSERT_TRUE(files.is_ok()) << files.status().to_string();
  const nlohmann::json got = file_json(*files, "tokenizer.json");
  const nlohmann::json want = testing::load_json("spm/tokenizer.json");
  EXPECT_EQ(got["model"]["vocab"], want["model"]["vocab"]);
  ASSERT_EQ(got["model"]["merges"].size(), want["model"]["merges"].size());
  EXPECT_EQ(got["model"]["merges"], want["model"]["merges"]);
  for (const char* key : {"unk_token", "fuse_unk", "byte_fallback", "type"}) {
    EXPECT_EQ(got["model"][key], want["model"][key]) << key;
  }
  for (const char* key :
       {"normalizer", "pre_tokenizer", "decoder", "post_processor", "added_tokens"}) {
    EXPECT_EQ(got[key], want[key]) << key;
  }
  const nlohmann::json config = file_json(*files, "tokenizer_config.json");
  const nlohmann::json want_config = testing::load_json("spm/tokenizer_config.json");
  for (const char* key : {"bos_token", "eos_token", "unk_token", "add_bos_token"}) {
    EXPECT_EQ(config[key], want_config[key]) << key;
  }
  EXPECT_EQ(file_json(*files, "generation_config.json")["eos_token_id"], 2);
}

// WordPiece: the export of the BERT GGUF (tests/reference/make_bert_fixtures.py) equals the
// tokenizer.json HF wrote beside it: vocab ("##" pieces back from llama.cpp's phantom spaces),
// WordPiece settings, BertPreTokenizer, decoder, special tokens, [CLS] $A [SEP].
TEST(HfTokenizerExport, WordPieceGgufEqualsTheHuggingFaceTokenizer) {
  auto spec = load_tokenizer_spec(testing::fixture_path("../tiny_bert/model.gguf"));
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  auto files = export_hf_tokenizer(*spec, HfExportOptions{});
  ASSERT_TRUE(files.is_ok()) << files.status().to_string();
  const nlohmann::json got = file_json(*files, "tokenizer.json");
  const nlohmann::json want = testing::load_json("../tiny_bert/tokenizer.json");
  for (const char* key :
       {"type", "vocab", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word"}) {
    EXPECT_EQ(got["model"][key], want["model"][key]) << key;
  }
  for (const char* key : {"pre_tokenizer", "decoder", "added_tokens"}) {
    EXPECT_EQ(got[key], want[key]) << key;
  }
  for (const char* key : {"type", "clean_text", "handle_chinese_chars", "lowercase"}) {
    EXPECT_EQ(got["normalizer"][key], want["normalizer"][key]) << key;
  }
  EXPECT_EQ(got["normalizer"]["strip_accents"], true);  // HF's null: as lowercase
  EXPECT_EQ(got["post_processor"]["single"], want["post_processor"]["single"]);
}

TEST(HfTokenizerExport, UnknownByteLevelPreTokenizerIsFailedPrecondition) {
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kByteLevelBpe;
  spec.tokens = {"a", "b"};
  spec.pre = "no-such-pre-tokenizer";
  auto files = export_hf_tokenizer(spec, HfExportOptions{});
  EXPECT_EQ(files.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(files.status().message().find("no-such-pre-tokenizer"), std::string::npos);
}

}  // namespace
}  // namespace llmserve
