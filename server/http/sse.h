// Server-sent events framing for OpenAI streams: each event is "data: <json>\n\n" and the
// stream ends with "data: [DONE]\n\n".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmserve::sse {

// The streams' Content-Type. The charset is explicit: clients that follow RFC 2616's default
// (python-requests' iter_lines with decode_unicode) would otherwise read non-ASCII text as
// Latin-1.
inline constexpr const char* kContentType = "text/event-stream; charset=utf-8";

std::string event(const nlohmann::json& payload);  // never throws (bad UTF-8 replaced)
std::string done();
std::string comment(std::string_view text);  // ": text\n\n" (keep-alive)

// Splits a received SSE byte stream into the `data:` payloads of complete events; the
// unfinished tail stays in `buffer`. For tests and clients.
std::vector<std::string> take_events(std::string& buffer);

}  // namespace llmserve::sse
