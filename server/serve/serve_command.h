// `llmserve serve`: load the config, create the engine, serve HTTP + gRPC until SIGTERM/SIGINT,
// then drain (readiness false, new requests 503 / UNAVAILABLE, in-flight streams finish up to
// server.shutdown_grace_seconds) and exit 0.
#pragma once

#include <CLI/CLI.hpp>

namespace llmserve::cli {

void add_serve_command(CLI::App& root, int& exit_code);

}  // namespace llmserve::cli
