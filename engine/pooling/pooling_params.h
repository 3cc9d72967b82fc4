// What a pooling request asks for (GenerateRequest::pooling): the engine runs its prompt once,
// samples nothing, and answers with one vector (StepOutput::embedding).
#pragma once

#include <cstdint>

namespace llmserve {

struct PoolingParams {
  // 0: the model's full output width; else the leading `dimensions` values (Matryoshka),
  // normalised after the cut when the model normalises. 1 <= dimensions <= Pooler::width().
  int32_t dimensions = 0;
};

}  // namespace llmserve
