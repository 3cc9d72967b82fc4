#include "server/cli/generate_prompts_file.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

template <typename T>
Status read_field(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    return invalid_argument(std::string(key) + " has the wrong type");
  }
  return Status::ok();
}

Status read_params(const json& j, SamplingParams& p) {
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "max_tokens", p.max_tokens));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "temperature", p.temperature));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "top_p", p.top_p));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "top_k", p.top_k));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "min_p", p.min_p));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "repetition_penalty", p.repetition_penalty));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "presence_penalty", p.presence_penalty));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "frequency_penalty", p.frequency_penalty));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "min_tokens", p.min_tokens));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "stop_token_ids", p.stop_token_ids));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "ignore_eos", p.ignore_eos));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "n", p.n));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "logprobs", p.logprobs));
  LLMSERVE_RETURN_IF_ERROR(read_field(j, "skip_special_tokens", p.skip_special_tokens));
  LLMSERVE_RETURN_IF_ERROR(
      read_field(j, "include_stop_str_in_output", p.include_stop_str_in_output));
  if (auto it = j.find("seed"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer()) return invalid_argument("seed must be an integer");
    p.seed =
        it->is_number_unsigned() ? it->get<uint64_t>() : static_cast<uint64_t>(it->get<int64_t>());
  }
  if (auto it = j.find("stop"); it != j.end() && !it->is_null()) {
    if (it->is_string()) {
      p.stop = {it->get<std::string>()};
    } else {
      LLMSERVE_RETURN_IF_ERROR(read_field(j, "stop", p.stop));
    }
  }
  return Status::ok();
}

std::string token_string(const Tokenizer& tok, int32_t id) {
  return id >= 0 ? tok.token_text(id) : std::string();
}

// Polls every unfinished stream and records what arrived, with timestamps.
struct Tracker {
  std::shared_ptr<RequestStream> stream;
  Clock::time_point submitted{};
  std::optional<Clock::time_point> first_token, ended;
  std::vector<StepOutput> samples;  // accumulated per index
  Usage usage;
  std::vector<std::vector<TokenLogprob>> logprobs;
};

json result_json(size_t index, const Tracker& t, const Tokenizer& tok, bool want_logprobs) {
  auto ms = [&](Clock::time_point p) {
    return std::chrono::duration<double, std::milli>(p - t.submitted).count();
  };
  auto sample_json = [&](size_t i) {
    const StepOutput& s = t.samples[i];
    json j;
    j["text"] = s.text;
    j["token_ids"] = s.token_ids;
    j["finish_reason"] = finish_reason_name(s.finish);
    j["stop_reason"] = s.stop_reason.empty() ? json(nullptr) : json(s.stop_reason);
    if (!s.error.is_ok()) j["error"] = s.error.to_string();
    if (want_logprobs) {
      json lps = json::array();
      for (const TokenLogprob& lp : t.logprobs[i]) {
        json top = json::array();
        for (const TopLogprob& e : lp.top) {
          top.push_back({{"token_id", e.token_id},
                         {"token", token_string(tok, e.token_id)},
                         {"logprob", e.logprob}});
        }
        lps.push_back({{"token_id", lp.token_id},
                       {"token", token_string(tok, lp.token_id)},
                       {"logprob", lp.logprob},
                       {"top", top}});
      }
      j["logprobs"] = lps;
    }
    return j;
  };
  json out = json::object();
  out["index"] = index;
  out.update(sample_json(0));
  out["usage"] = {{"prompt_tokens", t.usage.prompt_tokens},
                  {"completion_tokens", t.usage.completion_tokens},
                  {"cached_prompt_tokens", t.usage.cached_prompt_tokens}};
  if (t.usage.verify_steps > 0) {
    out["spec"] = {{"draft_tokens", t.usage.draft_tokens},
                   {"accepted_tokens", t.usage.accepted_draft_tokens},
                   {"verify_steps", t.usage.verify_steps}};
  }
  out["ttft_ms"] = t.first_token ? json(ms(*t.first_token)) : json(nullptr);
  out["e2e_ms"] = t.ended ? json(ms(*t.ended)) : json(nullptr);
  if (t.samples.size() > 1) {
    out["samples"] = json::array();
    for (size_t i = 0; i < t.samples.size(); ++i) out["samples"].push_back(sample_json(i));
  }
  return out;
}

}  // namespace

Result<GenerateRequest> request_from_json_line(const json& line, const Engine& engine) {
  if (!line.is_object()) return invalid_argument("each line must be a JSON object");
  GenerateRequest r;
  const Tokenizer& tok = engine.tokenizer();
  if (auto it = line.find("prompt_token_ids"); it != line.end()) {
    LLMSERVE_RETURN_IF_ERROR(read_field(line, "prompt_token_ids", r.prompt_token_ids));
  } else if (auto p = line.find("prompt"); p != line.end()) {
    if (!p->is_string()) return invalid_argument("prompt must be a string");
    r.prompt_token_ids = tok.encode(p->get<std::string>(), true, true);
  } else if (auto m = line.find("messages"); m != line.end()) {
    if (!m->is_array()) return invalid_argument("messages must be an array");
    const ChatTemplate* tmpl = engine.chat_template();
    if (tmpl == nullptr) return invalid_argument("the model has no chat template");
    const TokenizerSpec& spec = tok.spec();
    LLMSERVE_ASSIGN_OR_RETURN(std::string text,
                              apply_chat_template(*tmpl, *m, true, token_string(tok, spec.bos_id),
                                                  token_string(tok, spec.eos_id), json::object()));
    r.prompt_token_ids = tok.encode(text, false, true);
  } else {
    return invalid_argument("a line needs prompt, prompt_token_ids or messages");
  }
  LLMSERVE_RETURN_IF_ERROR(read_params(line, r.params));
  if (auto id = line.find("id"); id != line.end() && id->is_string()) {
    r.external_id = id->get<std::string>();
  }
  return r;
}

