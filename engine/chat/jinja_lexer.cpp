#include "engine/chat/jinja_lexer.h"

#include <algorithm>
#include <cctype>

namespace llmserve::jinja {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) {
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Result<std::vector<Token>> run() {
    const size_t n = src_.size();
    while (pos_ < n) {
      size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        emit(TokenType::kText, src_.substr(pos_), pos_);
        break;
      }
      char kind = src_[tag + 1];
      size_t after = tag + 2;
      char sign = 0;
      if (after < n && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
      std::string text = src_.substr(pos_, tag - pos_);
      size_t raw_end = kind == '%' ? match_raw_begin(after) : std::string::npos;
      if (sign == '-') {
        size_t e = text.size();
        while (e > 0 && is_space(text[e - 1])) --e;
        text.resize(e);
      } else if (sign != '+' && kind != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if (l_pos > 0 || line_starting_) {
          bool only_blank = std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l_pos),
                                        text.end(), [](char c) { return c == ' ' || c == '\t'; });
          if (only_blank) text.resize(l_pos);
        }
      }
      if (!text.empty()) emit(TokenType::kText, std::move(text), pos_);
      line_starting_ = false;
      if (raw_end != std::string::npos) {
        line_starting_ = src_[raw_end - 1] == '\n';
        LLMSERVE_RETURN_IF_ERROR(lex_raw(raw_end, tag));
      } else if (kind == '#') {
        LLMSERVE_RETURN_IF_ERROR(lex_comment(after, tag));
      } else {
        LLMSERVE_RETURN_IF_ERROR(lex_tag(kind == '%', after, tag));
      }
    }
    emit(TokenType::kEof, "", src_.size());
    return std::move(out_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  void emit(TokenType type, std::string value, size_t offset) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    t.line = static_cast<int>(line);
    t.col = static_cast<int>(offset - line_starts_[line - 1] + 1);
    out_.push_back(std::move(t));
  }

  Status error(size_t offset, const std::string& msg) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    size_t col = offset - line_starts_[line - 1] + 1;
    return invalid_argument("chat template syntax error at line " + std::to_string(line) +
                            ", column " + std::to_string(col) + ": " + msg);
  }

  size_t skip_space(size_t p) const {
    while (p < src_.size() && is_space(src_[p])) ++p;
    return p;
  }

  bool starts_with(size_t p, std::string_view s) const { return src_.compare(p, s.size(), s) == 0; }

  // "{%[-+]? raw -%}" or "%}" (no trim_blocks here, as in jinja2): the end offset, or npos.
  size_t match_raw_begin(size_t p) const {
    p = skip_space(p);
    if (!starts_with(p, "raw")) return std::string::npos;
    p = skip_space(p + 3);
    if (starts_with(p, "-%}")) return skip_space(p + 3);
    if (starts_with(p, "%}")) return p + 2;
    return std::string::npos;
  }

  Status lex_raw(size_t p, size_t tag_offset) {
    for (size_t i = src_.find("{%", p); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t q = i + 2;
      char sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q = skip_space(q);
      if (!starts_with(q, "endraw")) continue;
      q = skip_space(q + 6);
      size_t end;
      if (starts_with(q, "+%}")) {
        end = q + 3;
      } else if (starts_with(q, "-%}")) {
        end = skip_space(q + 3);
      } else if (starts_with(q, "%}")) {
        end = q + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      std::string text = src_.substr(p, i - p);
      if (sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (sign != '+') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting_) &&
            text.find_first_not_of(" \t", l_pos) == std::string::npos) {
          text.resize(l_pos);
        }
      }
      if (!text.empty()) emit(TokenType::kText, std::move(text), p);
      line_starting_ = src_[end - 1] == '\n';
      pos_ = end;
      return Status::ok();
    }
    return error(tag_offset, "missing end of raw directive");
  }

  Status lex_comment(size_t p, size_t tag_offset) {
    size_t q = src_.find("#}", p);
    if (q == std::string::npos) return error(tag_offset, "missing end of comment tag");
    size_t end = q + 2;
    if (q > p && src_[q - 1] == '-') {
      end = skip_space(end);
    } else if (q > p && src_[q - 1] == '+') {
      // keep the newline
    } else if (end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    line_starting_ = src_[end - 1] == '\n';
    pos_ = end;
    return Status::ok();
  }

  Status lex_tag(bool block, size_t p, size_t tag_offset) {
    emit(block ? TokenType::kBlockBegin : TokenType::kVarBegin, "", tag_offset);
    std::string balance;
    const size_t n = src_.size();
    while (true) {
      if (p >= n) return error(tag_offset, block ? "unclosed block tag" : "unclosed variable tag");
      if (balance.empty()) {
        size_t end = std::string::npos;
        size_t at = p;
        if (block) {
          if (starts_with(p, "+%}")) {
            end = p + 3;
          } else if (starts_with(p, "-%}")) {
            end = skip_space(p + 3);
          } else if (starts_with(p, "%}")) {
            end = p + 2;
            if (end < n && src_[end] == '\n') ++end;
          }
        } else if (starts_with(p, "-}}")) {
          end = skip_space(p + 3);
        } else if (starts_with(p, "}}")) {
          end = p + 2;
        }
        if (end != std::string::npos) {
          emit(block ? TokenType::kBlockEnd : TokenType::kVarEnd, "", at);
          line_starting_ = src_[end - 1] == '\n';
          pos_ = end;
          return Status::ok();
        }
      }
      char c = src_[p];
      if (is_space(c)) {
        ++p;
        continue;
      }
      if (is_digit(c)) {
        p = lex_number(p);
        continue;
      }
      if (is_name_start(c)) {
        size_t s = p;
        while (p < n && is_name_char(src_[p])) ++p;
        emit(TokenType::kName, src_.substr(s, p - s), s);
        continue;
      }
      if (c == '\'' || c == '"') {
        LLMSERVE_ASSIGN_OR_RETURN(p, lex_string(p));
        continue;
      }
      static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
      std::string op;
      for (auto two : kTwo) {
        if (starts_with(p, two)) op = std::string(two);
      }
      if (op.empty()) {
        if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
          return error(p, std::string("unexpected character '") + c + "'");
        }
        op = std::string(1, c);
        if (c == '(' || c == '[' || c == '{') {
          if (balance.size() > 1000) return error(p, "brackets nested too deeply");
          balance += c;
        } else if (c == ')' || c == ']' || c == '}') {
          char open = c == ')' ? '(' : c == ']' ? '[' : '{';
          if (balance.empty() || balance.back() != open) {
            return error(p, std::string("unexpected '") + c + "'");
          }
          balance.pop_back();
        }
      }
      emit(TokenType::kOp, op, p);
      p += op.size();
    }
  }

  size_t lex_digits(size_t p) const {
    // (\d+_)*\d+
    while (p < src_.size() && is_digit(src_[p])) {
      ++p;
      if (p + 1 < src_.size() && src_[p] == '_' && is_digit(src_[p + 1])) ++p;
    }
    return p;
  }

  size_t lex_number(size_t start) {
    const size_t n = src_.size();
    size_t p = lex_digits(start);
    bool is_float = false;
    bool after_dot = start > 0 && src_[start - 1] == '.';
    if (!after_dot) {
      size_t q = p;
      if (q + 1 < n && src_[q] == '.' && is_digit(src_[q + 1])) {
        q = lex_digits(q + 1);
        is_float = true;
      }
      if (q < n && (src_[q] == 'e' || src_[q] == 'E')) {
        size_t r = q + 1;
        if (r < n && (src_[r] == '+' || src_[r] == '-')) ++r;
        if (r < n && is_digit(src_[r])) {
          q = lex_digits(r);
          is_float = true;
        }
      }
      if (is_float) p = q;
    }
    std::string text;
    for (size_t i = start; i < p; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    emit(is_float ? TokenType::kFloat : TokenType::kInt, std::move(text), start);
    return p;
  }

  Result<size_t> lex_string(size_t start) {
    const size_t n = src_.size();
    char quote = src_[start];
    std::string out;
    size_t p = start + 1;
    while (true) {
      if (p >= n) return error(start, "unterminated string literal");
      char c = src_[p];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        ++p;
        continue;
      }
      if (p + 1 >= n) return error(start, "unterminated string literal");
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case '\n':
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
        case 'u':
        case 'U': {
          size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t k = 0; k < digits; ++k, ++p) {
            if (p >= n || !std::isxdigit(static_cast<unsigned char>(src_[p]))) {
              return error(p, "truncated \\" + std::string(1, e) + " escape");
            }
            char h = src_[p];
            cp = cp * 16 +
                 static_cast<uint32_t>(is_digit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          if (cp > 0x10ffff) return error(p, "illegal Unicode character");
          append_utf8(out, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && p < n && src_[p] >= '0' && src_[p] <= '7'; ++k, ++p) {
              cp = cp * 8 + static_cast<uint32_t>(src_[p] - '0');
            }
            append_utf8(out, cp);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    emit(TokenType::kString, std::move(out), start);
    return p + 1;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> out_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace llmserve::jinja
