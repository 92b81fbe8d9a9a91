// A JSON Schema validator for the tests, covering the keywords tests/schemas/*.json use: type (a name
// or a list), enum, minimum, maximum, minItems, items, required, properties, additionalProperties
// (false or a schema), anyOf, oneOf, and $ref to "#/definitions/NAME". "$comment" is ignored. Any
// other keyword throws, so that a schema never relies on one that is silently skipped.
#pragma once
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kb_test {

class json_schema {
 public:
  explicit json_schema(boost::json::value schema) : root_(std::move(schema)) {}

  static json_schema from_file(std::filesystem::path const& p) {
    std::ifstream in(p);
    if (!in) throw std::runtime_error("json_schema: cannot read " + p.string());
    std::ostringstream s;
    s << in.rdbuf();
    return json_schema(boost::json::parse(s.str()));
  }

  /// What is wrong with `v`, one line per violation with its JSON pointer; empty when it conforms.
  [[nodiscard]] std::vector<std::string> violations(boost::json::value const& v) const {
    std::vector<std::string> out;
    check(root_, v, "", out);
    return out;
  }

 private:
  static bool is_type(boost::json::value const& v, std::string_view t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "boolean") return v.is_bool();
    if (t == "null") return v.is_null();
    if (t == "number") return v.is_number();
    if (t == "integer")
      return v.is_int64() || v.is_uint64() ||
             (v.is_double() && v.get_double() == static_cast<double>(static_cast<long long>(v.get_double())));
    throw std::runtime_error("json_schema: unknown type '" + std::string(t) + "'");
  }

  [[nodiscard]] boost::json::value const& resolve(boost::json::object const& s) const {
    auto const& ref = s.at("$ref").as_string();
    const std::string prefix = "#/definitions/";
    if (!std::string_view(ref).starts_with(prefix)) throw std::runtime_error("json_schema: unsupported $ref");
    return root_.at("definitions").at(boost::json::string_view(ref).substr(prefix.size()));
  }

  void check(boost::json::value const& schema, boost::json::value const& v, std::string const& at,
             std::vector<std::string>& out) const {
    static const std::set<std::string> known = {"$comment",
                                                "$ref",
                                                "type",
                                                "enum",
                                                "minimum",
                                                "maximum",
                                                "minItems",
                                                "items",
                                                "required",
                                                "properties",
                                                "additionalProperties",
                                                "anyOf",
                                                "oneOf",
                                                "definitions"};
    auto const& s = schema.as_object();
    for (auto const& kv : s)
      if (!known.contains(std::string(kv.key())))
        throw std::runtime_error("json_schema: unsupported keyword '" + std::string(kv.key()) + "'");
    const std::string where = at.empty() ? "/" : at;
    if (s.contains("$ref")) {
      check(resolve(s), v, at, out);
      return;
    }
    if (auto const* t = s.if_contains("type")) {
      bool ok = false;
      if (t->is_string()) {
        ok = is_type(v, t->as_string());
      } else {
        for (auto const& name : t->as_array()) ok = ok || is_type(v, name.as_string());
      }
      if (!ok) {
        out.push_back(where + ": " + boost::json::serialize(v).substr(0, 80) + " is not of type " +
                      boost::json::serialize(*t));
        return;
      }
    }
    if (auto const* e = s.if_contains("enum")) {
      bool found = false;
      for (auto const& x : e->as_array()) found = found || x == v;
      if (!found)
        out.push_back(where + ": " + boost::json::serialize(v) + " is not one of " + boost::json::serialize(*e));
    }
    if (v.is_number()) {
      const double x = v.to_number<double>();
      if (auto const* m = s.if_contains("minimum"); m && x < m->to_number<double>())
        out.push_back(where + ": " + boost::json::serialize(v) + " is below the minimum " + boost::json::serialize(*m));
      if (auto const* m = s.if_contains("maximum"); m && x > m->to_number<double>())
        out.push_back(where + ": " + boost::json::serialize(v) + " is above the maximum " + boost::json::serialize(*m));
    }
    if (v.is_array()) {
      auto const& a = v.as_array();
      if (auto const* m = s.if_contains("minItems"); m && a.size() < m->to_number<std::size_t>())
        out.push_back(where + ": fewer than " + boost::json::serialize(*m) + " items");
      if (auto const* items = s.if_contains("items"))
        for (std::size_t i = 0; i < a.size(); ++i) check(*items, a[i], at + "/" + std::to_string(i), out);
    }
    if (v.is_object()) {
      auto const& o = v.as_object();
      if (auto const* r = s.if_contains("required"))
        for (auto const& name : r->as_array())
          if (!o.contains(name.as_string()))
            out.push_back(where + ": the required property '" + std::string(name.as_string()) + "' is missing");
      auto const* props = s.if_contains("properties");
      for (auto const& kv : o) {
        const std::string key(kv.key());
        if (props != nullptr && props->as_object().contains(kv.key())) {
          check(props->as_object().at(kv.key()), kv.value(), at + "/" + key, out);
        } else if (auto const* extra = s.if_contains("additionalProperties")) {
          if (extra->is_bool() && !extra->as_bool())
            out.push_back(where + ": the property '" + key + "' is not in the schema");
          else if (extra->is_object())
            check(*extra, kv.value(), at + "/" + key, out);
        }
      }
    }
    const auto matches = [&](boost::json::value const& sub) {
      std::vector<std::string> tmp;
      check(sub, v, at, tmp);
      return tmp.empty();
    };
    if (auto const* any = s.if_contains("anyOf")) {
      bool ok = false;
      for (auto const& sub : any->as_array()) ok = ok || matches(sub);
      if (!ok) out.push_back(where + ": " + boost::json::serialize(v).substr(0, 80) + " matches none of anyOf");
    }
    if (auto const* one = s.if_contains("oneOf")) {
      std::size_t n = 0;
      for (auto const& sub : one->as_array()) n += matches(sub) ? 1 : 0;
      if (n != 1)
        out.push_back(where + ": " + boost::json::serialize(v).substr(0, 80) + " matches " + std::to_string(n) +
                      " of oneOf (one is required)");
    }
  }

  boost::json::value root_;
};

}  // namespace kb_test
