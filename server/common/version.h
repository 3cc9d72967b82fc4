// The llmserve version string reported by GET /version and `llmserve --version`.
#pragma once

namespace llmserve {

inline constexpr const char* kLlmserveVersion = "0.1.0";

}  // namespace llmserve
