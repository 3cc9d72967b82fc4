#include "engine/tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>

#include "engine/tokenizer/utf8.h"

namespace llmserve {

Result<BpeModel> BpeModel::create(const TokenizerSpec& spec, Options options) {
  BpeModel m;
  m.options_ = options;
  m.unk_id_ = spec.unk_id;
  const auto n = static_cast<int32_t>(spec.tokens.size());
  m.token_to_id_.reserve(spec.tokens.size() * 2);
  for (int32_t i = 0; i < n; ++i) m.token_to_id_.emplace(spec.tokens[i], i);  // first wins
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    m.byte_ids_[b] = m.find(name);
  }
  if (options.merge_by_score) {
    if (spec.scores.size() != spec.tokens.size()) {
      return invalid_argument("SentencePiece tokenizer needs one score per token");
    }
    m.scores_ = &spec.scores;
    m.mergeable_.assign(spec.tokens.size(), 1);
    for (size_t i = 0; i < spec.token_types.size() && i < spec.tokens.size(); ++i) {
      m.mergeable_[i] = spec.token_types[i] == TokenType::kNormal ? 1 : 0;
    }
    return m;
  }
  m.merges_.reserve(spec.merges.size() * 2);
  for (size_t r = 0; r < spec.merges.size(); ++r) {
    const auto& [a, b] = spec.merges[r];
    const int32_t ia = m.find(a), ib = m.find(b);
    const int32_t merged = m.find(a + b);
    if (ia < 0 || ib < 0 || merged < 0) {
      return invalid_argument("BPE merge " + std::to_string(r) + " ('" + a + "' '" + b +
                              "') uses a token that is not in the vocab");
    }
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(ia)) << 32) | static_cast<uint32_t>(ib);
    m.merges_.try_emplace(key, Merge{static_cast<int32_t>(r), merged});  // first rank wins
  }
  return m;
}

namespace {

// A float as a uint32 with the same order (-0 and +0 equal), so that scores pack into a key.
uint32_t ordered_bits(float f) {
  if (f == 0.0f) f = 0.0f;
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof(bits));
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

}  // namespace

bool BpeModel::lookup_pair(std::string_view word, const Symbol& a, const Symbol& b, uint32_t b_end,
                           uint32_t& priority, int32_t& id) const {
  if (a.id < 0 || b.id < 0) return false;
  if (options_.merge_by_score) {
    const int32_t merged = find(word.substr(a.start, b_end - a.start));
    if (merged < 0 || !mergeable_[merged]) return false;
    priority = ordered_bits(-(*scores_)[merged]);
    id = merged;
    return true;
  }
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(a.id)) << 32) | static_cast<uint32_t>(b.id);
  auto it = merges_.find(key);
  if (it == merges_.end()) return false;
  priority = static_cast<uint32_t>(it->second.rank);
  id = it->second.id;
  return true;
}

bool BpeModel::emit_unknown(std::string_view chars, bool after_unk,
                            std::vector<int32_t>& out) const {
  if (options_.byte_fallback) {
    bool all = true;
    for (char c : chars) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
    if (all) {
      for (char c : chars) out.push_back(byte_ids_[static_cast<uint8_t>(c)]);
      return false;
    }
  }
  if (!options_.use_unk || unk_id_ < 0) return false;
  if (!(options_.fuse_unk && after_unk)) out.push_back(unk_id_);
  return true;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    const int32_t whole = find(word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  constexpr int32_t kMerged = -2;
  const auto word_end = static_cast<uint32_t>(word.size());
  std::vector<Symbol> syms;
  size_t num_chars = 0;  // lead bytes: the symbol count of valid UTF-8
  for (char c : word) num_chars += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  syms.reserve(num_chars);
  for (size_t pos = 0; pos < word.size();) {
    size_t len = utf8_sequence_length(word, pos);
    if (len == 0) len = 1;
    const int32_t id = find(word.substr(pos, len));
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({id, idx - 1, idx + 1, static_cast<uint32_t>(pos)});
    pos += len;
  }
  syms.back().next = -1;
  auto end_of = [&](const Symbol& s) { return s.next >= 0 ? syms[s.next].start : word_end; };

  // A candidate is (priority << 32 | left): the heap's order is the merge order (best priority,
  // then leftmost). It carries no ids: when popped it is checked against the pair that stands
  // at `left` now. A pair at one position is mergeable with one key during one stretch of time
  // only (both of its symbols only grow), so a key that matches now is the live candidate.
  auto pair_key = [&](int32_t left, uint32_t& priority, int32_t& merged) {
    if (left < 0) return false;
    const Symbol& l = syms[left];
    if (l.next < 0) return false;
    const Symbol& r = syms[l.next];
    return lookup_pair(word, l, r, end_of(r), priority, merged);
  };
  auto key_of = [](uint32_t priority, int32_t left) {
    return (static_cast<uint64_t>(priority) << 32) | static_cast<uint32_t>(left);
  };
  std::vector<uint64_t> heap;
  heap.reserve(syms.size());
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) {
    uint32_t priority = 0;
    int32_t merged = -1;
    if (pair_key(i, priority, merged)) heap.push_back(key_of(priority, i));
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  auto push = [&](int32_t left) {
    uint32_t priority = 0;
    int32_t merged = -1;
    if (!pair_key(left, priority, merged)) return;
    heap.push_back(key_of(priority, left));
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const uint64_t key = heap.back();
    heap.pop_back();
    const auto left = static_cast<int32_t>(key & 0xFFFFFFFFu);
    uint32_t priority = 0;
    int32_t merged = -1;
    if (!pair_key(left, priority, merged) || priority != static_cast<uint32_t>(key >> 32)) {
      continue;  // stale: the pair at `left` changed since this key was pushed
    }
    Symbol& l = syms[left];
    Symbol& r = syms[l.next];
    l.id = merged;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = left;
    r.id = kMerged;
    push(l.prev);
    push(left);
  }
  bool after_unk = false;
  for (int32_t i = 0; i >= 0; i = syms[i].next) {
    const Symbol& s = syms[i];
    if (s.id >= 0) {
      out.push_back(s.id);
      after_unk = false;
    } else {
      after_unk = emit_unknown(word.substr(s.start, end_of(s) - s.start), after_unk, out);
    }
  }
}

}  // namespace llmserve
