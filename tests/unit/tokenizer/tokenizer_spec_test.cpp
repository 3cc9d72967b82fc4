// Spec fields read from GGUF / HF files, special-token handling and decoding details.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/tokenizer/load_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/tokenizer/tokenizer_fixtures.h"

namespace llmserve {
namespace {

bool contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(TokenizerSpec, SmolLM2FromGguf) {
  if (testing::test_model() == nullptr) GTEST_SKIP() << "LLMSERVE_TEST_MODEL is not set";
  auto spec = load_tokenizer_spec(testing::test_model());
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_EQ(spec->kind, TokenizerKind::kByteLevelBpe);
  EXPECT_EQ(spec->tokens.size(), 49152u);
  EXPECT_EQ(spec->merges.size(), 48900u);
  EXPECT_EQ(spec->pre, "smollm");
  EXPECT_EQ(spec->bos_id, 1);
  EXPECT_EQ(spec->eos_id, 2);
  EXPECT_FALSE(spec->add_bos);
  EXPECT_NE(spec->chat_template.find("<|im_start|>"), std::string::npos);
  EXPECT_TRUE(contains(spec->stop_ids, 2));  // <|im_end|>
  EXPECT_TRUE(contains(spec->stop_ids, 0));  // <|endoftext|>

  auto tok = Tokenizer::create(std::move(*spec));
  ASSERT_TRUE(tok.is_ok());
  const Tokenizer& t = **tok;
  EXPECT_EQ(t.vocab_size(), 49152);
  EXPECT_EQ(t.token_text(1), "<|im_start|>");
  EXPECT_TRUE(t.is_special(1));
  const auto ids = t.encode("<|im_start|>user\nHi there<|im_end|>\n");
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(t.decode(ids, /*skip_special=*/true), "user\nHi there\n");
  EXPECT_EQ(t.decode(ids), "<|im_start|>user\nHi there<|im_end|>\n");
  // Per-token bytes concatenate to the sequence decode.
  std::string joined;
  for (int32_t id : t.encode(" héllo wörld 😀")) joined += t.token_bytes(id);
  EXPECT_EQ(joined, " héllo wörld 😀");
  EXPECT_EQ(t.token_text(-1), "");
  EXPECT_EQ(t.token_bytes(49152), "");
}

TEST(TokenizerSpec, SentencePieceFromHfDir) {
  auto spec = tokenizer_spec_from_hf_dir(testing::fixture_path("spm"));
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_EQ(spec->kind, TokenizerKind::kSentencePieceBpe);
  EXPECT_EQ(spec->bos_id, 1);
  EXPECT_EQ(spec->eos_id, 2);
  EXPECT_EQ(spec->unk_id, 0);
  EXPECT_TRUE(spec->add_bos);
  EXPECT_FALSE(spec->add_eos);
  EXPECT_TRUE(spec->add_space_prefix);
  EXPECT_FALSE(spec->space_prefix_first_only);
  EXPECT_EQ(spec->stop_ids, std::vector<int32_t>{2});
  EXPECT_NE(spec->chat_template.find("[INST]"), std::string::npos);
  EXPECT_EQ(spec->token_types[0x41 + 3], TokenType::kByte);  // <0x41>
}

TEST(TokenizerSpec, SentencePieceGgufAndHfAgreeOnSpecialIds) {
  auto a = load_tokenizer_spec(testing::fixture_path("spm"));
  auto b = load_tokenizer_spec(testing::fixture_path("spm/tokenizer.gguf"));
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->tokens, b->tokens);
  EXPECT_EQ(a->bos_id, b->bos_id);
  EXPECT_EQ(a->eos_id, b->eos_id);
  EXPECT_EQ(a->add_bos, b->add_bos);
}

TEST(TokenizerSpec, SentencePieceDecodeDetails) {
  auto tok = load_tokenizer(testing::fixture_path("spm"));
  ASSERT_TRUE(tok.is_ok());
  const Tokenizer& t = **tok;
  const auto ids = t.encode("hello world");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);  // BOS
  EXPECT_EQ(t.encode("hello", false).front(), t.encode("hello").at(1));
  EXPECT_EQ(t.decode(ids, true), "hello world");  // leading "▁" stripped once
  EXPECT_EQ(t.decode(ids, false), "<s> hello world");
  // Byte fallback: a character outside the tiny vocab becomes <0xNN> tokens and decodes back.
  const auto emoji = t.encode("🦀", false);
  ASSERT_GE(emoji.size(), 4u);
  EXPECT_EQ(t.token_text(emoji.back()).substr(0, 3), "<0x");
  EXPECT_EQ(t.decode(emoji), "🦀");
  EXPECT_EQ(t.token_bytes(emoji.back()).size(), 1u);
}

TEST(TokenizerSpec, AddEosAndNoSpecialParsing) {
  auto spec = tokenizer_spec_from_hf_dir(testing::fixture_path("bytelevel"));
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  EXPECT_TRUE(spec->add_bos);
  spec->add_eos = true;
  const int32_t eos = spec->eos_id;
  const int32_t bos = spec->bos_id;
  auto tok = Tokenizer::create(std::move(*spec));
  ASSERT_TRUE(tok.is_ok());
  const auto ids = (*tok)->encode("hi<|eot_id|>");
  EXPECT_EQ(ids.front(), bos);
  EXPECT_EQ(ids.back(), eos);
  EXPECT_EQ(ids[ids.size() - 2], eos);  // the special in the text
  const auto raw = (*tok)->encode("hi<|eot_id|>", false, false);
  EXPECT_FALSE(contains(raw, eos));
  EXPECT_EQ((*tok)->decode(raw), "hi<|eot_id|>");
}

TEST(TokenizerSpec, BadInputsGiveErrors) {
  EXPECT_EQ(tokenizer_spec_from_hf_dir("/nonexistent").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(load_tokenizer("/nonexistent/model.gguf").status().code(), StatusCode::kNotFound);
  TokenizerSpec empty;
  EXPECT_FALSE(Tokenizer::create(empty).is_ok());
  TokenizerSpec bad_merge;
  bad_merge.tokens = {"a", "b"};
  bad_merge.merges = {{"a", "b"}};  // "ab" is not a token
  EXPECT_FALSE(Tokenizer::create(bad_merge).is_ok());
  TokenizerSpec bad_pre;
  bad_pre.tokens = {"a"};
  bad_pre.pre = "mystery";
  EXPECT_EQ(Tokenizer::create(bad_pre).status().code(), StatusCode::kUnimplemented);
}

TEST(TokenizerSpec, LongestSpecialTokenWins) {
  TokenizerSpec spec;
  spec.tokens = {"<a>", "<a>b", "x", "<", ">", "a", "b"};
  spec.token_types = {TokenType::kControl, TokenType::kUserDefined, TokenType::kNormal,
                      TokenType::kNormal,  TokenType::kNormal,      TokenType::kNormal,
                      TokenType::kNormal};
  auto tok = Tokenizer::create(spec);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("x<a>bx<a>"), (std::vector<int32_t>{2, 1, 2, 0}));
  EXPECT_TRUE((*tok)->is_special(0));
  EXPECT_FALSE((*tok)->is_special(1));  // user-defined tokens are kept by skip_special
  EXPECT_EQ((*tok)->decode(std::vector<int32_t>{2, 1, 0}, true), "x<a>b");
}

}  // namespace
}  // namespace llmserve
