// The CLI commands that print results on stdout (generate, perplexity, bench) send the engine's
// log lines to stderr, so stdout holds only the results.
#pragma once

namespace llmserve::cli {

void log_to_stderr();

}  // namespace llmserve::cli
