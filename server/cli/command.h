// The `llmserve` subcommands. Each add_*_command registers one subcommand on the root app;
// its callback stores the process exit code in `exit_code` (0 ok, 1 runtime error, 2 usage).
#pragma once

#include <CLI/CLI.hpp>

namespace llmserve::cli {

void add_tokenize_command(CLI::App& root, int& exit_code);
void add_detokenize_command(CLI::App& root, int& exit_code);
void add_chat_template_command(CLI::App& root, int& exit_code);
void add_inspect_command(CLI::App& root, int& exit_code);
// `llmserve bench` (bench/serve/): exit code 0 when any request completed, 1 when none did.
void add_bench_command(CLI::App& root, int& exit_code);
void add_generate_command(CLI::App& root, int& exit_code);
// `llmserve perplexity`: exit code 0 with the estimate printed, 1 on any error.
void add_perplexity_command(CLI::App& root, int& exit_code);

}  // namespace llmserve::cli
