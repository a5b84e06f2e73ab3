#include "roll/jinja/json.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

#include "roll/core/error.h"
#include "roll/jinja/python.h"

namespace roll::jinja {

namespace {

template <class Json>
Value convert(const Json& j) {
  switch (j.type()) {
    case nlohmann::detail::value_t::null: return Value::none();
    case nlohmann::detail::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::detail::value_t::number_integer: return Value(j.template get<std::int64_t>());
    case nlohmann::detail::value_t::number_unsigned: {
      const auto u = j.template get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return Value(static_cast<double>(u));
      return Value(static_cast<std::int64_t>(u));
    }
    case nlohmann::detail::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::detail::value_t::string: return Value(j.template get<std::string>());
    case nlohmann::detail::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(convert(e));
      return Value::list(std::move(items));
    }
    case nlohmann::detail::value_t::object: {
      ValueDict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.set(it.key(), convert(it.value()));
      return Value::dict(std::move(d));
    }
    default: throw roll::Error("template context: binary JSON values are not supported");
  }
}

// json.dumps escaping: quotes, backslash and control characters; non-ASCII only with ensure_ascii.
void escape_ascii(std::string& out, unsigned char c) {
  switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
  }
}

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  if (!ensure_ascii) {
    for (char ch : s) escape_ascii(out, static_cast<unsigned char>(ch));  // UTF-8 passes through
  } else {
    for (char32_t c : py::decode(s)) {
      char buf[16];
      if (c < 0x80) {
        escape_ascii(out, static_cast<unsigned char>(c));
        continue;
      }
      if (c >= 0x10000) {  // a surrogate pair, as Python writes it
        const char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      }
      out += buf;
    }
  }
  out += '"';
}

struct Dumper {
  const DumpOptions& opt;
  std::string item_sep;
  std::string out;

  void newline(int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += *opt.indent;
  }

  void dump(const Value& v, int level) {
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.as_int()); return;
      case Value::Kind::Float: {
        const double d = v.as_double();
        if (d != d) out += "NaN";
        else if (d == std::numeric_limits<double>::infinity()) out += "Infinity";
        else if (d == -std::numeric_limits<double>::infinity()) out += "-Infinity";
        else out += py::repr_float(d);
        return;
      }
      case Value::Kind::String: dump_string(out, v.as_string(), opt.ensure_ascii); return;
      case Value::Kind::List: {
        const auto& items = v.as_list();
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (std::size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep;
          if (opt.indent) newline(level + 1);
          dump(items[i], level + 1);
        }
        if (opt.indent) newline(level);
        out += ']';
        return;
      }
      case Value::Kind::Dict: {
        std::vector<const ValueDict::Item*> items;
        for (const auto& item : v.as_dict().items()) items.push_back(&item);
        if (items.empty()) {
          out += "{}";
          return;
        }
        if (opt.sort_keys)
          std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
        out += '{';
        for (std::size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep;
          if (opt.indent) newline(level + 1);
          dump_string(out, items[i]->first, opt.ensure_ascii);
          out += opt.key_separator;
          dump(items[i]->second, level + 1);
        }
        if (opt.indent) newline(level);
        out += '}';
        return;
      }
      default: throw roll::Error("Object of type " + v.type_name() + " is not JSON serializable");
    }
  }
};

}  // namespace

Value from_json(const nlohmann::json& j) { return convert(j); }
Value from_json(const nlohmann::ordered_json& j) { return convert(j); }

std::string dumps(const Value& v, const DumpOptions& options) {
  Dumper d{options, options.item_separator.value_or(options.indent ? "," : ", "), {}};
  d.dump(v, 0);
  return std::move(d.out);
}

}  // namespace roll::jinja
