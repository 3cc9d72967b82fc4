#include "server/common/request_grammar.h"

#include "server/common/structured_output.h"

namespace llmserve {

Status attach_request_grammar(Engine& engine, const GenerationRequest& request,
                              std::optional<std::chrono::steady_clock::time_point> deadline,
                              std::vector<GenerateRequest>* engine_requests,
                              const std::function<bool()>& client_gone) {
  if (!request.grammar) return Status::ok();
  GrammarSpec spec = *request.grammar;
  spec.field = structured_output_field(spec);
  constexpr auto kLongestCompile = std::chrono::minutes(5);
  const auto until = deadline.value_or(std::chrono::steady_clock::now() + kLongestCompile);
  LLMSERVE_ASSIGN_OR_RETURN(CompiledGrammarPtr grammar,
                            engine.grammar_compiler().compile_and_wait(spec, until, client_gone));
  for (GenerateRequest& r : *engine_requests) r.grammar = grammar;
  return Status::ok();
}

}  // namespace llmserve
