// JSON Schema check (engine/grammar/json_schema_check): arbitrary request text, checked before a
// grammar compiles. It must never crash or recurse without bound, and a schema within tight
// limits is within the default ones too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/grammar/json_schema_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  llmserve::SchemaLimits tight;
  tight.max_depth = 4;
  tight.max_nodes = 16;
  const llmserve::Status strict = llmserve::check_json_schema(text, tight);
  const llmserve::Status relaxed = llmserve::check_json_schema(text, {});
  if (strict.is_ok() && !relaxed.is_ok()) std::abort();
  if (!relaxed.is_ok() && relaxed.code() != llmserve::StatusCode::kInvalidArgument) std::abort();
  return 0;
}
