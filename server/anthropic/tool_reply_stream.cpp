#include "server/anthropic/tool_reply_stream.h"

namespace llmserve {

namespace {

bool is_ws(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

constexpr std::string_view kOpenTag = "<tool_call>";
constexpr std::string_view kCloseTag = "</tool_call>";

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void ToolReplyStream::emit(std::vector<ToolStreamPiece>& out, ToolStreamPiece::Kind kind,
                           std::string text) {
  const bool mergeable =
      kind == ToolStreamPiece::Kind::kText || kind == ToolStreamPiece::Kind::kArguments;
  if (mergeable && !out.empty() && out.back().kind == kind) {
    out.back().text += text;
    return;
  }
  out.push_back({kind, std::move(text)});
}

bool ToolReplyStream::string_char(char c, std::string& into) {
  if (hex_left_ > 0) {
    const int v = hex_value(c);
    hex_ = hex_ * 16 + static_cast<uint32_t>(v < 0 ? 0 : v);
    if (--hex_left_ > 0) return true;
    if (hex_ >= 0xD800 && hex_ < 0xDC00) {
      high_surrogate_ = hex_;  // its low half follows as another \u escape
    } else if (hex_ >= 0xDC00 && hex_ < 0xE000 && high_surrogate_ != 0) {
      append_utf8(0x10000 + ((high_surrogate_ - 0xD800) << 10) + (hex_ - 0xDC00), into);
      high_surrogate_ = 0;
    } else {
      append_utf8(hex_, into);
      high_surrogate_ = 0;
    }
    return true;
  }
  if (escape_) {
    escape_ = false;
    switch (c) {
      case 'n':
        into += '\n';
        break;
      case 't':
        into += '\t';
        break;
      case 'r':
        into += '\r';
        break;
      case 'b':
        into += '\b';
        break;
      case 'f':
        into += '\f';
        break;
      case 'u':
        hex_left_ = 4;
        hex_ = 0;
        break;
      default:
        into += c;
        break;  // \" \\ \/
    }
    return true;
  }
  if (c == '\\') {
    escape_ = true;
    return true;
  }
  if (c == '"') return false;
  into += c;
  return true;
}

void ToolReplyStream::start_raw() {
  depth_ = 0;
  raw_in_string_ = false;
  raw_escape_ = false;
  raw_started_ = false;
}

ToolReplyStream::Raw ToolReplyStream::raw_char(char c) {
  if (raw_in_string_) {
    if (raw_escape_) {
      raw_escape_ = false;
    } else if (c == '\\') {
      raw_escape_ = true;
    } else if (c == '"') {
      raw_in_string_ = false;
      if (depth_ == 0) return Raw::kEndWith;
    }
    return Raw::kPart;
  }
  if (!raw_started_) {
    if (is_ws(c)) return Raw::kSkip;
    raw_started_ = true;
  }
  switch (c) {
    case '"':
      raw_in_string_ = true;
      return Raw::kPart;
    case '{':
    case '[':
      ++depth_;
      return Raw::kPart;
    case '}':
    case ']':
      if (depth_ == 0) return Raw::kEnd;
      return --depth_ == 0 ? Raw::kEndWith : Raw::kPart;
    case ',':
      return depth_ == 0 ? Raw::kEnd : Raw::kPart;
    default:
      if (is_ws(c) && depth_ == 0) return Raw::kEnd;
      return Raw::kPart;
  }
}

void ToolReplyStream::end_call(std::vector<ToolStreamPiece>& out) {
  if (call_open_) emit(out, ToolStreamPiece::Kind::kCallEnd, "");
  call_open_ = false;
}

// Text of the tagged mode, trimmed at its ends: whitespace is held until more text follows.
void ToolReplyStream::text_out(std::vector<ToolStreamPiece>& out, const std::string& text) {
  for (char c : text) {
    if (is_ws(c)) {
      if (text_given_) ws_held_ += c;
      continue;
    }
    std::string piece = std::move(ws_held_);
    ws_held_.clear();
    piece += c;
    emit(out, ToolStreamPiece::Kind::kText, std::move(piece));
    text_given_ = true;
  }
}

void ToolReplyStream::tag_text(char c, std::vector<ToolStreamPiece>& out) {
  pending_ += c;
  if (pending_ == kOpenTag) {
    pending_.clear();
    block_ = std::string(kOpenTag);
    state_ = State::kCallOpen;
    return;
  }
  // Text until what is held could still become the tag.
  size_t keep = 0;
  while (keep < pending_.size() &&
         kOpenTag.substr(0, pending_.size() - keep) != std::string_view(pending_).substr(keep)) {
    ++keep;
  }
  text_out(out, pending_.substr(0, keep));
  pending_.erase(0, keep);
}

void ToolReplyStream::step(char c, std::vector<ToolStreamPiece>& out) {
  using K = ToolStreamPiece::Kind;
  if (tagged_ && state_ != State::kTagText) block_ += c;
  switch (state_) {
    case State::kTagText:
      tag_text(c, out);
      return;
    case State::kTagClose:
      if (is_ws(c) && pending_.empty()) return;
      pending_ += c;
      if (pending_ == kCloseTag) {
        pending_.clear();
        state_ = State::kTagText;
      } else if (kCloseTag.substr(0, pending_.size()) != pending_) {
        std::string rest = std::move(pending_);  // no closing tag: text again
        pending_.clear();
        state_ = State::kTagText;
        for (char r : rest) tag_text(r, out);
      }
      return;
    case State::kTagBad:
      if (ends_with(block_, kCloseTag)) {
        text_out(out, block_);
        block_.clear();
        state_ = State::kTagText;
      }
      return;
    case State::kStart:
      if (is_ws(c)) return;
      state_ = c == '{' ? State::kTopKey : State::kPlain;
      return;
    case State::kTopKey:
      if (is_ws(c)) return;
      if (c == '"') {
        key_.clear();
        state_ = State::kTopKeyStr;
      } else {
        state_ = State::kPlain;
      }
      return;
    case State::kTopKeyStr:
      if (!string_char(c, key_)) state_ = State::kTopColon;
      return;
    case State::kTopColon:
      if (is_ws(c)) return;
      if (c != ':') {
        state_ = State::kPlain;
      } else if (key_ == "response") {
        state_ = State::kResponse;
      } else if (key_ == "tool_calls") {
        state_ = State::kCallsArray;
      } else {
        state_ = State::kPlain;
      }
      return;
    case State::kResponse:
      if (is_ws(c)) return;
      if (c == '"') {
        state_ = State::kResponseStr;
        return;
      }
      start_raw();
      state_ = State::kResponseRaw;
      step(c, out);
      return;
    case State::kResponseStr: {
      std::string piece;
      if (!string_char(c, piece)) {
        state_ = State::kDone;
      } else if (!piece.empty()) {
        emit(out, K::kText, std::move(piece));
      }
      return;
    }
    case State::kResponseRaw: {
      const Raw r = raw_char(c);
      if (r == Raw::kPart || r == Raw::kEndWith) emit(out, K::kText, std::string(1, c));
      if (r == Raw::kEndWith || r == Raw::kEnd) state_ = State::kDone;
      return;
    }
    case State::kCallsArray:
      if (is_ws(c)) return;
      state_ = c == '[' ? State::kCallOpen : State::kPlain;
      return;
    case State::kCallOpen:
      if (is_ws(c) || c == ',') return;
      if (c == '{') {
        name_.clear();
        held_args_.clear();
        name_done_ = false;
        call_open_ = false;
        state_ = State::kCallKey;
      } else {
        state_ = tagged_ ? State::kTagBad : State::kDone;  // ']' ends the generic list
      }
      return;
    case State::kCallKey:
      if (is_ws(c) || c == ',') return;
      if (c == '"') {
        key_.clear();
        state_ = State::kCallKeyStr;
      } else if (c == '}' && tagged_ && !name_done_) {
        state_ = State::kTagBad;  // an object without a name: no call
      } else {                    // '}'
        end_call(out);
        state_ = tagged_ ? State::kTagClose : State::kCallOpen;
      }
      return;
    case State::kCallKeyStr:
      if (!string_char(c, key_)) state_ = State::kCallColon;
      return;
    case State::kCallColon:
      if (c == ':') state_ = State::kCallValue;
      return;
    case State::kCallValue:
      if (is_ws(c)) return;
      if (key_ == "name" && c == '"' && !name_done_) {
        state_ = State::kNameStr;
        return;
      }
      start_raw();
      state_ = key_ == "arguments" ? State::kArgsRaw : State::kSkipRaw;
      step(c, out);
      return;
    case State::kNameStr:
      if (string_char(c, name_)) return;
      name_done_ = true;
      call_open_ = true;
      ++calls_;
      emit(out, K::kCallStart, name_);
      if (!held_args_.empty()) emit(out, K::kArguments, std::move(held_args_));
      held_args_.clear();
      state_ = State::kCallKey;
      return;
    case State::kArgsRaw:
    case State::kSkipRaw: {
      const Raw r = raw_char(c);
      if (state_ == State::kArgsRaw && (r == Raw::kPart || r == Raw::kEndWith)) {
        if (call_open_) {
          emit(out, K::kArguments, std::string(1, c));
        } else {
          held_args_ += c;
        }
      }
      if (r == Raw::kEndWith || r == Raw::kEnd) {
        state_ = State::kCallKey;
        if (r == Raw::kEnd) step(c, out);
      }
      return;
    }
    case State::kDone:
    case State::kPlain:
      return;
  }
}

std::vector<ToolStreamPiece> ToolReplyStream::feed(std::string_view text) {
  std::vector<ToolStreamPiece> out;
  all_.append(text);
  for (char c : text) step(c, out);
  return out;
}

std::vector<ToolStreamPiece> ToolReplyStream::finish(std::string* unparsed) {
  std::vector<ToolStreamPiece> out;
  if (tagged_) {
    // A tag or block cut short is dropped, as is whitespace at the text's end.
    end_call(out);
    return out;
  }
  if (state_ == State::kPlain || state_ == State::kStart) {
    if (unparsed) *unparsed = all_;
    return out;
  }
  end_call(out);
  return out;
}

}  // namespace llmserve
