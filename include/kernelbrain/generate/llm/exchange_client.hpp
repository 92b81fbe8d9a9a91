// The exchange client: a model that answers through files, for machines that cannot reach an API. Each
// prompt is written to a folder as prompt-<key>-<n>.md; its answer is read from answer-<key>-<n>.md in
// the same folder, written by anyone (a person, a batch job, a coding agent). Writers should write the
// answer under another name and rename it into place; a file whose size still changes is not read yet.
//
// Two modes. wait: complete() polls until the answer exists (or the timeout passes: status failed).
// suspend: complete() returns call_status::waiting at once when there is no answer; the generator then
// stops the search with "waiting for N answers", everything measured is in the journal, and the same
// command with --resume continues once the answers exist. The endpoint reports no usage, so token
// counts are estimates (labelled so).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/generate/llm/model_client.hpp"

namespace kernelbrain::llm {

struct exchange_options {
  std::filesystem::path folder;
  bool suspend = true;              ///< true: no answer yet -> waiting; false: poll until it comes
  double wait_timeout_seconds = 0;  ///< wait mode: give up after this long (0 = wait for ever)
  double poll_seconds = 0.25;
  std::size_t concurrency = 64;  ///< prompts written at once (a person or agent answers in any order)
  std::size_t max_answer_bytes = std::size_t{4} << 20;  ///< a longer answer is cut there and reported
};

class exchange_client final : public model_client {
 public:
  explicit exchange_client(exchange_options o) : opt_(std::move(o)) {
    std::error_code ec;
    std::filesystem::create_directories(opt_.folder, ec);
    if (!std::filesystem::is_directory(opt_.folder))
      throw error("exchange folder '" + opt_.folder.string() + "' cannot be created" +
                  (ec ? ": " + ec.message() : std::string()));
  }

  [[nodiscard]] static std::string stem(chat_request const& r) {
    return r.prompt.key() + "-" + std::to_string(r.occurrence);
  }
  [[nodiscard]] std::filesystem::path prompt_path(chat_request const& r) const {
    return opt_.folder / ("prompt-" + stem(r) + ".md");
  }
  [[nodiscard]] std::filesystem::path answer_path(chat_request const& r) const {
    return opt_.folder / ("answer-" + stem(r) + ".md");
  }

  /// The text of a prompt file: the system part, then the user part, each under a heading.
  [[nodiscard]] static std::string prompt_text(prompt const& p) {
    return "# System\n\n" + p.system + "\n\n# User\n\n" + p.user + "\n";
  }

  chat_reply complete(chat_request const& r) override {
    const auto start = std::chrono::steady_clock::now();
    write_prompt(r);
    chat_reply out;
    out.model = "exchange";
    out.attempts = 1;
    const auto answer = answer_path(r);
    for (;;) {
      if (auto text = read_stable(answer)) {
        out.status = call_status::ok;
        if (text->size() > opt_.max_answer_bytes) {
          text->resize(opt_.max_answer_bytes);
          out.status = call_status::cut;
          out.error = "answer file over " + std::to_string(opt_.max_answer_bytes) + " bytes: cut there";
        }
        out.text = std::move(*text);
        break;
      }
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (opt_.suspend) {
        out.status = call_status::waiting;
        out.error = "answers go in " + opt_.folder.string() + ", e.g. " + answer.filename().string();
        return out;
      }
      if (opt_.wait_timeout_seconds > 0 && waited >= opt_.wait_timeout_seconds) {
        out.status = call_status::failed;
        out.error = "no answer file " + answer.filename().string() + " after " + std::to_string(waited) + " s";
        return out;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(opt_.poll_seconds));
    }
    out.usage.estimated = true;
    out.usage.input = estimate_tokens(r.prompt.system) + estimate_tokens(r.prompt.user);
    out.usage.output = estimate_tokens(out.text);
    out.latency_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

  [[nodiscard]] std::size_t concurrency() const override { return opt_.concurrency; }
  [[nodiscard]] std::string describe() const override {
    return std::string("exchange folder ") + opt_.folder.string() + (opt_.suspend ? " (suspend)" : " (wait)");
  }

 private:
  void write_prompt(chat_request const& r) {
    const auto path = prompt_path(r);
    std::lock_guard lk(mu_);
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return;  // written by an earlier (suspended) run: same content
    const auto tmp = path.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      out << prompt_text(r.prompt);
      if (!out) throw error("cannot write prompt file '" + tmp + "'");
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw error("cannot rename '" + tmp + "' to '" + path.string() + "': " + ec.message());
  }

  /// The file's text when it exists and its size did not change over a short look.
  std::optional<std::string> read_stable(std::filesystem::path const& p) const {
    std::error_code ec;
    const auto size = std::filesystem::file_size(p, ec);
    if (ec) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (std::filesystem::file_size(p, ec) != size || ec) return std::nullopt;
    std::ifstream in(p, std::ios::binary);
    if (!in) return std::nullopt;
    std::string text;
    text.resize(std::min<std::uintmax_t>(size, opt_.max_answer_bytes + 1));
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
  }

  exchange_options opt_;
  std::mutex mu_;
};

}  // namespace kernelbrain::llm
