// Backends by name: what the rest of KernelBrain may know about a backend without knowing its type
// (backend_traits), and how to build its evaluator (a factory), kept in one process-wide registry.
//
// The CLI, the MPI pool, record, report, export and the prompt builder ask the registry; no code outside
// a backend and this registry compares a backend's name. The built-in backends (synthetic, host, cuda,
// replay) are listed from the start with their traits; their factories come with
// <kernelbrain/backends/builtin.hpp> (which pulls in the evaluators, so that this header stays light).
// A program adds its own backend with backends().add(traits, factory): docs/writing-a-backend.md.
#pragma once
#include <algorithm>
#include <any>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/backends/builtin_traits.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/problem.hpp"

namespace kernelbrain {

/// What a factory is given to build one evaluator.
struct backend_request {
  problem const* prob = nullptr;  ///< the problem (never null when the registry calls a factory)
  std::string device;             ///< one of the backend's devices(), or "" for its default
  /// A sweep for a recording: the backend may leave out per-candidate analyses whose cost would
  /// dominate it (the CUDA backend: compute-sanitizer and Nsight Compute).
  bool recording = false;
  /// What a backend needs besides the problem: the synthetic backend a synthetic_landscape const*,
  /// the replay backend a recording const*. Empty for host and CUDA.
  std::any context;
  /// Time PyTorch eager and torch.compile beside the reference where the backend can (CUDA: a Python
  /// with torch, backends/common/pytorch_baseline.hpp); false: do not (tune --no-pytorch). Sweeps never do.
  bool pytorch = true;
  double pytorch_timeout = 600;  ///< seconds the PyTorch run may take (tune shortens it under --wall)
};

/// A problem a backend made from a name or a file rather than a problem directory (the synthetic
/// backend's "synthetic:<seed>", the replay backend's recording), with what its evaluators need.
struct opened_problem {
  std::string backend;  ///< who opened it
  std::string label;    ///< how searches and tables name it ("synthetic:7")
  std::shared_ptr<problem const> prob;
  std::any context;                  ///< for backend_request::context; points into `keep`
  std::shared_ptr<void const> keep;  ///< owns what `context` points to
};

class backend_registry {
 public:
  using factory = std::function<std::unique_ptr<evaluator>(backend_request const&)>;
  using device_lister = std::function<std::vector<std::string>()>;
  using note_maker = std::function<std::string()>;
  /// Opens `spec` if it names one of the backend's own problems (nullopt otherwise); throws
  /// kernelbrain::error for one that is its own but malformed ("synthetic:x").
  using opener = std::function<std::optional<opened_problem>(std::string const& spec)>;

  /// Registers a backend: its traits and, optionally already, its factory. Throws kernelbrain::error
  /// for an empty or taken name.
  backend_registry& add(backend_traits t, factory make = {}, device_lister devices = {}, note_maker isolation = {}) {
    std::lock_guard lk(mu_);
    if (t.name.empty()) throw error("backend_registry: a backend needs a non-empty name");
    if (entries_.contains(t.name)) throw error("backend_registry: backend '" + t.name + "' is already registered");
    std::string name = t.name;
    entries_.emplace(std::move(name),
                     entry{std::move(t), std::move(make), std::move(devices), std::move(isolation), {}, {}});
    return *this;
  }
  /// Gives a registered backend its factory (and device lister and isolation note), replacing any it had.
  backend_registry& provide(std::string const& name, factory make, device_lister devices = {},
                            note_maker isolation = {}) {
    std::lock_guard lk(mu_);
    auto& e = get(name);
    e.make = std::move(make);
    if (devices) e.devices = std::move(devices);
    if (isolation) e.isolation = std::move(isolation);
    return *this;
  }
  /// Gives backend `name` an opener: the problems it makes from a name or a file (open()).
  backend_registry& provide_opener(std::string const& name, opener open) {
    std::lock_guard lk(mu_);
    get(name).open = std::move(open);
    return *this;
  }
  /// The problem `spec` names for a backend with an opener: `backend`'s if given (nullopt if it does not
  /// claim it), else the first backend's that claims it. nullopt: `spec` is a problem directory or a
  /// built-in problem's name, for problem_directory().
  [[nodiscard]] std::optional<opened_problem> open(std::string const& spec, std::string const& backend = {}) const {
    std::vector<std::pair<std::string, opener>> openers;
    {
      std::lock_guard lk(mu_);
      for (auto const& [n, e] : entries_)
        if (e.open && (backend.empty() || n == backend)) openers.emplace_back(n, e.open);
    }
    for (auto const& [n, o] : openers)
      if (auto opened = o(spec)) {
        opened->backend = n;
        return opened;
      }
    return std::nullopt;
  }
  /// Adds a folder of built-in problems for backend `name` (searched after its problems_env folder).
  backend_registry& add_problem_root(std::string const& name, std::filesystem::path root) {
    std::lock_guard lk(mu_);
    get(name).roots.push_back(std::move(root));
    if (std::find(root_order_.begin(), root_order_.end(), name) == root_order_.end()) root_order_.push_back(name);
    return *this;
  }

