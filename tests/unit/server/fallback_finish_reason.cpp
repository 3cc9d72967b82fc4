// Test-only definition of finish_reason_name, compiled only while the engine lacks
// engine/generate_request.cpp (see CMakeLists.txt).
#include "engine/generate_request.h"

namespace llmserve {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kNone:
      return "none";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kTimeout:
      return "timeout";
    case FinishReason::kError:
      return "error";
  }
  return "unknown";
}

}  // namespace llmserve
