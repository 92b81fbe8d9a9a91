// Exporting tuned kernels (docs/export.md): the best kernel of each tuned shape of a journal or a best.json
// as a standalone CUDA source with a C++ header, an example and a Makefile, and as a PyTorch package.
// load_model finds the best kernel of each tuned shape, loads the problem and its PyTorch declaration, resolves
// every launch plan at every tuned shape and builds an export_model; cuda_files writes the standalone CUDA
// files from it, torch_files the PyTorch package, package_files all of them with a README and a manifest.
// Nothing in the generated files is evaluated at run time: sizes, launch configurations and workspace
// offsets are numbers fixed here.
//
// Compiled into kernelbrain::tools (src/tools/export.cpp, export_cuda.cpp, export_torch.cpp): link it to
// use these. What the input or the problem gets wrong is thrown as kernelbrain::error, with the message
// `kernelbrain export` prints.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/core/problem.hpp"

namespace kernelbrain::exporting {

/// A problem's PyTorch declaration, as the export uses it: what its kernels mean in PyTorch terms (problem.json has
/// flat sizes only).
struct description {
  std::filesystem::path file;
  std::string function;  ///< the Python alias of forward, e.g. "softmax"
  std::string pytorch;   ///< the PyTorch expression over the tensor and attribute names
  /// Where the expression needs a newer PyTorch (e.g. scaled_dot_product_attention, 2.0): the attribute
  /// path it needs and the expression used where that is missing. Both empty when there is none.
  std::string compat_requires, compat_pytorch;
  std::map<std::string, std::vector<std::string>> views;        ///< tensor -> its sizes, expressions over dims
  std::vector<std::pair<std::string, std::string>> attributes;  ///< (dim, argument name), in file order
  std::string note;                                             ///< prose for the README, may be empty
};

/// One kernel argument of a launch, resolved: a buffer (inputs, outputs, scratch) or a dim's value.
struct launch_arg {
  bool buffer = false;
  std::int64_t value = 0;  ///< buffer index, or the dim's value
};

/// One launch of a plan at one shape, every number resolved.
struct launch_step {
  std::string kernel;  ///< the name in the plan (the candidate's)
  std::string entry;   ///< the renamed entry point in the exported source
  std::int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, cluster[3] = {1, 1, 1};
  std::int64_t smem = 0;
  std::vector<launch_arg> args;
};

/// One distinct kernel source, as it goes into the exported .cu (namespace kb_k<index>).
struct kernel_block {
  std::size_t index = 0;
  std::string original;                        ///< the candidate's source, as tuned
  std::string source;                          ///< with its entry points renamed
  std::vector<std::string> macros;             ///< every macro it #defines (#undef'd after it)
  std::map<std::string, std::string> entries;  ///< plan kernel name -> renamed entry point
  std::vector<std::string> candidates;         ///< candidate ids sharing this source
  std::vector<std::string> shapes;             ///< tuned shapes that use it
};

/// A tuned benchmark shape and the kernel chosen for it.
struct tuned_shape {
  std::string name;
  std::map<std::string, std::int64_t> dims;
  std::vector<std::vector<std::int64_t>> sizes;  ///< per tensor, inputs then outputs (the declaration's views)
  std::vector<std::int64_t> attributes;          ///< the attribute dims' values, in description order
  std::optional<double> speedup;                 ///< over the problem's reference kernel, as tuned
  std::optional<double> median_seconds;          ///< the kernel's median at the top rung (journals only)
  std::optional<double> reference_seconds;       ///< the reference's (journals only)
  std::optional<double> eager_seconds;           ///< PyTorch eager's, where the tuning run measured it
  std::optional<double> compile_seconds;         ///< torch.compile's, likewise
  std::string candidate, family, origin, params;
  std::size_t block = 0;                     ///< index into export_model::blocks
  std::vector<std::uint64_t> scratch_bytes;  ///< per scratch buffer
  std::vector<std::uint64_t> scratch_offsets;
  std::uint64_t workspace = 0;  ///< bytes, each scratch buffer 256-byte aligned
  std::vector<launch_step> launches;
};

/// A tensor of the exported API: an input or an output.
struct tensor_arg {
  std::string name;
  bool output = false;
  std::string dtype;  ///< f32 or f16
  std::vector<std::string> view;
  std::size_t offset = 0;  ///< where its sizes start in a flat array of every tensor's sizes
};

/// Everything the generators need.
struct export_model {
  problem prob;
  description desc;
  std::string arch;  ///< sm_90 or sm_90a: the nvcc target, and what the device must be
  std::vector<tensor_arg> tensors;
  std::size_t inputs = 0;  ///< tensors[0, inputs) are inputs, the rest outputs
  std::size_t total_rank = 0;
  std::vector<kernel_block> blocks;
  std::vector<tuned_shape> shapes;
  std::string source;       ///< where the kernels came from, for people: "journal `<path>`"
  std::string provenance;   ///< more about it for the README: the run's strategy, seed, date, evaluator
  std::string device;       ///< the device it was tuned on, from the journal's evaluator ("" when unknown)
  std::string source_file;  ///< the path
  std::string build_id;     ///< a digest of the generated sources, set by cuda_files
};

/// A generated file: its path relative to the export directory and its text.
struct generated_file {
  std::filesystem::path path;
  std::string text;
};

/// `kb_<problem>`: the C++ namespace, the Python package and the library's name stem.
[[nodiscard]] std::string api_name(export_model const& m);
/// nvcc's target flags for an arch: {"-gencode", "arch=compute_90a,code=sm_90a"}.
[[nodiscard]] std::vector<std::string> nvcc_arch_flags(std::string const& arch);
/// The compute capability an arch needs, e.g. {9, 0}; and whether the minor must match exactly.
struct capability {
  int major = 0, minor = 0;
  bool exact = false;
};
[[nodiscard]] capability required_capability(std::string const& arch);
/// "[16, 16384]".
[[nodiscard]] std::string sizes_text(std::vector<std::int64_t> const& sizes);
/// A tuned shape's call for comments and READMEs: "x [16, 16384] -> y [16, 16384]" (+ ", groups=4").
[[nodiscard]] std::string call_text(export_model const& m, tuned_shape const& t);
/// A double as C++ / Python source: shortest round-trip form.
[[nodiscard]] std::string number_text(double v);

/// The standalone CUDA files (cuda/<problem>.cu, .h, example.cpp, Makefile); sets m.build_id. The .cu and the
/// header are also what the PyTorch package carries.
[[nodiscard]] std::vector<generated_file> cuda_files(export_model& m);
/// The C ABI wrapper the PyTorch package's library adds to the .cu (capi.cu).
[[nodiscard]] std::string capi_source(export_model const& m);
/// The PyTorch package, torch/kb_<problem>/..., given the .cu and header texts it carries.
[[nodiscard]] std::vector<generated_file> torch_files(export_model const& m, std::string const& cu_text,
                                                      std::string const& header_text);

/// What to export: a journal (tune --journal) or a best.json (tune --best-out), and its problem.
struct export_request {
  std::string input;    ///< the file, as messages name it
  std::string problem;  ///< a problem directory or a CUDA problem's name; "": best.json's problem_dir or
                        ///< problem name, else the journal's problem name (looked up as tune does)
};
/// Reads the input and its problem, chooses the kernel of each tuned benchmark shape (the lowest median
/// among the candidates that passed the top rung there) and resolves every launch plan.
[[nodiscard]] export_model load_model(export_request const& request);
/// Every file of the export: cuda_files, torch_files, README.md and manifest.json (sets m.build_id).
[[nodiscard]] std::vector<generated_file> package_files(export_model& m);
/// The export's README.md and manifest.json.
[[nodiscard]] std::string readme(export_model const& m);
[[nodiscard]] std::string manifest(export_model const& m);
/// Writes the files under `to`: created when missing; an existing non-empty directory only with `force`,
/// and then torch/<api>/ is emptied first (a stale library of an older export must not stay beside it).
void write_package(std::filesystem::path const& to, std::vector<generated_file> const& files, std::string const& api,
                   bool force);
/// "1.23x", or "-" without one.
[[nodiscard]] std::string speedup_text(std::optional<double> speedup);

/// Replaces every @@KEY@@ of `text` with its value; throws kernelbrain::error for one left unreplaced.
[[nodiscard]] std::string fill(std::string const& text, std::vector<std::pair<std::string, std::string>> const& values);

}  // namespace kernelbrain::exporting
