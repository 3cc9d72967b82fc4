// StepLoop's part of the reasoning budget (engine/reasoning): each sample's state, and drafts cut
// where the budget forces a close.
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "engine/step_loop.h"

namespace llmserve {

void StepLoop::truncate_to_budget(uint64_t seq_id, std::vector<int32_t>& drafts) {
  auto it = by_seq_.find(seq_id);
  if (it == by_seq_.end() || drafts.empty()) return;
  const ReasoningBudgetState* budget = it->second.slot->sampling.reasoning_budget();
  if (budget == nullptr || budget->phase() == ReasoningBudgetState::Phase::kDone) return;
  // A draft other than a forced close could never be accepted: cut there (verification would
  // reject it anyway; this only saves the positions).
  ReasoningBudgetState walk = *budget;
  size_t ok = 0;
  for (; ok < drafts.size(); ++ok) {
    const int32_t forced = walk.forced_token();
    if (forced >= 0 && drafts[ok] != forced) break;
    walk.append(drafts[ok]);
  }
  drafts.resize(ok);
}

std::optional<ReasoningBudgetState> StepLoop::budget_state(const ReasoningBudget& budget) {
  if (!budget.active()) return std::nullopt;
  if (token_bytes_ == nullptr) {  // once, on the first request with a budget
    auto table = std::make_shared<TokenBytesTable>();
    const int32_t vocab = tokenizer_.vocab_size();
    table->reserve(static_cast<size_t>(vocab));
    for (int32_t id = 0; id < vocab; ++id) table->push_back(tokenizer_.token_bytes(id));
    token_bytes_ = std::move(table);
  }
  return ReasoningBudgetState(budget,
                              tokenizer_.encode(budget.close, /*add_special=*/false,
                                                /*parse_special=*/true),
                              token_bytes_);
}

}  // namespace llmserve
