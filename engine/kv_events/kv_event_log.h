// KvEventLog: the KV events of the current engine step, recorded by the BlockPool as its prefix
// map changes. Engine thread only (it lives inside the BlockPool); take() hands the step's events
// to the caller, who publishes them (KvEventBus). Disabled (the default), every call is one
// branch and nothing is kept.
//
// Consecutive records merge the way vLLM groups them: a stored block whose parent is the last
// hash of the preceding BlockStored extends it (one chain per event); consecutive removals share
// one BlockRemoved.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv_events/kv_event.h"

namespace llmserve {

class KvEventLog {
 public:
  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool enabled() const { return enabled_; }

  // A full block entered the prefix cache. tokens.size() == block_size; parent is nullopt for a
  // request's first block.
  // medium: the tier ("" = the engine's own cache; see KvBlockStored::medium).
  void stored(uint64_t hash, std::optional<uint64_t> parent, std::span<const int32_t> tokens,
              int32_t block_size, const std::string& medium = {});
  // A block's hash left the prefix cache (or the tier medium).
  void removed(uint64_t hash, const std::string& medium = {});
  // Every cached hash left the prefix cache.
  void cleared();

  bool empty() const { return events_.empty(); }
  // The events recorded since the last take(), oldest first; the log is empty afterwards.
  std::vector<KvEvent> take();

 private:
  bool enabled_ = false;
  std::vector<KvEvent> events_;
};

}  // namespace llmserve
