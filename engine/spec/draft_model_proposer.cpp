#include "engine/spec/draft_model_proposer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "engine/tokenizer/load_tokenizer.h"

namespace llmserve {
namespace {

Status check_same_vocab(const TokenizerSpec& draft, const TokenizerSpec& target,
                        const std::string& path) {
  const size_t n = std::min(draft.tokens.size(), target.tokens.size());
  for (size_t id = 0; id < n; ++id) {
    if (draft.tokens[id] != target.tokens[id]) {
      return invalid_argument("speculative.draft_model " + path +
                              ": its vocabulary differs from the target's at token id " +
                              std::to_string(id) + " ('" + draft.tokens[id] + "' vs '" +
                              target.tokens[id] + "')");
    }
  }
  if (draft.tokens.size() != target.tokens.size()) {
    return invalid_argument("speculative.draft_model " + path + ": its vocabulary has " +
                            std::to_string(draft.tokens.size()) + " tokens, the target's " +
                            std::to_string(target.tokens.size()));
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<DraftModelProposer>> DraftModelProposer::create(
    const std::string& path, const Tokenizer& target_tokenizer, const ModelRunnerOptions& target,
    int64_t target_kv_tokens, int32_t num_tokens) {
  if (target.use_cuda) {
    return invalid_argument(
        "speculative.method draft runs on the CPU backend only; use speculative.method ngram "
        "with engine.device cuda");
  }
  if (num_tokens < 1) return invalid_argument("speculative.num_tokens must be >= 1");
  LLMSERVE_ASSIGN_OR_RETURN(TokenizerSpec spec, load_tokenizer_spec(path));
  LLMSERVE_RETURN_IF_ERROR(check_same_vocab(spec, target_tokenizer.spec(), path));
  LLMSERVE_ASSIGN_OR_RETURN(auto model, load_model(path));
  ModelRunnerOptions o = target;
  o.model_path = path;
  o.max_scored_rows_per_step = 0;  // drafts never score a prompt
  const int64_t blocks = (target_kv_tokens + o.block_size - 1) / o.block_size + 1;
  o.kv_cache_bytes = static_cast<uint64_t>(blocks) * static_cast<uint64_t>(o.block_size) *
                     model->config().kv_bytes_per_token(o.kv_cache_dtype);
  LLMSERVE_ASSIGN_OR_RETURN(auto runner, ModelRunner::create(std::move(model), o));
  const auto num_blocks = static_cast<int32_t>(std::min<int64_t>(runner->num_blocks(), INT32_MAX));
  if (num_blocks < 2) return invalid_argument("speculative.draft_model: no room for KV blocks");
  auto p = std::unique_ptr<DraftModelProposer>(new DraftModelProposer(
      std::move(runner), KvCacheManager(num_blocks, o.block_size, /*enable_prefix_caching=*/false),
      num_tokens));
  p->vocab_limit_ = static_cast<int32_t>(
      std::min<int64_t>(p->runner_->config().vocab_size,
                        static_cast<int64_t>(target_tokenizer.spec().tokens.size())));
  return p;
}

DraftModelProposer::DraftModelProposer(std::unique_ptr<ModelRunner> runner, KvCacheManager kv,
                                       int32_t num_tokens)
    : runner_(std::move(runner)),
      kv_(std::move(kv)),
      builder_(runner_->block_size()),
      num_tokens_(num_tokens),
      vocab_limit_(static_cast<int32_t>(runner_->config().vocab_size)) {}

void DraftModelProposer::release(uint64_t seq_id) {
  auto it = seqs_.find(seq_id);
  if (it == seqs_.end()) return;
  kv_.free(it->second.kv);
  seqs_.erase(it);
}

int64_t DraftModelProposer::num_blocks_held() const {
  int64_t n = 0;
  for (const auto& [id, q] : seqs_) n += static_cast<int64_t>(q.kv.kv.block_ids.size());
  return n;
}

int32_t DraftModelProposer::argmax(std::span<const float> row) const {
  int32_t best = -1;
  float best_v = -INFINITY;
  const auto n = std::min<size_t>(row.size(), static_cast<size_t>(vocab_limit_));
  for (size_t i = 0; i < n; ++i) {
    if (row[i] > best_v) {
      best_v = row[i];
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

Status DraftModelProposer::run_round(std::vector<Draft>& drafts) {
  Result<ForwardBatch> batch = builder_.build(entries_);
  Result<std::span<const float>> logits =
      batch.is_ok() ? runner_->execute(*batch) : Result<std::span<const float>>(batch.status());
  if (!logits.is_ok()) {
    for (Seq* q : entry_seq_) release(q->kv.id);  // their caches are in doubt
    return logits.status();
  }
  const auto v = static_cast<size_t>(runner_->config().vocab_size);
  for (size_t e = 0; e < entries_.size(); ++e) {
    entry_seq_[e]->kv.num_computed_tokens += entries_[e].num_new;
    const int32_t row = builder_.sample_index(e);
    if (row < 0) continue;
    const int32_t token = argmax(logits->subspan(static_cast<size_t>(row) * v, v));
    if (token >= 0) drafts[owner_[e]].tokens.push_back(token);
  }
  return Status::ok();
}

Status DraftModelProposer::propose(std::span<const DraftRequest> requests,
                                   std::vector<Draft>& drafts) {
  drafts.assign(requests.size(), {});
  std::vector<Seq*> seqs(requests.size(), nullptr);
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::span<const int32_t> real = requests[i].tokens;
    if (real.empty() || requests[i].max_drafts < 1) continue;
    Seq& q = seqs_[requests[i].seq_id];
    q.kv.id = requests[i].seq_id;
    // Keep what still agrees with the real tokens; the last real token is always run again so
    // its logits give the first draft.
    const size_t common = static_cast<size_t>(
        std::mismatch(q.tokens.begin(), q.tokens.end(), real.begin(), real.end()).first -
        q.tokens.begin());
    const size_t keep = std::min(common, real.size() - 1);
    q.tokens.resize(keep);
    q.kv.num_computed_tokens = static_cast<int32_t>(keep);
    seqs[i] = &q;
  }
  // Catch up on the real tokens, in chunks of the draft's step budget.
  for (bool pending = true; pending;) {
    pending = false;
    entries_.clear();
    owner_.clear();
    entry_seq_.clear();
    int64_t left = runner_->max_tokens_per_step();
    for (size_t i = 0; i < requests.size(); ++i) {
      Seq* q = seqs[i];
      if (q == nullptr) continue;
      const std::span<const int32_t> real = requests[i].tokens;
      const auto todo = static_cast<int32_t>(real.size() - q->tokens.size());
      if (todo <= 0) continue;
      if (left <= 0) {
        pending = true;
        continue;
      }
      const auto n = static_cast<int32_t>(std::min<int64_t>(todo, left));
      if (!kv_.allocate(q->kv, n)) {
        release(requests[i].seq_id);
        seqs[i] = nullptr;
        continue;
      }
      const size_t from = q->tokens.size();
      q->tokens.insert(q->tokens.end(), real.begin() + static_cast<std::ptrdiff_t>(from),
                       real.begin() + static_cast<std::ptrdiff_t>(from + static_cast<size_t>(n)));
      BatchEntry e{q->tokens, q->kv.num_computed_tokens, n, q->kv.kv.block_ids, n == todo};
      // The few tokens after a check run as decode rows: the same numerics as the target's.
      e.rows_as_decodes = n == todo && n <= num_tokens_ + 1;
      entries_.push_back(e);
      owner_.push_back(i);
      entry_seq_.push_back(q);
      left -= n;
      pending = pending || n < todo;
    }
    if (entries_.empty()) break;
    LLMSERVE_RETURN_IF_ERROR(run_round(drafts));
  }
  // One-token draft steps for everyone still drafting.
  for (int32_t round = 1; round < num_tokens_; ++round) {
    entries_.clear();
    owner_.clear();
    entry_seq_.clear();
    for (size_t i = 0; i < requests.size(); ++i) {
      Seq* q = seqs[i];
      if (q == nullptr || drafts[i].tokens.size() != static_cast<size_t>(round) ||
          round >= requests[i].max_drafts || !seqs_.contains(requests[i].seq_id)) {
        continue;
      }
      if (!kv_.allocate(q->kv, 1)) continue;
      q->tokens.push_back(drafts[i].tokens.back());
      entries_.push_back(BatchEntry{q->tokens, q->kv.num_computed_tokens, 1, q->kv.kv.block_ids,
                                    /*sample=*/true});
      owner_.push_back(i);
      entry_seq_.push_back(q);
    }
    if (entries_.empty()) break;
    LLMSERVE_RETURN_IF_ERROR(run_round(drafts));
  }
  return Status::ok();
}

}  // namespace llmserve