  [[nodiscard]] bool contains(std::string_view name) const {
    std::lock_guard lk(mu_);
    return entries_.find(name) != entries_.end();
  }
  /// Every registered name, sorted.
  [[nodiscard]] std::vector<std::string> names() const {
    std::lock_guard lk(mu_);
    std::vector<std::string> out;
    for (auto const& [n, e] : entries_) out.push_back(n);
    return out;
  }
  /// "cuda, host, replay and synthetic": for messages.
  [[nodiscard]] std::string names_text() const {
    const auto n = names();
    std::string out;
    for (std::size_t i = 0; i < n.size(); ++i) out += (i == 0 ? "" : i + 1 == n.size() ? " and " : ", ") + n[i];
    return out;
  }
  /// One line per backend, as `kernelbrain list-backends` prints it: name, description, what its
  /// candidates are written in, and whether this program can build its evaluators.
  [[nodiscard]] std::string listing() const {
    std::lock_guard lk(mu_);
    std::string out;
    for (auto const& [n, e] : entries_) {
      std::string what = e.traits.language.empty() ? "no sources" : e.traits.language;
      if (e.traits.launch_plan) what += " + launch plan";
      out += n + std::string(n.size() < 12 ? 12 - n.size() : 1, ' ') + e.traits.description + " [" + what +
             (e.make ? "" : "; no factory in this program") + "]\n";
    }
    return out;
  }
  /// The traits of `name`. Throws kernelbrain::error for an unknown name, listing the known ones.
  [[nodiscard]] backend_traits traits(std::string_view name) const {
    std::lock_guard lk(mu_);
    return get(name).traits;
  }
  /// The traits of the backend a problem names (the synthetic backend for a problem naming none).
  [[nodiscard]] backend_traits traits_of(problem const& p) const {
    return traits(p.backend.empty() ? std::string_view("synthetic") : std::string_view(p.backend));
  }
  /// The backend whose evaluators made fingerprint `fp` (the longest matching prefix); nullopt if none.
  [[nodiscard]] std::optional<backend_traits> for_fingerprint(std::string_view fp) const {
    std::lock_guard lk(mu_);
    entry const* best = nullptr;
    for (auto const& [n, e] : entries_)
      if (!e.traits.fingerprint_prefix.empty() && fp.starts_with(e.traits.fingerprint_prefix) &&
          (!best || e.traits.fingerprint_prefix.size() > best->traits.fingerprint_prefix.size()))
        best = &e;
    return best ? std::optional<backend_traits>(best->traits) : std::nullopt;
  }
  /// The backend that measured what fingerprint `fp` describes: for_fingerprint(), looking through a
  /// backend that wraps another's fingerprint (replay/cuda/... is cuda's).
  [[nodiscard]] std::optional<backend_traits> origin_of_fingerprint(std::string_view fp) const {
    auto t = for_fingerprint(fp);
    while (t && t->wraps_fingerprint && fp.size() > t->fingerprint_prefix.size()) {
      fp.remove_prefix(t->fingerprint_prefix.size());
      t = for_fingerprint(fp);
    }
    return t;
  }
  /// The folder of problem `spec`: `spec` itself when it is a directory or a file, else the folder of that
  /// name in problem_roots of `backend` first, then of every backend (all_problem_roots). Throws
  /// kernelbrain::error naming the built-in problems it knows.
  [[nodiscard]] std::filesystem::path problem_directory(std::string const& spec,
                                                        std::string const& backend = {}) const {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(spec, ec) || fs::is_regular_file(spec, ec)) return spec;
    const auto roots = all_problem_roots(backend);
    for (auto const& r : roots)
      if (fs::is_directory(r / spec, ec)) return r / spec;
    std::string known;
    for (auto const& r : roots)
      if (fs::is_directory(r, ec))
        for (auto const& e : fs::directory_iterator(r, ec))
          if (fs::exists(e.path() / "problem.json", ec))
            known += (known.empty() ? "" : ", ") + e.path().filename().string();
    throw error("problem '" + spec + "' is neither a directory nor a built-in problem " +
                (known.empty() ? std::string("(no built-in problems found; set KERNELBRAIN_PROBLEMS)")
                               : "(built-in: " + known + ")"));
  }
  /// The devices of `name` one process can time on (one evaluator each); empty: one, the default.
  [[nodiscard]] std::vector<std::string> devices(std::string const& name) const {
    device_lister l;
    {
      std::lock_guard lk(mu_);
      l = get(name).devices;
    }
    return l ? l() : std::vector<std::string>{};
  }
  /// The key of `device` of backend `name`: pool members with one key take turns timing.
  [[nodiscard]] std::string device_key(std::string const& name, std::string const& device) const {
    const auto t = traits(name);
    if (t.device_kind.empty()) return name;
    if (t.device_kind == "cpu") return "cpu";
    return t.device_kind + ":" + (device.empty() ? std::string("0") : device);
  }
  /// One line on how the backend isolates what candidates run (the host's sandbox); empty if it says nothing.
  [[nodiscard]] std::string isolation(std::string const& name) const {
    note_maker n;
    {
      std::lock_guard lk(mu_);
      n = get(name).isolation;
    }
    return n ? n() : std::string{};
  }
  /// Every backend's folders of built-in problems: `first`'s (if given), then the backends in the order
  /// their folders were added, then the other backends that run problem files.
  [[nodiscard]] std::vector<std::filesystem::path> all_problem_roots(std::string const& first = {}) const {
    std::vector<std::string> order;
    if (!first.empty() && contains(first)) order.push_back(first);
    {
      std::lock_guard lk(mu_);
      order.insert(order.end(), root_order_.begin(), root_order_.end());
      for (auto const& [n, e] : entries_)
        if (e.traits.problem_files) order.push_back(n);
    }
    std::vector<std::filesystem::path> out;
    for (auto const& n : order)
      for (auto const& r : problem_roots(n))
        if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
    return out;
  }
  /// Folders of `name`'s built-in problems: its problems_env variable's, then those added.
  [[nodiscard]] std::vector<std::filesystem::path> problem_roots(std::string const& name) const {
    std::lock_guard lk(mu_);
    auto const& e = get(name);
    std::vector<std::filesystem::path> out;
    if (!e.traits.problems_env.empty())
      if (char const* env = std::getenv(e.traits.problems_env.c_str()); env && *env) out.emplace_back(env);
    out.insert(out.end(), e.roots.begin(), e.roots.end());
    return out;
  }

