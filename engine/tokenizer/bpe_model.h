// The BPE merge loop shared by both tokenizer kinds. A word (already in vocab alphabet: GPT-2
// byte-mapped chars or "▁"-escaped text) starts as one symbol per UTF-8 character; adjacent pairs
// are merged best-first (lowest merge rank, or highest SentencePiece score of the merged piece),
// ties going to the leftmost pair, with a heap over a linked list of symbols: O(n log n) time,
// 16 bytes per character for the symbols plus 8 per candidate pair in the heap.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

class BpeModel {
 public:
  struct Options {
    bool merge_by_score = false;  // SentencePiece: merge any pair whose text is a normal piece
    bool byte_fallback = false;   // unknown chars become <0xNN> tokens
    bool use_unk = false;         // unknown chars become unk_id (otherwise they are dropped,
                                  // as HF byte-level BPE without an unk_token does)
    bool fuse_unk = false;        // consecutive unknowns become one unk id
    bool ignore_merges = false;   // a word that is itself a token is emitted whole (Llama-3)
  };

  // Builds the lookup tables. spec.tokens must outlive the model (views are kept).
  static Result<BpeModel> create(const TokenizerSpec& spec, Options options);

  // Appends the ids of one word to out.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  int32_t find(std::string_view token) const {
    auto it = token_to_id_.find(token);
    return it == token_to_id_.end() ? -1 : it->second;
  }

 private:
  struct Merge {
    int32_t rank;
    int32_t id;
  };
  struct Symbol {
    int32_t id;  // -1: a character that is not in the vocab; kMerged: merged into its left
    int32_t prev, next;
    uint32_t start;  // byte offset in the word; a symbol ends where the next one starts
  };
  // The pair (a, a.next) if it merges: `priority` (lower merges first: the merge rank, or the
  // order-preserving bits of -score) and the merged id. b_end: the byte where a.next ends.
  bool lookup_pair(std::string_view word, const Symbol& a, const Symbol& b, uint32_t b_end,
                   uint32_t& priority, int32_t& id) const;
  // Byte fallback or unk for one unknown character; true when it became unk.
  bool emit_unknown(std::string_view chars, bool after_unk, std::vector<int32_t>& out) const;

  Options options_;
  std::unordered_map<std::string_view, int32_t> token_to_id_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) -> merge
  const std::vector<float>* scores_ = nullptr;
  std::vector<uint8_t> mergeable_;  // SentencePiece mode: 1 for normal pieces
  int32_t byte_ids_[256];
  int32_t unk_id_ = -1;
};

}  // namespace llmserve
