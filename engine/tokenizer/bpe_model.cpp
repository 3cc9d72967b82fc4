#include "engine/tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

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

bool BpeModel::lookup_pair(std::string_view word, const Symbol& a, const Symbol& b,
                           double& priority, int32_t& id) const {
  if (a.id < 0 || b.id < 0) return false;
  if (options_.merge_by_score) {
    const int32_t merged = find(word.substr(a.start, a.len + b.len));
    if (merged < 0 || !mergeable_[merged]) return false;
    priority = -static_cast<double>((*scores_)[merged]);
    id = merged;
    return true;
  }
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(a.id)) << 32) | static_cast<uint32_t>(b.id);
  auto it = merges_.find(key);
  if (it == merges_.end()) return false;
  priority = it->second.rank;
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
  std::vector<Symbol> syms;
  syms.reserve(word.size());
  for (size_t pos = 0; pos < word.size();) {
    size_t len = utf8_sequence_length(word, pos);
    if (len == 0) len = 1;
    const int32_t id = find(word.substr(pos, len));
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({id, idx - 1, idx + 1, static_cast<uint32_t>(pos), static_cast<uint32_t>(len)});
    pos += len;
  }
  syms.back().next = -1;

  struct Candidate {
    double priority;
    int32_t left, right, left_id, right_id, merged;
    bool operator>(const Candidate& o) const {
      return priority != o.priority ? priority > o.priority : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = syms[left].next;
    if (right < 0) return;
    double priority = 0;
    int32_t merged = -1;
    if (lookup_pair(word, syms[left], syms[right], priority, merged)) {
      heap.push({priority, left, right, syms[left].id, syms[right].id, merged});
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) push(i);

  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = syms[c.left];
    if (l.len == 0 || l.id != c.left_id || l.next != c.right) continue;
    Symbol& r = syms[c.right];
    if (r.len == 0 || r.id != c.right_id) continue;
    l.id = c.merged;
    l.len += r.len;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    r.len = 0;
    push(l.prev);
    push(c.left);
  }
  bool after_unk = false;
  for (int32_t i = 0; i >= 0; i = syms[i].next) {
    const Symbol& s = syms[i];
    if (s.id >= 0) {
      out.push_back(s.id);
      after_unk = false;
    } else {
      after_unk = emit_unknown(word.substr(s.start, s.len), after_unk, out);
    }
  }
}

}  // namespace llmserve
