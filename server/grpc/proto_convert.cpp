#include "server/grpc/proto_convert.h"

#include "engine/tokenizer/utf8.h"

namespace llmserve {

void fill_logprobs(const std::vector<TokenLogprob>& lps, const Tokenizer& tok,
                   google::protobuf::RepeatedPtrField<v1::TokenLogprob>* out) {
  for (const auto& lp : lps) {
    v1::TokenLogprob* p = out->Add();
    p->set_token_id(lp.token_id);
    p->set_token(utf8_sanitize(tok.token_bytes(lp.token_id)));
    p->set_logprob(lp.logprob);
    p->set_rank(lp.rank);
    for (const auto& t : lp.top) {
      v1::TopLogprob* q = p->add_top_logprobs();
      q->set_token_id(t.token_id);
      q->set_token(utf8_sanitize(tok.token_bytes(t.token_id)));
      q->set_logprob(t.logprob);
    }
  }
}

void fill_usage(const Usage& u, v1::Usage* out) {
  out->set_prompt_tokens(u.prompt_tokens);
  out->set_completion_tokens(u.completion_tokens);
  out->set_total_tokens(u.prompt_tokens + u.completion_tokens);
  out->set_cached_prompt_tokens(u.cached_prompt_tokens);
}

}  // namespace llmserve
