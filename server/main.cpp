#include <CLI/CLI.hpp>

#include "server/cli/command.h"
#ifdef LLMSERVE_HAVE_SERVER
#include "server/serve/serve_command.h"
#endif

int main(int argc, char** argv) {
  CLI::App app{"llmserve: an LLM serving daemon (OpenAI-compatible HTTP + gRPC)"};
  app.require_subcommand(1);
  int exit_code = 0;
  llmserve::cli::add_tokenize_command(app, exit_code);
  llmserve::cli::add_detokenize_command(app, exit_code);
  llmserve::cli::add_chat_template_command(app, exit_code);
  llmserve::cli::add_inspect_command(app, exit_code);
  llmserve::cli::add_bench_command(app, exit_code);
  llmserve::cli::add_generate_command(app, exit_code);
  llmserve::cli::add_perplexity_command(app, exit_code);
#ifdef LLMSERVE_HAVE_SERVER
  llmserve::cli::add_serve_command(app, exit_code);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
