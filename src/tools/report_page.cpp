// The report page (report/page.hpp): the template of report_page_template.hpp filled with the title, the
// nonce, Chart.js and report_data's JSON, each escaped for where it goes.
#include "kernelbrain/report/page.hpp"

#include <fmt/format.h>

#include <boost/json/serialize.hpp>
#include <cctype>
#include <cstddef>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <string_view>
#include <vector>
#include "report_page_template.hpp"

namespace kernelbrain::report {

namespace {

/// The template with each @@KB_NAME@@ replaced by its value. The values are not scanned again.
std::string fill(std::string_view page, std::map<std::string, std::string> const& values) {
  std::string out;
  out.reserve(page.size() + 4096);
  std::size_t at = 0;
  while (true) {
    const auto open = page.find("@@KB_", at);
    if (open == std::string_view::npos) break;
    const auto close = page.find("@@", open + 5);
    if (close == std::string_view::npos) break;
    const std::string name(page.substr(open + 5, close - open - 5));
    auto it = values.find(name);
    if (it == values.end()) throw error("report page template: unknown placeholder " + name);  // a bug
    out.append(page.substr(at, open - at));
    out += it->second;
    at = close + 2;
  }
  out.append(page.substr(at));
  return out;
}

}  // namespace

std::string chartjs_version(std::string const& chartjs) {
  static const std::regex banner(R"(Chart\.js v([0-9][0-9A-Za-z.\-]*))");
  std::smatch m;
  const std::string head = chartjs.substr(0, 2000);
  return std::regex_search(head, m, banner) ? m[1].str() : "unknown";
}

std::string new_nonce() {
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 4; ++i) s += fmt::format("{:08x}", rd());
  return s;
}

// Only strings can hold these characters, where \uXXXX means the same.
std::string json_for_script(std::string const& json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
               (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

// "</script" would end the element and "<!--" would change how the HTML parser finds its end. "<\/" and
// "<\!" mean the same in JavaScript strings and regular expressions, where a minified library has them.
std::string script_text(std::string const& js) {
  std::string out;
  out.reserve(js.size());
  for (std::size_t i = 0; i < js.size(); ++i) {
    if (js[i] == '<' && i + 1 < js.size()) {
      const std::string_view rest = std::string_view(js).substr(i + 1, 7);
      std::string lower(rest);
      for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (lower.starts_with("/script")) {
        out += "<\\/";
        ++i;  // the '/' is written
        continue;
      }
      if (lower.starts_with("!--")) {
        out += "<\\!";
        ++i;
        continue;
      }
    }
    out += js[i];
  }
  return out;
}

std::string html_text(std::string_view s) {
  std::string out;
  for (char c : s) switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  return out;
}

std::string html_page(std::vector<loaded_journal> const& journals, page_inputs const& in) {
  const std::string version = chartjs_version(in.chartjs);
  const auto data = report_data(journals, in.title, in.generated, version, in.over);
  return fill(page_template, {{"TITLE", html_text(in.title)},
                              {"NONCE", in.nonce},
                              {"CHARTJS_VERSION", html_text(version)},
                              {"CHARTJS", script_text(in.chartjs)},
                              {"DATA", json_for_script(boost::json::serialize(data))}});
}

}  // namespace kernelbrain::report
