// backend_traits: what the rest of KernelBrain may know about a backend without knowing its type
// (its language, code fence, launch plans, fingerprint, devices, answer format). A backend declares
// them once, where it is registered (backends/registry.hpp); everything else asks for them.
#pragma once
#include <functional>
#include <string>
#include "kernelbrain/core/problem.hpp"

namespace kernelbrain {

/// What a search, a prompt, a report or the problem loader needs to know about a backend.
struct backend_traits {
  std::string name;         ///< what --backend and problem.json's "backend" say: "host"
  std::string description;  ///< one line for `kernelbrain list-backends`
  /// What candidates are written in ("C++", "CUDA"); empty for a backend whose candidates have no
  /// source (synthetic, replay): a model cannot write for it.
  std::string language;
  std::string fence;         ///< the code-fence tag of candidate sources in prompts and replies ("cpp")
  bool launch_plan = false;  ///< candidates are kernels a launch plan (JSON) launches, found by `__global__`
  /// Runs problems read from problem.json files whose "backend" names it (host, cuda); false for a
  /// backend that builds its problem otherwise (synthetic: a landscape; replay: a recording).
  bool problem_files = true;
  int min_dim = 1;                 ///< the smallest value a problem's dims may take at a shape
  std::string fingerprint_prefix;  ///< its evaluators' fingerprints start with this ("host/")
  /// Device keys: members of a pool on one device take turns timing. "cpu" for the host; "cuda" gives
  /// "cuda:<device>"; empty: each member is its own device (nothing real is timed).
  std::string device_kind;
  std::string problems_env;  ///< the environment variable naming a folder of its built-in problems
  bool exports = false;      ///< kernelbrain export turns its kernels into a program and a PyTorch module
  /// Its evaluators profile at rungs that ask for it and attach a diagnosis (cuda); a prompt about a
  /// kernel of a backend without a profiler (host) says so rather than promising a diagnosis later.
  bool profiles = false;
  /// The answer-format section of a prompt for problem `p` (the rules a model's source must follow).
  std::function<std::string(problem const&)> answer_format;
  /// Its fingerprints are another backend's behind its prefix (replay: "replay/" + the recorded one):
  /// backend_registry::origin_of_fingerprint looks through it.
  bool wraps_fingerprint = false;
  /// What `check` says about comparing the problem's reference with a float64 computation.
  std::string float64_note;
};

}  // namespace kernelbrain
