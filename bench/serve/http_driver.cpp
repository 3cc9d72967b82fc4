#include "bench/serve/http_driver.h"

#include <httplib.h>

#include <chrono>

#include "bench/serve/openai_stream.h"
#include "bench/serve/sse_parser.h"

namespace llmserve::bench {

Result<HttpTarget> parse_http_url(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    return invalid_argument("--url \"" + url + "\" must start with http:// or https://");
  }
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return invalid_argument("--url \"" + url + "\": scheme must be http or https");
  }
  HttpTarget t;
  const size_t path_start = url.find('/', scheme_end + 3);
  t.scheme_host_port = url.substr(0, path_start);
  if (t.scheme_host_port.size() == scheme_end + 3) {
    return invalid_argument("--url \"" + url + "\" has no host");
  }
  if (path_start != std::string::npos && url.size() > path_start + 1) {
    t.path = url.substr(path_start);
  }
  return t;
}

nlohmann::json completion_body(const HttpTarget& target, const BenchRequest& req) {
  nlohmann::json body;
  if (!target.model.empty()) body["model"] = target.model;
  if (!req.prompt_token_ids.empty()) {
    body["prompt"] = req.prompt_token_ids;
  } else {
    body["prompt"] = req.prompt_text;
  }
  body["max_tokens"] = req.max_tokens;
  body["temperature"] = 0.0;
  if (req.ignore_eos) body["ignore_eos"] = true;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  return body;
}

RequestResult send_http_completion(const HttpTarget& target, const BenchRequest& req) {
  using Clock = std::chrono::steady_clock;
  const std::string body = completion_body(target, req).dump();
  httplib::Client cli(target.scheme_host_port);
  const auto timeout = std::chrono::duration<double>(target.timeout_s);
  cli.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  cli.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));

  httplib::Request hreq;
  hreq.method = "POST";
  hreq.path = target.path;
  hreq.body = body;
  hreq.set_header("Content-Type", "application/json");
  hreq.set_header("Accept", "text/event-stream");
  if (!target.api_key.empty()) hreq.set_header("Authorization", "Bearer " + target.api_key);

  const auto start = Clock::now();
  auto since_start = [start] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  OpenAiStreamAccumulator acc(req.prompt_len);
  SseParser parser([&](const SseEvent& ev) { acc.on_event(ev.data, since_start()); });
  int status = -1;
  std::string error_body;
  hreq.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  hreq.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status == 200) {
      parser.feed(std::string_view(data, n));
    } else if (error_body.size() < 4096) {
      error_body.append(data, std::min<size_t>(n, 4096 - error_body.size()));
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = cli.send(hreq, res, err);
  std::string transport_error;
  if (!sent || err != httplib::Error::Success) {
    transport_error = "HTTP transport error: " + httplib::to_string(err);
  } else if (status != 200) {
    transport_error = "HTTP " + std::to_string(status) + ": " + error_body;
  }
  return acc.finish(since_start(), transport_error);
}

}  // namespace llmserve::bench
