// The report page: one self-contained HTML file made from report_data (report/data.hpp), with Chart.js
// inlined, the data as one JSON block, and nothing fetched. Journals hold model replies and kernel
// sources, so every string is treated as hostile: the JSON is escaped for a <script> element, the page's
// script writes text with textContent only, and a Content-Security-Policy with a per-page nonce runs no
// other script.
//
// Compiled into kernelbrain::tools (src/tools/report_page.cpp, with the template in
// src/tools/report_page_template.hpp): link it to use these.
#pragma once
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/report/data.hpp"

namespace kernelbrain::report {

/// What a page is made of besides the journals.
struct page_inputs {
  std::string title;               ///< the page's title (HTML-escaped on the page)
  std::string chartjs;             ///< Chart.js's UMD build (chart.min.js), inlined
  std::string generated;           ///< when the page was made (UTC, ISO 8601)
  std::string nonce;               ///< the Content-Security-Policy nonce of the page's scripts (new_nonce())
  std::string over = "reference";  ///< what the progress curves are a speed-up over (report_data's `over`)
};

/// The whole page.
[[nodiscard]] std::string html_page(std::vector<loaded_journal> const& journals, page_inputs const& in);

/// "3.9.1" from Chart.js's banner comment ("Chart.js v3.9.1"), or "unknown".
[[nodiscard]] std::string chartjs_version(std::string const& chartjs);

/// 128 random bits as 32 hex digits, for the Content-Security-Policy nonce.
[[nodiscard]] std::string new_nonce();

/// JSON inside <script type="application/json">: '<', '>', '&', U+2028 and U+2029 as \uXXXX, so that
/// nothing in it can end the element or open a comment.
[[nodiscard]] std::string json_for_script(std::string const& json);
/// A script's text inside <script>: "</script" (any case) as "<\/script", "<!--" as "<\!--".
[[nodiscard]] std::string script_text(std::string const& js);
/// Text for HTML: & < > " ' as entities.
[[nodiscard]] std::string html_text(std::string_view s);

}  // namespace kernelbrain::report
