// kernelbrain tune: search a problem's kernel space with a named strategy within a budget, journal the
// run (JSONL) and resume it after a kill, print a summary and the best kernel's per-shape times.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/builtin.hpp>
#include <kernelbrain/generate/llm/prompt_builder.hpp>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>
#include "commands.hpp"
#include "pool.hpp"
#include "progress.hpp"

namespace kernelbrain::cli {

namespace {

constexpr char const* tune_footer =
    R"(Problems: a problem directory (holding problem.json), the name of a built-in problem
(softmax, rmsnorm, matvec: the host versions in examples/problems/; with --backend cuda, or for
names only the CUDA set has, the CUDA problems in examples/cuda_problems/), or for the synthetic
backend synthetic / synthetic:<landscape seed> (default 7).

Examples:
  kernelbrain tune softmax --budget 60evals
  kernelbrain tune examples/problems/matvec --budget 2m --journal matvec.jsonl
  kernelbrain tune synthetic --budget 300evals --journal run.jsonl
  kernelbrain tune synthetic --budget 300evals --journal run.jsonl --resume   # after a kill)";

/// For each problem shape, the candidate with the lowest median time at that shape among those
/// measured at the top rung (every shape, most samples): what "the best kernel of each shape" means.
class per_shape_best final : public observer {
 public:
  struct entry {
    candidate cand;
    double median = 0;
    double reference = 0;
  };
  void on_event(event const& e, search_view const& v) override {
    if (e.kind != event_kind::measured || e.rung + 1 != v.rungs().size()) return;
    auto const* rec = v.find(e.id);
    if (!rec || !rec->results[e.rung]) return;
    for (auto const& t : rec->results[e.rung]->timings) {
      auto& slot = best_[t.shape];
      if (!slot || t.stats.median < slot->median)
        slot = entry{rec->cand, t.stats.median, v.baseline().seconds[t.shape]};
    }
  }
  [[nodiscard]] std::map<std::size_t, std::optional<entry>> const& best() const noexcept { return best_; }

 private:
  std::map<std::size_t, std::optional<entry>> best_;
};

/// The best kernel of each shape as bench/side_by_side.py --kernels reads it: {"kernels": [{..., "shape"}]}
/// (empty when nothing passed the top rung).
void write_best(std::filesystem::path const& file, problem const& prob, per_shape_best const& per_shape) {
  namespace json = boost::json;
  json::array kernels;
  for (auto const& [shape_index, e] : per_shape.best()) {
    if (!e) continue;
    auto const& c = e->cand;
    json::object k;
    k["problem_dir"] = prob.directory;
    k["problem"] = prob.name;
    k["shape"] = prob.shapes[shape_index].name;
    k["family"] = c.family;
    json::object params;
    for (auto const& [name, v] : c.params) params[name] = v;
    k["params"] = std::move(params);
    k["candidate"] = c.id.str();
    k["origin"] = c.origin;
    k["source"] = c.source;
    try {
      k["launch"] = json::parse(c.launch);
    } catch (std::exception const&) {
      k["launch"] = c.launch;
    }
    k["speedup_vs_reference"] = e->reference / e->median;
    kernels.push_back(std::move(k));
  }
  json::object doc;
  doc["kernels"] = std::move(kernels);
  std::ofstream out(file);
  out << json::serialize(doc) << "\n";
  if (!out) throw error("--best-out: cannot write " + file.string());
}

/// The command that makes the HTML report of a journal (docs/report.md), with the path as given:
/// "kernelbrain report run.jsonl -o run.html".
std::string report_command(std::filesystem::path const& journal) {
  std::string page = journal.string();
  if (page.ends_with(".jsonl")) page.resize(page.size() - 6);
  page += ".html";
  auto shell = [](std::string const& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:=+@%") ==
                          std::string::npos)
      return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  return "kernelbrain report " + shell(journal.string()) + " -o " + shell(page);
}

/// The search itself, on rank 0 (or without MPI): pool, model, journal, search, summary.
int search_and_report(tune_options const& o, problem const& prob, std::string const& backend,
                      std::string const& problem_name, std::any const& context, mpi_job* job);

/// "cuda:0, cuda:1 (2 members)".
std::string describe(evaluator_pool const& pool) {
  std::string out;
  for (auto const& m : pool.members()) out += (out.empty() ? "" : ", ") + m.label;
  return fmt::format("{} ({} members)", out, pool.size());
}

}  // namespace

void add_builtin_problem_roots() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (auto self = fs::read_symlink("/proc/self/exe", ec); !ec)  // installed
    backends().add_problem_root("host", self.parent_path().parent_path() / "share" / "kernelbrain" / "problems");
#ifdef KERNELBRAIN_PROBLEMS_DIR
  backends().add_problem_root("host", KERNELBRAIN_PROBLEMS_DIR);  // the source tree this CLI was built from
#endif
#ifdef KERNELBRAIN_CUDA_PROBLEMS_DIR
  backends().add_problem_root("cuda", KERNELBRAIN_CUDA_PROBLEMS_DIR);
#endif
}