  /// Builds an evaluator of backend `name` for `req`. Throws kernelbrain::error for an unknown name, a
  /// backend without a factory in this program, or a problem written for another backend; and whatever
  /// the factory throws.
  [[nodiscard]] std::unique_ptr<evaluator> make(std::string const& name, backend_request const& req) const {
    if (!req.prob) throw error("backend_registry: backend '" + name + "' was asked for an evaluator without a problem");
    factory f;
    backend_traits t;
    {
      std::lock_guard lk(mu_);
      auto const& e = get(name);
      f = e.make;
      t = e.traits;
    }
    if (!f)
      throw error("backend '" + name +
                  "' is known, but this program has no factory for it: include <kernelbrain/backends/builtin.hpp> "
                  "(built-in backends) or register one with backends().provide()");
    if (t.problem_files && req.prob->backend != name)
      throw error("problem '" + req.prob->name + "' is written for the " +
                  (req.prob->backend.empty() ? std::string("synthetic") : req.prob->backend) + " backend, not " + name +
                  ": use --backend " + (req.prob->backend.empty() ? "synthetic" : req.prob->backend));
    auto ev = f(req);
    if (!ev) throw error("backend '" + name + "': its factory made no evaluator");
    return ev;
  }

 private:
  struct entry {
    backend_traits traits;
    factory make;
    device_lister devices;
    note_maker isolation;
    std::vector<std::filesystem::path> roots;
    opener open;
  };
  entry& get(std::string_view name) { return const_cast<entry&>(std::as_const(*this).get(name)); }
  entry const& get(std::string_view name) const {
    auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    std::string known;
    for (auto const& [n, e] : entries_) known += (known.empty() ? "" : ", ") + n;
    throw error("unknown backend '" + std::string(name) + "'; known backends: " + (known.empty() ? "(none)" : known));
  }
  mutable std::mutex mu_;
  std::map<std::string, entry, std::less<>> entries_;
  std::vector<std::string> root_order_;  ///< backends in the order their first problem folder was added
};

/// The process-wide registry: the built-in backends' traits from the start (their factories come with
/// <kernelbrain/backends/builtin.hpp>), and whatever the program adds.
[[nodiscard]] inline backend_registry& backends() {
  static backend_registry r;
  static const bool builtins = [] {
    for (auto& t : builtin_backend_traits()) r.add(std::move(t));
    return true;
  }();
  (void)builtins;
  return r;
}

}  // namespace kernelbrain
