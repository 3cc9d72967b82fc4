// Drafts from a second, smaller model with the target's vocabulary (speculative.method draft):
// its own ModelRunner and paged KV cache (as many tokens as the target's), greedy drafting of
// up to k tokens for every requesting sequence in batched steps. Per sequence it remembers the
// tokens its KV holds; before drafting it keeps the longest prefix that still agrees with the
// sequence's real tokens (accepted drafts stay, rejected ones roll back), catches up on the rest
// (a prompt runs as a prefill, the few tokens after a check as decode rows), then runs k - 1
// one-token steps. Engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/kv_cache/kv_cache_manager.h"
#include "engine/request.h"
#include "engine/runner/batch_builder.h"
#include "engine/runner/model_runner.h"
#include "engine/spec/proposer.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

class DraftModelProposer final : public Proposer {
 public:
  // Loads the draft at `path` on the target's backend settings (threads, precision, block size,
  // KV dtype) with room for target_kv_tokens tokens. Errors: a tokenizer that differs from the
  // target's (kInvalidArgument naming the first differing token id), a CUDA target (the draft
  // runs on the CPU backend only), or what loading the model returns.
  static Result<std::unique_ptr<DraftModelProposer>> create(const std::string& path,
                                                            const Tokenizer& target_tokenizer,
                                                            const ModelRunnerOptions& target,
                                                            int64_t target_kv_tokens,
                                                            int32_t num_tokens);

  Status propose(std::span<const DraftRequest> requests, std::vector<Draft>& drafts) override;
  void release(uint64_t seq_id) override;
  int64_t num_blocks_held() const override;

  int32_t num_free_blocks() const { return kv_.num_free_blocks(); }
  int32_t num_usable_blocks() const { return kv_.num_usable_blocks(); }
  size_t num_sequences() const { return seqs_.size(); }

 private:
  struct Seq {
    Request kv;                   // block table and num_computed_tokens of the draft's cache
    std::vector<int32_t> tokens;  // the tokens whose K/V the draft's cache holds, in order
  };

  DraftModelProposer(std::unique_ptr<ModelRunner> runner, KvCacheManager kv, int32_t num_tokens);
  // Runs entries_ and appends each sampled row's greedy token to drafts[owner_[row]].
  Status run_round(std::vector<Draft>& drafts);
  int32_t argmax(std::span<const float> row) const;

  std::unique_ptr<ModelRunner> runner_;
  KvCacheManager kv_;
  BatchBuilder builder_;
  int32_t num_tokens_;
  int32_t vocab_limit_;  // drafts are ids below this (the smaller of the two vocabularies)
  std::unordered_map<uint64_t, Seq> seqs_;
  std::vector<BatchEntry> entries_;
  std::vector<size_t> owner_;  // entries_[i] drafts for requests[owner_[i]]
  std::vector<Seq*> entry_seq_;
};

}  // namespace llmserve
