// Flattens the requests of one step into a ForwardBatch (DESIGN §5). Decode entries (one new
// token after at least one computed) go first, as the graph's attention split needs; the
// sampled logits rows keep the callers' entry order. An entry with drafts (speculative
// verification) or rows_as_decodes runs each new token as its own decode row (the batch's
// "request" count grows by its new tokens), so its logits equal those of decoding its tokens
// one step at a time. Buffers are reused across steps: the
// returned batch views them and is valid until the next build().
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/image_spans.h"
#include "engine/core/status.h"
#include "engine/model/forward_batch.h"

namespace llmserve {

struct BatchEntry {
  std::span<const int32_t> tokens;       // every known token of the sequence (prompt + output)
  int32_t num_computed = 0;              // tokens already in the KV cache
  int32_t num_new = 0;                   // tokens[num_computed, num_computed + num_new) run now
  std::span<const int32_t> block_table;  // blocks covering positions [0, num_computed + num_new)
  bool sample = false;                   // return logits for the last new token
  // Drafts after the known tokens: position p >= tokens.size() holds drafts[p - tokens.size()].
  // With drafts every new token is sampled (sample must be true) and runs as a decode row.
  std::span<const int32_t> drafts = {};
  bool rows_as_decodes = false;  // each new token its own decode row; only the last sampled
  // Prompt scoring: the first num_scored new tokens' logits rows come back too, before the
  // sampled row (num_scored < num_new when the entry samples, <= num_new otherwise).
  int32_t num_scored = 0;
  // tokens[0, num_prompt) are the request's prompt, the rest its output: ForwardBatch::prompt_rows.
  // 0 = not told (every row counts as output).
  int32_t num_prompt = 0;

  // Images in the prompt: their rows (in order) and each one's projected features
  // ([span length, image_hidden] f32, image_hidden = the model's hidden size). The new tokens
  // must not split an image (a chunk may begin inside one whose first rows are cached). A batch
  // with image rows sets ForwardBatch::input_embeddings and attend_end.
  std::span<const ImageSpan> image_spans = {};
  std::span<const float* const> image_features = {};
  int64_t image_hidden = 0;

  // A pooling request (engine/pooling): every new row comes back as a hidden state
  // (ForwardBatch::pool_rows); never with drafts, rows_as_decodes or scoring.
  bool pool = false;
  bool expands() const { return rows_as_decodes || !drafts.empty(); }
  int32_t num_sampled() const { return !sample ? 0 : drafts.empty() ? 1 : num_new; }
};

class BatchBuilder {
 public:
  explicit BatchBuilder(int block_size) : block_size_(block_size) {}

  // Errors: an entry with no new tokens, new tokens past `tokens`, or a block table too short.
  Result<ForwardBatch> build(std::span<const BatchEntry> entries);

  // First logits row of entry i of the last build() (its rows are consecutive), or -1 when it
  // does not sample.
  int32_t sample_index(size_t entry) const { return sample_index_[entry]; }
  // First scored logits row of entry i (its num_scored rows come just before its sampled
  // ones), or -1 when it scores none.
  int32_t score_index(size_t entry) const { return score_index_[entry]; }
  // First pool row (index into ForwardBatch::pool_rows) of entry i, or -1 when it does not pool.
  int32_t pool_index(size_t entry) const { return pool_index_[entry]; }

 private:
  int block_size_;
  std::vector<int32_t> token_ids_, positions_, query_start_, seq_lens_, block_tables_;
  std::vector<int32_t> slot_mapping_, sample_rows_, sample_index_, score_index_, first_row_;
  std::vector<int32_t> pool_rows_, pool_index_;
  std::vector<uint8_t> is_prefill_, prompt_rows_;
  std::vector<const float*> input_embeddings_, entry_embeddings_;
  std::vector<int32_t> attend_end_, entry_attend_end_;
  std::vector<size_t> order_;
};

// Blocks first_block, first_block + 1, ... covering num_tokens tokens: the trivial assignment
// `llmserve generate` uses for its one sequence (the engine uses the KV block manager instead).
std::vector<int32_t> contiguous_block_table(int32_t first_block, int64_t num_tokens,
                                            int block_size);

}  // namespace llmserve