/// A problem directory: the argument itself, or a built-in problem's directory: first in the folders of
/// `backend` (the registry's problem_roots: its environment variable's, the installed share/ folder, the
/// source tree's), then in every other backend's.
std::filesystem::path problem_directory(std::string const& spec, std::string const& backend) {
  try {
    return backends().problem_directory(spec, backend);
  } catch (error const& e) {
    throw usage_error(e.what());
  }
}

std::string problem_backend(problem const& prob, std::string const& asked, std::string const& command) {
  std::string backend = asked.empty() ? prob.backend : asked;
  if (!backends().traits(backend).problem_files)
    throw usage_error(fmt::format("{} runs problem directories; the {} backend runs none ('{}'): use --backend {}",
                                  command, backend, prob.name, prob.backend));
  return backend;
}

subcommand register_tune(CLI::App& app) {
  auto* cmd = app.add_subcommand("tune", "search a problem's kernel implementations within a budget");
  cmd->footer(tune_footer);
  auto arguments = std::make_shared<tune_arguments>(*cmd);
  return {cmd, [arguments] { return run_tune(arguments->finish()); }};
}

int run_tune(tune_options const& o) {
  // A problem a backend opens itself (synthetic:<seed>, a recording), else a problem directory.
  std::optional<opened_problem> opened;
  try {
    opened = backends().open(o.problem);
  } catch (error const& e) {
    throw usage_error(e.what());
  }
  std::optional<problem> loaded;
  if (opened) {
    if (!o.focus.empty())
      throw usage_error(fmt::format("--focus names shapes of a problem directory; '{}' ({} backend) has none to choose",
                                    o.problem, opened->backend));
    if (!o.backend.empty() && o.backend != opened->backend)
      throw usage_error(fmt::format("the {} backend needs a problem directory, not '{}' (a problem of the {} backend)",
                                    o.backend, o.problem, opened->backend));
  } else {
    loaded = load_problem(problem_directory(o.problem, o.backend));
    if (!o.focus.empty()) {
      try {
        loaded = focused_on(std::move(*loaded), o.focus);
      } catch (error const& e) {
        throw usage_error(std::string("--focus: ") + e.what());
      }
    }
  }
  problem const& prob = opened ? *opened->prob : *loaded;
  const std::string backend = opened ? opened->backend : problem_backend(prob, o.backend, "tune");
  const std::string problem_name = opened ? opened->label : prob.name;
  const std::any context = opened ? opened->context : std::any{};

  // Under --mpi every rank runs this command: rank 0 searches, the others serve their members.
  std::optional<mpi_job> job;
  if (o.mpi) job.emplace(o.mpi_lost_after);
  if (job && job->rank() != 0) {
    local_pool serving;
    try {
      serving = make_local_pool(prob, backend, o, context);
    } catch (std::exception const& e) {
      job->refuse(e.what());
      return exit_usage;
    }
    job->serve(serving.pool, prob, problem_name);
    return exit_ok;
  }
  try {
    return search_and_report(o, prob, backend, problem_name, context, job ? &*job : nullptr);
  } catch (std::exception const& e) {
    if (!job) throw;
    // The other ranks wait for this one: say what went wrong, then end the whole job.
    fmt::print(stderr, "kernelbrain: error (MPI rank 0): {}\n", e.what());
    job->abort(dynamic_cast<error const*>(&e) ? exit_usage : exit_internal);
  }
}

