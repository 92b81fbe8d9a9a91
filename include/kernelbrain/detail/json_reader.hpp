// Reading JSON text, for every reader of KernelBrain's files: the journal (io/impl/journal.ipp),
// problem files (io/impl/problem_loader.ipp) and CUDA launch plans (backends/cuda/impl/launch_plan.ipp).
// One parser that keeps every double exact and can refuse a repeated key, and the pieces their
// messages share. Each reader keeps its own words: this file decides nothing about a message.
// Bodies: impl/json_reader.ipp. For bodies only: it brings in Boost.JSON's parser.
#pragma once
#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_stack.hpp>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>
#include "kernelbrain/config.hpp"

namespace kernelbrain::detail::json_reader {

namespace json = boost::json;

/// Whether a key may appear twice in one object. Boost.JSON keeps the last one silently: right for
/// a file a program wrote, wrong for one a person or a model wrote (a parameter listed twice would
/// lose its first value list).
enum class repeated_keys { allowed, refused };

/// A boost::json::basic_parser handler that builds a json::value like boost::json::parser does, but
/// converts each double from its text with std::from_chars: Boost.JSON 1.81's own conversion can be
/// one ulp off, and a journal must give back exactly what was measured (a resumed run's budget sums
/// must match the original's to the bit), as "rtol": 1e-4 must be exactly the double nearest 1e-4.
/// With repeated_keys::refused, a key repeated in one object stops the parse (error::syntax) and is
/// kept in `repeated`.
struct value_builder {
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  explicit value_builder(repeated_keys keys) : check_keys(keys == repeated_keys::refused) {}

  json::value_stack st;
  std::string repeated;  ///< set when the parse stopped at a repeated key

  bool on_document_begin(json::error_code&) {
    st.reset();
    keys.clear();
    key.clear();
    digits.clear();
    repeated.clear();
    return true;
  }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) {
    if (check_keys) keys.emplace_back();
    return true;
  }
  bool on_object_end(std::size_t n, json::error_code&) {
    if (check_keys) keys.pop_back();
    st.push_object(n);
    return true;
  }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(std::size_t n, json::error_code&) {
    st.push_array(n);
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    if (check_keys) key.append(s.data(), s.size());
    st.push_chars(s);
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
    if (check_keys) {
      key.append(s.data(), s.size());
      auto& seen = keys.back();
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        repeated = key;
        ec = json::error::syntax;
        return false;
      }
      seen.push_back(std::move(key));
      key.clear();
    }
    st.push_key(s);
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    st.push_string(s);
    return true;
  }
  bool on_number_part(json::string_view s, json::error_code&) {
    digits.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
    digits.clear();
    st.push_int64(i);
    return true;
  }
  bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
    digits.clear();
    st.push_uint64(u);
    return true;
  }
  bool on_double(double d, json::string_view s, json::error_code&) {
    digits.append(s.data(), s.size());
    double exact = 0;
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), exact);
    // from_chars rejects only what JSON would not produce; keep Boost's value then.
    st.push_double(r.ec == std::errc{} ? exact : d);
    digits.clear();
    return true;
  }
  bool on_bool(bool b, json::error_code&) {
    st.push_bool(b);
    return true;
  }
  bool on_null(json::error_code&) {
    st.push_null();
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  bool check_keys;
  std::vector<std::vector<std::string>> keys;  ///< keys seen so far in each open object
  std::string key;                             ///< the key so far, when handed over in parts
  std::string digits;                          ///< the number so far, when handed over in parts
};

/// A parser for one document, or for many in turn (a journal's lines): the options (comments, depth)
/// and whether a repeated key is refused are fixed when it is made.
class document_parser {
 public:
  KERNELBRAIN_DECL explicit document_parser(json::parse_options const& options = {},
                                            repeated_keys keys = repeated_keys::allowed);

  /// The JSON value `text` starts with; or nothing, and then error(), stop() and repeated_key() say
  /// why and where. What follows the value is the caller's to judge (see trailing()).
  KERNELBRAIN_DECL std::optional<json::value> parse(std::string_view text);

  /// Why the last parse failed.
  json::error_code error() const { return ec_; }
  /// The byte offset at which the last parse stopped: just after the value, or where it failed.
  std::size_t stop() const { return stop_; }
  /// The repeated key the last parse stopped at (repeated_keys::refused), or empty.
  std::string const& repeated_key() const { return parser_.handler().repeated; }
  /// The offset of the first byte after the value that is not white space, or npos when there is none.
  KERNELBRAIN_DECL std::size_t trailing(std::string_view text) const;

 private:
  json::basic_parser<value_builder> parser_;
  json::error_code ec_;
  std::size_t stop_ = 0;
};

// ---- reading values ------------------------------------------------------------------------------

/// The member `key` of `o`, or null.
KERNELBRAIN_DECL json::value const* find(json::object const& o, std::string_view key);

/// `v` as a 64-bit signed integer: an integer in range; nothing for anything else (a number with a
/// fraction or exponent included, even a whole one).
KERNELBRAIN_DECL std::optional<std::int64_t> to_int64(json::value const& v);

/// `v` as a double: any JSON number; nothing for anything else.
KERNELBRAIN_DECL std::optional<double> to_double(json::value const& v);

// ---- messages ------------------------------------------------------------------------------------

/// "line L, column C" of byte offset `at` in `text` (both 1-based).
KERNELBRAIN_DECL std::string line_column(std::string_view text, std::size_t at);

/// A JSON value's kind in words, for "expected X, found Y".
KERNELBRAIN_DECL std::string_view kind_name(json::value const& v);

/// Levenshtein distance, for "did you mean".
KERNELBRAIN_DECL std::size_t edit_distance(std::string_view a, std::string_view b);

/// For a reader that refuses fields it does not know (a typo must not be silently ignored): the first
/// field of `o` not in `known`, in words, or empty when there is none:
/// "unknown field 'colr' (did you mean 'color'?) (known: name, color)". A near miss (edit distance 1
/// or 2) is suggested. `show` turns the key into the text quoted (default: the key as it is).
KERNELBRAIN_DECL std::string unknown_field(json::object const& o, std::initializer_list<std::string_view> known,
                                           std::string (*show)(std::string_view) = nullptr);

}  // namespace kernelbrain::detail::json_reader

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/detail/impl/json_reader.ipp"
#endif
