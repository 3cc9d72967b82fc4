// JSON in and out of the value model: input documents to Values, and Python's json.dumps.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/chat/jinja_value.h"

namespace llmserve::jinja {

namespace {

template <typename J>
Value from_json_impl(const J& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_impl(e));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      auto d = std::make_shared<Dict>();
      d->entries.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        d->entries.emplace_back(it.key(), from_json_impl(it.value()));
      }
      return Value::dict(std::move(d));
    }
    default:
      return Value::none();  // binary / discarded: not produced by the JSON parser
  }
}

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else if (ensure_ascii && c >= 0x80) {
          // Decode one UTF-8 sequence into \uXXXX (surrogate pairs above the BMP).
          uint32_t cp = c;
          int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
          cp &= extra == 3 ? 0x07 : extra == 2 ? 0x0f : extra == 1 ? 0x1f : 0xff;
          for (int k = 0; k < extra && i + 1 < s.size(); ++k) cp = (cp << 6) | (s[++i] & 0x3f);
          char buf[16];
          if (cp >= 0x10000) {
            cp -= 0x10000;
            std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xd800 + (cp >> 10),
                          0xdc00 + (cp & 0x3ff));
          } else {
            std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
          }
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

Status dump_json(std::string& out, const Value& v, const JsonDumpOptions& o, int level) {
  if (level > 512) return invalid_argument("tojson: value nested too deeply");
  auto newline = [&](int lvl) {
    if (o.indent < 0 && o.indent_str.empty()) return;
    out += '\n';
    for (int i = 0; i < lvl; ++i) {
      if (!o.indent_str.empty())
        out += o.indent_str;
      else
        out.append(static_cast<size_t>(o.indent), ' ');
    }
  };
  bool pretty = o.indent >= 0 || !o.indent_str.empty();
  std::string item_sep = o.item_separator.empty() ? (pretty ? "," : ", ") : o.item_separator;
  switch (v.kind()) {
    case Value::Kind::kNone:
      out += "null";
      return Status::ok();
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return Status::ok();
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return Status::ok();
    case Value::Kind::kFloat: {
      double d = v.as_double();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d > 0 ? "Infinity" : "-Infinity";
      else
        out += format_float(d);
      return Status::ok();
    }
    case Value::Kind::kString:
      append_json_string(out, v.str(), o.ensure_ascii);
      return Status::ok();
    case Value::Kind::kList: {
      if (v.items().empty()) {
        out += "[]";
        return Status::ok();
      }
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        LLMSERVE_RETURN_IF_ERROR(dump_json(out, v.items()[i], o, level + 1));
      }
      newline(level);
      out += ']';
      return Status::ok();
    }
    case Value::Kind::kDict: {
      if (v.is_namespace()) break;
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.dict_ref().entries) entries.push_back(&e);
      if (entries.empty()) {
        out += "{}";
        return Status::ok();
      }
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        append_json_string(out, entries[i]->first, o.ensure_ascii);
        out += o.key_separator;
        LLMSERVE_RETURN_IF_ERROR(dump_json(out, entries[i]->second, o, level + 1));
      }
      newline(level);
      out += '}';
      return Status::ok();
    }
    default:
      break;
  }
  return invalid_argument("Object of type " + v.type_name() + " is not JSON serializable");
}

}  // namespace

Value from_json(const nlohmann::ordered_json& j) {
  return from_json_impl(j);
}
Value from_json(const nlohmann::json& j) {
  return from_json_impl(j);
}

Result<std::string> to_json_string(const Value& v, const JsonDumpOptions& opts) {
  std::string out;
  LLMSERVE_RETURN_IF_ERROR(dump_json(out, v, opts, 0));
  return out;
}

}  // namespace llmserve::jinja
