// A source of speculative drafts (DESIGN §6): before each step, up to max_drafts tokens to follow
// each decoding request's known tokens. The engine thread owns it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/status.h"

namespace llmserve {

struct DraftRequest {
  uint64_t seq_id = 0;              // the scheduler's request id
  std::span<const int32_t> tokens;  // prompt + outputs so far (non-empty)
  int32_t max_drafts = 0;           // >= 1
};

struct Draft {
  std::vector<int32_t> tokens;
  // Tokens of context the proposal rests on (n-gram: the length of the suffix it matched); 0
  // when the proposer gives no such evidence.
  int32_t match_length = 0;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // drafts[i] gets at most requests[i].max_drafts tokens (empty: no proposal).
  virtual Status propose(std::span<const DraftRequest> requests, std::vector<Draft>& drafts) = 0;
  // True when proposing costs next to nothing (no model): the step loop then asks for the most
  // drafts every step and lets the gate cut each proposal by its match_length. Otherwise the gate
  // decides first and the proposer runs only for the requests it lets draft.
  virtual bool proposes_before_gate() const { return false; }
  // The sequence ended or was preempted: whatever the proposer keeps for it goes.
  virtual void release(uint64_t /*seq_id*/) {}
  // KV blocks the proposer's own cache holds (a draft model's); 0 once every sequence left.
  virtual int64_t num_blocks_held() const { return 0; }
};

}  // namespace llmserve