namespace {

/// What a model may spend when the budget does not say: per evaluation the budget allows, one prompt
/// of this problem's size and half a reply at the reply limit in tokens (what long replies spend), and
/// four candidates, a model exchange that gave none counting as one (what short replies are held to: a
/// model that never writes code is sent about four prompts per evaluation). A device-time budget counts
/// as one evaluation per half second. Zeros: no evaluation or device limit to derive them from.
struct model_caps {
  std::uint64_t tokens = 0, candidates = 0;
  std::string reason;
};
model_caps derived_model_caps(budget const& limits, std::uint64_t prompt_tokens, std::size_t max_tokens) {
  double evaluations = 0;
  std::string from;
  if (limits.evaluations > 0) {
    evaluations = static_cast<double>(limits.evaluations);
    from = fmt::format("{} evaluations", limits.evaluations);
  } else if (limits.device_seconds > 0) {
    evaluations = limits.device_seconds / 0.5;
    from = fmt::format("{:g} device seconds as {:.0f} evaluations of 0.5 s", limits.device_seconds, evaluations);
  } else {
    return {};
  }
  const double per = static_cast<double>(prompt_tokens) + static_cast<double>(max_tokens) / 2;
  model_caps c;
  c.tokens = static_cast<std::uint64_t>(std::ceil(evaluations * per));
  c.candidates = static_cast<std::uint64_t>(std::ceil(4 * evaluations));
  c.reason = fmt::format("{} x (a prompt of ~{} tokens + half the {}-token reply limit; 4 candidates)", from,
                         prompt_tokens, max_tokens);
  return c;
}

int search_and_report(tune_options const& o, problem const& prob, std::string const& backend,
                      std::string const& problem_name, std::any const& context, mpi_job* job) {
  local_pool local = job ? make_local_pool(prob, backend, o, context, "rank 0 ", job->node())
                         : make_local_pool(prob, backend, o, context);
  if (job) job->connect(local.pool, problem_name);
  evaluator_pool const& pool = local.pool;

  // The model, if any: what the journal being resumed recorded answers first, so nothing is asked twice.
  std::string model_text;
  std::shared_ptr<model_setup const> model;
  if (o.model.any()) {
    if (o.model.exchange && !o.model.exchange_wait && !o.journal)
      throw usage_error(
          "--exchange stops the search to wait for answers: give --journal FILE so that --resume can continue it "
          "(or --exchange-wait SECONDS to wait instead)");
    if (backends().traits(backend).language.empty())
      throw usage_error(fmt::format("a model writes kernel sources; the {} backend's candidates have none", backend));
    std::vector<model_exchange> resumed;
    if (o.resume && o.journal && std::filesystem::exists(*o.journal))
      for (auto const& je : read_journal(*o.journal).exchanges) resumed.push_back(je.x);
    model = make_model(o.model, resumed, model_text, prob);
    fmt::print(stderr, "model: {}\n", model_text);
    if (auto iso = backends().isolation(backend); !iso.empty())
      fmt::print(stderr, "{} candidates written by the model run natively, each in a process of its own under {}\n",
                 backend, iso);
  }
  any_policies pol = model ? builtin_strategies(model).make(o.strategy.name, prob, o.strategy.options)
                           : registry().make(o.strategy.name, prob, o.strategy.options);
  const auto rungs = pol.ladder.rungs();
  const std::vector<rung> ladder(rungs.begin(), rungs.end());
  // A run with a model is another search than the same strategy without one: the header says so.
  const std::string strategy_text = o.strategy.canonical() + (model ? "+model" : "");
  const run_header header{problem_name, strategy_text, o.seed, pool.fingerprint(), ladder_digest(ladder)};

  std::optional<jsonl_journal> journal;
  search_options so;
  so.seed = o.seed;
  so.limits = o.limits;
  if (model && !o.model.recorded) {
    // Every budget bounds what the model may spend: a search limited only in evaluations or device
    // time gets caps derived from it, said here (a wall limit stops the model's requests at the wall).
    const auto sample = llm::prompt_builder(model->templates).sample(prob);
    const auto prompt_tokens = llm::estimate_tokens(sample.system) + llm::estimate_tokens(sample.user);
    const auto caps = derived_model_caps(so.limits, prompt_tokens, o.model.max_tokens);
    std::vector<std::string> set;
    if (caps.tokens > 0 && so.limits.llm_tokens == 0 && so.limits.llm_cost == 0) {
      so.limits.llm_tokens = caps.tokens;
      set.push_back(fmt::format("{} tokens", caps.tokens));
    }
    if (caps.candidates > 0 && so.limits.candidates == 0) {
      so.limits.candidates = caps.candidates;
      set.push_back(fmt::format("{} candidates (a model exchange that gives none counts as one)", caps.candidates));
    }
    if (!set.empty())
      fmt::print(stderr,
                 "model spending capped at {} (derived from the budget: {}; give a limit to set it, e.g. "
                 "--budget ...,{}ktokens,{}cands)\n",
                 fmt::join(set, " and "), caps.reason, (caps.tokens + 999) / 1000, caps.candidates);
  }
  so.max_in_flight = o.in_flight;
  so.on_pool_note = [](std::string const& note) { fmt::print(stderr, "\nnote: {}\n", note); };
  if (pool.size() > 1)
    fmt::print(stderr, "evaluation pool: {} (in flight: {})\n", describe(pool), effective_in_flight(so, pool.size()));
  if (o.journal) {
    journal.emplace(*o.journal, header, o.limits, o.resume ? journal_mode::resume : journal_mode::create);
    so.journal = &*journal;
    so.resume = journal->resumed();
    if (o.resume) {
      auto const& info = journal->resume_info();
      fmt::print(stderr, "resuming {}: {} finished evaluations will be reused\n", o.journal->string(), info.outcomes);
      if (info.torn_bytes > 0)
        fmt::print(stderr, "note: dropped a torn last line ({} bytes) left by the interrupted run\n", info.torn_bytes);
      if (info.budget_changed)
        fmt::print(stderr,
                   "note: the budget differs from the journal's, so the search may take other turns: "
                   "its events are written again from the start (finished evaluations are still reused)\n");
    }
  }
  progress_line progress(o.progress.value_or(::isatty(STDERR_FILENO) == 1));
  so.observers.push_back(&progress);
  per_shape_best shape_best;
  so.observers.push_back(&shape_best);

  search_result r;
  // No model request runs past the wall limit (with a few seconds for the search to wind down).
  if (model && o.limits.wall_seconds > 0)
    model->client->set_deadline(std::chrono::steady_clock::now() +
                                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(o.limits.wall_seconds)));
  try {
    r = search(prob, std::move(pol), pool, so);
  } catch (...) {
    progress.finish();
    throw;
  }
  progress.finish();
  if (journal) journal->throw_if_failed();
  run_description run;
  run.problem_name = problem_name;
  run.backend = backend;
  run.strategy = strategy_text;
  run.model = model_text;
  run.seed = o.seed;
  run.budget_text = o.budget_text;
  run.backend_note = backend_note(local);
  print_summary(run, r, progress, ladder, journal ? &*journal : nullptr);
  print_shapes(prob, r);
  if (o.best_out) write_best(*o.best_out, prob, shape_best);
  if (o.journal) fmt::print("\nreport: {}\n", report_command(*o.journal));
  if (job) {
    if (job->lost_ranks() > 0)
      fmt::print(stderr, "note: {} MPI rank(s) were lost during the search\n", job->lost_ranks());
    job->shutdown();
  }
  if (r.model_failed) {
    fmt::print(stderr, "\nkernelbrain: the search stopped: {}\n{}\n", r.stop_reason,
               o.journal ? "fix the endpoint or the options, then run the same command with --resume"
                         : "(without --journal FILE nothing of this run is kept)");
    return exit_model_failed;
  }
  if (r.suspended) {
    fmt::print(stderr, "\nsuspended: {}\nanswer the prompts, then run the same command with --resume{}\n",
               r.stop_reason, o.journal ? "" : " (and --journal FILE: without a journal nothing is kept)");
    return exit_suspended;
  }
  return exit_ok;
}

}  // namespace

}  // namespace kernelbrain::cli
