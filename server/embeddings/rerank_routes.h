// POST /v1/rerank, /v2/rerank, /rerank (the Cohere / Jina shape vLLM serves) and vLLM's
// POST /score, answered with an embedding model as vLLM's score API does: the cosine of the
// query's (text_1's) and each document's (text_2's) vectors, all computed as pooling requests in
// one batch (embedding_job.h). Errors in OpenAI's shape.
//
// rerank: {"query", "documents": [string | {"text"}], "top_n" (0 / absent = all),
// "return_documents" (default true)} -> {"id", "model", "results": [{"index",
// "relevance_score", "document": {"text"}}] by descending score, "usage": {"total_tokens"}}.
// score: {"text_1": string | [string], "text_2": string | [string]} (one text_1 against every
// text_2, or pairs of equal-length lists) -> {"id", "object": "list", "model", "data":
// [{"index", "object": "score", "score"}], "usage": {"prompt_tokens", "total_tokens"}}.
#pragma once

#include "server/http/http_api.h"

namespace llmserve {

HttpApi rerank_api();

}  // namespace llmserve
