#include "engine/reasoning/reasoning_budget.h"

#include <algorithm>
#include <utility>

namespace llmserve {
namespace {

constexpr std::string_view kSpace = " \t\n\r";

}  // namespace

Status ReasoningBudget::validate() const {
  if (max_tokens < -1) {
    return invalid_argument("reasoning budget must be -1 (none) or >= 0, got " +
                            std::to_string(max_tokens));
  }
  if (active() && (open.empty() || close.empty())) {
    return invalid_argument("reasoning budget: the section's open and close markers are empty");
  }
  return Status::ok();
}

ReasoningBudgetState::ReasoningBudgetState(const ReasoningBudget& budget,
                                           std::vector<int32_t> close_ids,
                                           std::shared_ptr<const TokenBytesTable> bytes)
    : budget_(std::max(budget.max_tokens, 0)),
      open_(budget.open),
      close_(budget.close),
      close_ids_(std::move(close_ids)),
      bytes_(std::move(bytes)),
      phase_(Phase::kMayOpen) {
  if (close_ids_.empty()) {
    phase_ = Phase::kDone;  // nothing could be forced
    return;
  }
  if (budget.starts_inside) enter_inside();
}

int32_t ReasoningBudgetState::forced_token() const {
  return phase_ == Phase::kForcing ? close_ids_[forced_next_] : -1;
}

std::string_view ReasoningBudgetState::bytes_of(int32_t token) const {
  if (bytes_ == nullptr || token < 0 || static_cast<size_t>(token) >= bytes_->size()) return {};
  return (*bytes_)[static_cast<size_t>(token)];
}

void ReasoningBudgetState::enter_inside() {
  phase_ = Phase::kInside;
  count_ = 0;
  recent_.clear();
  if (count_ >= budget_) start_forcing();
}

void ReasoningBudgetState::start_forcing() {
  phase_ = Phase::kForcing;
  forced_next_ = 0;
  // The model may have begun the close marker itself (a multi-token close): force the rest.
  for (size_t j = std::min(recent_.size(), close_ids_.size() - 1); j > 0; --j) {
    if (std::equal(close_ids_.begin(), close_ids_.begin() + static_cast<std::ptrdiff_t>(j),
                   recent_.end() - static_cast<std::ptrdiff_t>(j))) {
      forced_next_ = j;
      break;
    }
  }
}

void ReasoningBudgetState::append(int32_t token) {
  switch (phase_) {
    case Phase::kDone:
      return;
    case Phase::kMayOpen: {
      text_ += bytes_of(token);
      const size_t first = text_.find_first_not_of(kSpace);
      if (first == std::string::npos) return;
      const std::string_view rest = std::string_view(text_).substr(first);
      if (rest.substr(0, open_.size()) == open_) {
        // The token that completes the open marker is not a reasoning token; text after the
        // marker in the same token may begin the close.
        std::string after(rest.substr(open_.size()));
        enter_inside();
        text_ = std::move(after);
        if (text_.find(close_) != std::string::npos) {
          phase_ = Phase::kDone;
          text_.clear();
        }
        return;
      }
      if (std::string_view(open_).substr(0, rest.size()) != rest) {
        phase_ = Phase::kDone;  // the reply is all content
        text_.clear();
      }
      return;
    }
    case Phase::kInside: {
      ++count_;
      text_ += bytes_of(token);
      if (text_.find(close_) != std::string::npos) {  // the model closed the section itself
        phase_ = Phase::kDone;
        text_.clear();
        return;
      }
      if (text_.size() >= close_.size()) text_.erase(0, text_.size() - (close_.size() - 1));
      recent_.push_back(token);
      if (recent_.size() >= close_ids_.size()) recent_.erase(recent_.begin());
      if (count_ >= budget_) start_forcing();
      return;
    }
    case Phase::kForcing: {
      if (token == close_ids_[forced_next_]) {
        if (++forced_next_ == close_ids_.size()) {
          phase_ = Phase::kDone;
          text_.clear();
        }
        return;
      }
      // Another token came (a grammar that does not allow the close here): the close starts
      // over at the next position unless this token ended the section.
      text_ += bytes_of(token);
      if (text_.find(close_) != std::string::npos) {
        phase_ = Phase::kDone;
        text_.clear();
        return;
      }
      if (text_.size() >= close_.size()) text_.erase(0, text_.size() - (close_.size() - 1));
      forced_next_ = 0;
      return;
    }
  }
}

}  // namespace llmserve