namespace {

// Runs `lines` concurrently; results are numbered from first_index.
int run_lines(Engine& engine, std::span<const std::string> lines, size_t first_index,
              std::ostream& out) {
  std::vector<std::optional<Tracker>> trackers;
  std::vector<std::string> errors;
  std::vector<bool> want_logprobs;
  for (const std::string& line : lines) {
    errors.emplace_back();
    trackers.emplace_back();
    want_logprobs.push_back(false);
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      errors.back() = "line " + std::to_string(first_index + trackers.size()) + ": not valid JSON";
      continue;
    }
    auto req = request_from_json_line(j, engine);
    if (req.is_ok()) {
      want_logprobs.back() = req->params.logprobs >= 0;
      const auto submitted = Clock::now();
      auto stream = engine.submit(std::move(req).value());
      if (stream.is_ok()) {
        Tracker t;
        t.stream = *stream;
        t.submitted = submitted;
        t.samples.resize(static_cast<size_t>(t.stream->num_samples()));
        t.logprobs.resize(t.samples.size());
        trackers.back() = std::move(t);
        continue;
      }
      errors.back() = stream.status().to_string();
    } else {
      errors.back() = req.status().to_string();
    }
  }

  size_t printed = 0, live = 0;
  int exit_code = 0;
  for (auto& t : trackers) live += t.has_value();
  while (printed < trackers.size()) {
    bool progress = false;
    for (auto& t : trackers) {
      if (!t || t->ended) continue;
      while (auto o = t->stream->next(std::chrono::milliseconds(0))) {
        progress = true;
        const auto now = Clock::now();
        if (!o->token_ids.empty() && !t->first_token) t->first_token = now;
        auto idx = static_cast<size_t>(o->index);
        if (idx >= t->samples.size()) continue;
        StepOutput& s = t->samples[idx];
        s.text += o->text;
        s.token_ids.insert(s.token_ids.end(), o->token_ids.begin(), o->token_ids.end());
        for (auto& lp : o->logprobs) t->logprobs[idx].push_back(std::move(lp));
        if (o->finish != FinishReason::kNone) {
          s.finish = o->finish;
          s.stop_reason = o->stop_reason;
          s.error = o->error;
        }
        t->usage = o->usage;
      }
      if (t->stream->finished()) {
        t->ended = Clock::now();
        --live;
        progress = true;
      }
    }
    while (printed < trackers.size() && (!trackers[printed] || trackers[printed]->ended)) {
      json j;
      if (trackers[printed]) {
        j = result_json(first_index + printed, *trackers[printed], engine.tokenizer(),
                        want_logprobs[printed]);
        if (trackers[printed]->samples[0].finish == FinishReason::kError) exit_code = 1;
      } else {
        j = {{"index", first_index + printed}, {"error", errors[printed]}};
        exit_code = 1;
      }
      out << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      out.flush();
      ++printed;
    }
    if (!progress && live > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return exit_code;
}

}  // namespace

int run_prompts_file(Engine& engine, std::istream& in, std::ostream& out, bool sequential) {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  }
  if (!sequential) return run_lines(engine, lines, 0, out);
  int exit_code = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    exit_code = std::max(exit_code, run_lines(engine, std::span(lines).subspan(i, 1), i, out));
  }
  return exit_code;
}

std::string spec_stats_line(const EngineStats& s) {
  if (s.spec_num_drafts == 0) return "";
  char line[256];
  std::snprintf(
      line, sizeof line,
      "speculative: %llu checks, %llu drafts, %llu accepted (acceptance rate %.3f, "
      "mean accepted length %.2f)",
      static_cast<unsigned long long>(s.spec_num_drafts),
      static_cast<unsigned long long>(s.spec_num_draft_tokens),
      static_cast<unsigned long long>(s.spec_num_accepted_tokens),
      static_cast<double>(s.spec_num_accepted_tokens) /
          static_cast<double>(std::max<uint64_t>(s.spec_num_draft_tokens, 1)),
      static_cast<double>(s.spec_num_accepted_tokens) / static_cast<double>(s.spec_num_drafts));
  return line;
}

int run_generate_prompts_file(const EngineOptions& options, const std::string& path,
                              bool sequential) {
  std::ifstream file;
  if (path != "-") {
    file.open(path);
    if (!file) {
      std::cerr << "error: cannot open " << path << "\n";
      return 1;
    }
  }
  auto engine = Engine::create(options);
  if (!engine.is_ok()) {
    std::cerr << "error: " << engine.status().to_string() << "\n";
    return 1;
  }
  const int rc = run_prompts_file(**engine, path == "-" ? std::cin : file, std::cout, sequential);
  if (const std::string spec = spec_stats_line((*engine)->stats()); !spec.empty()) {
    std::cerr << spec << "\n";
  }
  (*engine)->shutdown();
  return rc;
}

}  // namespace llmserve::cli
