// Runs one piece of work in a forked child process and returns the bytes it produced, so that a
// compile which cannot be interrupted in-process (xgrammar has no cancellation) can still be
// stopped: at its time budget, when nobody waits for it any more, or at shutdown. The child
// shares the parent's memory copy-on-write (the tokenizer tables are not rebuilt), holds none of
// its sockets or files, starts no threads, and its address space is capped, so what a compile
// allocates is given back when it exits.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace llmserve {

enum class ChildEnd {
  kDone,       // the work returned; `output` holds its bytes
  kTimedOut,   // the deadline passed; the child was killed
  kCancelled,  // cancelled() turned true; the child was killed
  kOutOfMemory,
  kFailed,  // the child died or could not be started; `detail` says how
};

struct ChildResult {
  ChildEnd end = ChildEnd::kFailed;
  std::string output;
  std::string detail;
};

// False in AddressSanitizer / ThreadSanitizer builds: their allocators (GCC 12's libsanitizer)
// are not fork-safe, so a child forked while another thread allocates can hang. There, callers
// run the work in-process instead, without a time budget or cancellation.
bool child_processes_available();

// `work` runs in the child only; it must not touch locks another thread of this process may
// hold (no logging). cancelled() is polled in the parent about every `poll` interval.
// extra_memory_bytes: the child's address space may grow this much past the parent's.
ChildResult run_in_child_process(const std::function<std::string()>& work,
                                 std::chrono::steady_clock::time_point deadline,
                                 const std::function<bool()>& cancelled, int64_t extra_memory_bytes,
                                 std::chrono::milliseconds poll = std::chrono::milliseconds(20));

}  // namespace llmserve
