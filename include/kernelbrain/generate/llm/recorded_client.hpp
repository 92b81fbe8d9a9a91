// Recorded answers: a model client that answers from the exchanges a journal recorded, so a past search
// re-runs with no model and gives the same prompts, proposals and gate verdicts in the same order (not
// to be confused with a backend that replays measurements). Answers are keyed by the prompt's content
// key and its occurrence, so they are found whatever order the prompts come in. A prompt the recording
// does not hold goes to the fallback client when there is one (a resumed live search: what was answered
// before is not asked again) and otherwise comes back as call_status::waiting, which stops the search
// with the reason instead of inventing an answer.
#pragma once
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include "kernelbrain/core/model_exchange.hpp"
#include "kernelbrain/generate/llm/model_client.hpp"

namespace kernelbrain::llm {

class recorded_client final : public model_client {
 public:
  explicit recorded_client(std::span<model_exchange const> recorded, std::shared_ptr<model_client> fallback = {},
                           std::string source = "journal")
      : fallback_(std::move(fallback)), source_(std::move(source)) {
    for (auto const& x : recorded)
      if (x.status != "failed" && x.status != "cancelled")  // a failed or cancelled call is asked again
        answers_.insert_or_assign({x.key, x.occurrence}, x);
  }

  chat_reply complete(chat_request const& r) override {
    auto it = answers_.find({r.prompt.key(), r.occurrence});
    if (it == answers_.end()) {
      if (fallback_) return fallback_->complete(r);
      chat_reply out;
      out.status = call_status::waiting;
      out.error = "no recorded answer in " + source_ + " for prompt " + r.prompt.key() + " #" +
                  std::to_string(r.occurrence) + ": the search asked what the recorded run did not";
      return out;
    }
    auto const& x = it->second;
    chat_reply out;
    out.status = x.status == "cut" ? call_status::cut : call_status::ok;
    out.text = x.reply;
    out.usage = {x.input_tokens, x.output_tokens, x.estimated, x.cost};
    out.latency_seconds = 0;  // nothing was waited for
    out.attempts = 0;
    out.model = x.model;
    out.finish_reason = x.finish_reason;
    out.error = x.error;
    return out;
  }

  [[nodiscard]] std::size_t concurrency() const override { return fallback_ ? fallback_->concurrency() : 16; }
  [[nodiscard]] std::string describe() const override {
    return "recorded answers from " + source_ + " (" + std::to_string(answers_.size()) + ")" +
           (fallback_ ? ", then " + fallback_->describe() : std::string());
  }
  void set_deadline(std::chrono::steady_clock::time_point deadline) override {
    if (fallback_) fallback_->set_deadline(deadline);
  }
  std::vector<std::string> check(chat_request const& like) override {
    return fallback_ ? fallback_->check(like) : std::vector<std::string>{};
  }
  [[nodiscard]] std::size_t recorded() const noexcept { return answers_.size(); }

 private:
  std::map<std::pair<std::string, std::size_t>, model_exchange> answers_;
  std::shared_ptr<model_client> fallback_;
  std::string source_;
};

}  // namespace kernelbrain::llm
