// kernelbrain export: the PyTorch package torch/kb_<problem>/. A plain Python package: __init__.py (forward, the
// operator-named alias, reference, dispatch, TUNED, build, library_path), _build.py (nvcc; no torch needed, so it
// also runs as a script), __main__.py (python3 -m kb_<problem> build|info), README.md, and csrc/ with its own
// copy of the .cu and header plus the C ABI wrapper. The kernels are reached through ctypes, not
// torch.utils.cpp_extension: a shared library with a C ABI works with any PyTorch build, whatever its C++ ABI
// and CUDA version. Templates are raw strings with @@KEY@@ placeholders (export.cpp's fill).
#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>
#include "kernelbrain/export/export.hpp"

namespace kernelbrain::exporting {

namespace {

constexpr char const* build_template =
    R"kb("""Builds @@API@@'s kernel library with nvcc. Needs no PyTorch: `python3 _build.py` builds it as a script too.

The library is csrc/kernels.cu (the exported kernels and their C++ API) plus csrc/capi.cu (a C ABI for ctypes),
compiled into <dir>/libkb_@@PROBLEM@@-<build id>.so, <dir> being this package's directory when it is writable
and ~/.cache/kernelbrain (or $XDG_CACHE_HOME/kernelbrain) otherwise. nvcc is looked for in $CUDA_HOME/bin,
/usr/local/cuda/bin and PATH. $@@ENV@@ may name a prebuilt library instead.
"""
import os
import shutil
import subprocess
import sys
import tempfile

PROBLEM = "@@PROBLEM@@"
BUILD_ID = "@@BUILD_ID@@"
ENV_LIBRARY = "@@ENV@@"
LIBRARY_NAME = "libkb_@@PROBLEM@@-%s.so" % BUILD_ID
NVCC_FLAGS = [@@NVCC_FLAGS@@]
SOURCES = ("kernels.cu", "capi.cu")

_HERE = os.path.dirname(os.path.abspath(__file__))
_CSRC = os.path.join(_HERE, "csrc")


def _user_cache():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kernelbrain")


def build_directory():
    """Where build() writes the library: the package directory if writable, else the user's cache."""
    return _HERE if os.access(_HERE, os.W_OK) else _user_cache()


def library_path():
    """The library the package loads: $@@ENV@@ when set, else a built one (package directory or user cache), else
    where build() would write it. Builds nothing."""
    env = os.environ.get(ENV_LIBRARY)
    if env:
        return env
    for directory in (_HERE, _user_cache()):
        path = os.path.join(directory, LIBRARY_NAME)
        if os.path.isfile(path):
            return path
    return os.path.join(build_directory(), LIBRARY_NAME)


def find_nvcc():
    """nvcc from $CUDA_HOME/bin, /usr/local/cuda/bin or PATH; RuntimeError when there is none."""
    tried = []
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        tried.append(os.path.join(home, "bin", "nvcc"))
    tried.append("/usr/local/cuda/bin/nvcc")
    for path in tried:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which("nvcc")
    if found:
        return found
    raise RuntimeError("@@API@@: nvcc not found ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH): install the CUDA "
                       "toolkit or set CUDA_HOME, or set %s to a prebuilt library" % ENV_LIBRARY)


def build_command(output, nvcc=None):
    """The nvcc command line that builds the library into `output`."""
    return [nvcc or find_nvcc()] + NVCC_FLAGS + [os.path.join(_CSRC, s) for s in SOURCES] + ["-o", output]


def build(force=False, verbose=False):
    """Compiles the kernel library now, unless it is built already (force=True compiles it again); returns its
    path. Ignores $@@ENV@@. Raises RuntimeError when nvcc is missing or fails."""
    directory = build_directory()
    target = os.path.join(directory, LIBRARY_NAME)
    if not force and os.path.isfile(target):
        return target
    os.makedirs(directory, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix="." + LIBRARY_NAME + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        command = build_command(temporary)
        if verbose:
            print(" ".join(command), file=sys.stderr)
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if done.returncode != 0:
            raise RuntimeError("@@API@@: nvcc failed (exit %d): %s\n%s" % (done.returncode, " ".join(command),
                                                                            done.stdout[-6000:]))
        os.chmod(temporary, 0o755)
        os.replace(temporary, target)  # atomic: a concurrent build or load never sees half a library
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target


if __name__ == "__main__":
    print(build(force="--force" in sys.argv[1:], verbose=True))
)kb";

constexpr char const* init_template =
    R"kb("""@@API@@: KernelBrain's tuned CUDA kernels for @@PROBLEM@@, as a PyTorch function. Forward only.

    import @@API@@
    out = @@API@@.@@FUNCTION@@(@@CALL_ARGS@@)  # the same as @@API@@.forward(...)
    print(@@API@@.dispatch(@@CALL_ARGS@@))  # "kernel <shape>" or "fallback: <why>"

It computes @@PYTORCH@@
(reference() is exactly that expression) with @@DTYPES@@.

Tuned shapes (TUNED has their sizes, speed-ups over the problem's reference kernel and more):
@@TUNED_LINES@@
A call runs the tuned kernel when its inputs are CUDA tensors of those dtypes whose sizes@@AND_ATTRIBUTES@@ are
exactly a tuned shape's, none requires grad while autograd is on, and the device has compute capability
@@CC_TEXT@@ (@@ARCH@@). Inputs are made contiguous (and 256-byte aligned), outputs are allocated with torch.empty
on the input's device, and the kernels run on torch.cuda.current_stream(). Every other call falls back to the
PyTorch expression: CPU (or other non-CUDA) tensors, other dtypes or sizes, requires_grad (forward only: there
is no backward), another compute capability, or a kernel library that could not be built or loaded (one
warning, then every call falls back). PyTorch's own precision settings (allow_tf32 and
set_float32_matmul_precision) apply to the fallback only.

The kernel library is compiled with nvcc on the first call that needs it, or ahead by build() or
`python3 -m @@API@@ build`; $@@ENV@@ may name a prebuilt one. Importing compiles nothing and needs no GPU.

Generated by `kernelbrain export` from @@SOURCE@@.
"""
import ctypes
import math  # noqa: F401 (the reference expression may use it)
import operator
import os
import threading
import warnings

import torch
import torch.nn.functional as F  # noqa: F401 (the reference expression may use it)

from . import _build
from ._build import build, library_path

__all__ = ["forward", "@@FUNCTION@@", "reference", "dispatch", "TUNED", "REQUIRED_ARCH", "build", "library_path"]

PROBLEM = "@@PROBLEM@@"
REQUIRED_ARCH = "@@ARCH@@"
_API = "@@API@@"
_CAPABILITY = (@@CC_MAJOR@@, @@CC_MINOR@@)
_CAPABILITY_EXACT = @@CC_EXACT@@
_CAPABILITY_TEXT = "@@CC_TEXT@@"
_INPUTS = (@@INPUT_NAMES@@)
_OUTPUTS = (@@OUTPUT_NAMES@@)
_ATTRIBUTES = (@@ATTRIBUTE_NAMES@@)
_DTYPES = (@@TORCH_DTYPES@@)  # inputs, then outputs
_DTYPE_CODES = (@@DTYPE_CODES@@)  # the C ABI's: 0 f32, 1 f16
_TOTAL_RANK = @@TOTAL_RANK@@

#: The tuned shapes: name -> sizes of every tensor, attributes, the kernel's speed-up over the problem's
#: reference kernel as measured while tuning (None where the export's input did not say), workspace bytes, the
#: problem's dims and the kernel that runs there.
TUNED = {
@@TUNED_DICT@@}


@@REFERENCE@@

class _Entry(object):
    __slots__ = ("name", "out_sizes", "workspace", "sizes", "attributes")


def _index():
    table = {}
    for name, shape in TUNED.items():
        entry = _Entry()
        entry.name = name
        entry.out_sizes = tuple(tuple(shape["sizes"][n]) for n in _OUTPUTS)
        entry.workspace = shape["workspace_bytes"]
        flat = [s for n in _INPUTS + _OUTPUTS for s in shape["sizes"][n]]
        entry.sizes = (ctypes.c_longlong * _TOTAL_RANK)(*flat)
        values = [shape["attributes"][a] for a in _ATTRIBUTES]
        entry.attributes = (ctypes.c_longlong * len(values))(*values) if values else None
        table[tuple(tuple(shape["sizes"][n]) for n in _INPUTS) + tuple(values)] = entry
    return table


_BY_KEY = _index()
_DTYPE_ARRAY = (ctypes.c_int * len(_DTYPE_CODES))(*_DTYPE_CODES)
_LOCK = threading.Lock()
_LIBRARY = None
_LIBRARY_ERROR = None
_CAPABILITIES = {}


def _describe(inputs, attributes):
    parts = ["%s %s" % (n, list(t.shape)) for n, t in zip(_INPUTS, inputs)]
    parts += ["%s=%r" % (n, v) for n, v in zip(_ATTRIBUTES, attributes)]
    return ", ".join(parts)


def _capability_problem(device):
    index = device.index if device.index is not None else torch.cuda.current_device()
    cc = _CAPABILITIES.get(index)
    if cc is None:
        cc = tuple(torch.cuda.get_device_capability(index))
        _CAPABILITIES[index] = cc
    if cc[0] == _CAPABILITY[0] and (cc[1] == _CAPABILITY[1] if _CAPABILITY_EXACT else cc[1] >= _CAPABILITY[1]):
        return None
    return "device cuda:%d has compute capability %d.%d; the kernels were built for %s (compute capability %s)" % (
        index, cc[0], cc[1], REQUIRED_ARCH, _CAPABILITY_TEXT)


def _load():
    path = os.environ.get(_build.ENV_LIBRARY)
    if not path:
        path = library_path()
        if not os.path.isfile(path):
            path = build()
    library = ctypes.CDLL(path)
    version = library.kb_@@PROBLEM@@_abi_version
    version.restype = ctypes.c_int
    if version() != 1:
        raise RuntimeError("%s has C ABI version %d; this package needs 1" % (path, version()))
    build_id = library.kb_@@PROBLEM@@_build_id
    build_id.restype = ctypes.c_char_p
    got = build_id().decode()
    if got != _build.BUILD_ID:
        raise RuntimeError("%s was built from another export (build id %s; this package's is %s)" %
                           (path, got, _build.BUILD_ID))
    probe = library.kb_@@PROBLEM@@_probe
    probe.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    probe.restype = ctypes.c_int
    error = ctypes.create_string_buffer(1024)
    if probe(error, len(error)) != 0:
        raise RuntimeError(error.value.decode(errors="replace"))
    function = library.kb_@@PROBLEM@@_forward_c
    function.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int),
                         ctypes.POINTER(ctypes.c_longlong), ctypes.POINTER(ctypes.c_longlong), ctypes.c_void_p,
                         ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    function.restype = ctypes.c_int
    return library


def _library():
    """The loaded library, building it on first need; None (after one warning) when that failed."""
    global _LIBRARY, _LIBRARY_ERROR
    if _LIBRARY is None and _LIBRARY_ERROR is None:
        with _LOCK:
            if _LIBRARY is None and _LIBRARY_ERROR is None:
                try:
                    _LIBRARY = _load()
                except Exception as e:  # noqa: BLE001 (any failure means: fall back)
                    _LIBRARY_ERROR = str(e) or type(e).__name__
                    warnings.warn("%s: the kernel library is unavailable, every call falls back to PyTorch: %s" %
                                  (_API, _LIBRARY_ERROR), RuntimeWarning, stacklevel=4)
    return _LIBRARY


def _choose(inputs, attributes):
    """(the tuned shape's entry, "kernel <shape>") or (None, "fallback: <why>")."""
    for name, t in zip(_INPUTS, inputs):
        if not isinstance(t, torch.Tensor):
            return None, "fallback: %s is not a tensor" % name
    if torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
        return None, "fallback: an input requires grad and autograd is on (forward only: the kernels have no backward)"
    for name, t, want in zip(_INPUTS, inputs, _DTYPES):
        if t.dtype != want:
            return None, "fallback: %s is %s; the kernels take %s" % (name, t.dtype, want)
    values = []
    for name, v in zip(_ATTRIBUTES, attributes):
        try:
            if isinstance(v, bool):
                raise TypeError
            values.append(operator.index(v))
        except TypeError:
            return None, "fallback: %s=%r is not one integer" % (name, v)
    entry = _BY_KEY.get(tuple(tuple(t.shape) for t in inputs) + tuple(values))
    if entry is None:
        return None, "fallback: untuned sizes (%s); the tuned shapes are %s" % (_describe(inputs, values),
                                                                               ", ".join(TUNED))
    device = inputs[0].device
    if device.type != "cuda":
        kind = "CPU" if device.type == "cpu" else device.type
        return None, "fallback: %s is a %s tensor; the kernels run on CUDA devices" % (_INPUTS[0], kind)
    for name, t in zip(_INPUTS[1:], inputs[1:]):
        if t.device != device:
            return None, "fallback: %s is on %s but %s on %s" % (name, t.device, _INPUTS[0], device)
    why = _capability_problem(device)
    if why:
        return None, "fallback: " + why
    if _library() is None:
        return None, "fallback: the kernel library is unavailable: " + _LIBRARY_ERROR
    return entry, "kernel " + entry.name


def _aligned(t):
    t = t.contiguous()
    if t.data_ptr() % 256 != 0:  # the kernels were tested with 256-byte aligned buffers
        t = t.clone()
    return t


def _run(entry, inputs):
    device = inputs[0].device
    with torch.cuda.device(device):
        ins = [_aligned(t) for t in inputs]
        outs = [torch.empty(size, dtype=dtype, device=device) for size, dtype in
                zip(entry.out_sizes, _DTYPES[len(_INPUTS):])]
        workspace = torch.empty(entry.workspace, dtype=torch.uint8, device=device) if entry.workspace else None
        pointers = (ctypes.c_void_p * (len(ins) + len(outs)))(*[t.data_ptr() for t in ins + outs])
        error = ctypes.create_string_buffer(2048)
        stream = torch.cuda.current_stream(device).cuda_stream
        status = _LIBRARY.kb_@@PROBLEM@@_forward_c(
            pointers, _DTYPE_ARRAY, entry.sizes, entry.attributes,
            ctypes.c_void_p(workspace.data_ptr() if workspace is not None else None), entry.workspace,
            ctypes.c_void_p(stream), error, len(error))
    if status != 0:
        raise RuntimeError(error.value.decode(errors="replace") or "%s: forward failed (%d)" % (_API, status))
    return outs[0] if len(outs) == 1 else tuple(outs)


def forward(@@SIGNATURE@@):
    """@@PYTORCH@@ with the tuned CUDA kernel where one fits the call, else with PyTorch (see dispatch()).
    Forward only: no autograd."""
    entry, _ = _choose((@@INPUT_TUPLE@@), (@@ATTRIBUTE_TUPLE@@))
    if entry is None:
        return reference(@@REFERENCE_ARGS@@)
    return _run(entry, (@@INPUT_TUPLE@@))


def dispatch(@@SIGNATURE@@):
    """What forward would do with these arguments: "kernel <shape>" or "fallback: <why>". Loads (and, the first
    time, builds) the kernel library when everything else fits."""
    return _choose((@@INPUT_TUPLE@@), (@@ATTRIBUTE_TUPLE@@))[1]


@@FUNCTION@@ = forward
)kb";

constexpr char const* main_template =
    R"kb("""python3 -m @@API@@ build [--force] | info: build the kernel library now, or print what the package holds."""
import sys

import @@API@@


def main(argv):
    if len(argv) >= 1 and argv[0] == "build":
        print(@@API@@._build.build(force="--force" in argv[1:], verbose=True))
        return 0
    if len(argv) >= 1 and argv[0] == "info":
        print("%s: %s, forward only; kernels for %s" % (@@API@@._API, @@API@@.__doc__.splitlines()[0],
                                                        @@API@@.REQUIRED_ARCH))
        for name, shape in @@API@@.TUNED.items():
            speedup = "%.2fx" % shape["speedup"] if shape["speedup"] is not None else "-"
            print("  %-28s %-8s %s" % (name, speedup, shape["sizes"]))
        print("library: %s" % @@API@@.library_path())
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
)kb";

constexpr char const* package_readme_template = R"kb(# @@API@@

KernelBrain's tuned CUDA kernels for `@@PROBLEM@@` as a PyTorch function, **forward only** (no autograd:
a call whose inputs require grad while autograd is on falls back to PyTorch). Generated by `kernelbrain export`
from @@SOURCE@@.

```python
import @@API@@
out = @@API@@.@@FUNCTION@@(@@CALL_ARGS@@)  # = @@API@@.forward(...)
ref = @@API@@.reference(@@CALL_ARGS@@)  # @@PYTORCH@@
print(@@API@@.dispatch(@@CALL_ARGS@@))  # "kernel <shape>" or "fallback: <why>"
print(@@API@@.TUNED)  # the tuned shapes: sizes, speed-ups, workspace
```

Tuned shapes (the only sizes that run the kernels; speed-ups are over the problem's reference kernel, as
measured while tuning):

@@TUNED_BULLETS@@
Everything else falls back to `@@PYTORCH@@`: non-CUDA tensors, other dtypes or sizes, requires_grad,
a device whose compute capability is not @@CC_TEXT@@ (@@ARCH@@), or a kernel library that cannot be built or
loaded (one warning). PyTorch's precision settings apply to the fallback only.

The library (`libkb_@@PROBLEM@@-<id>.so`: `csrc/kernels.cu` + `csrc/capi.cu`, a C ABI loaded with ctypes, so
any PyTorch build works) is compiled with nvcc on first need, or now with `python3 -m @@API@@ build` (or
`python3 _build.py`, which needs no PyTorch). It goes to this directory, or to ~/.cache/kernelbrain where this
one is read-only. `@@ENV@@=/path/to/lib.so` uses a prebuilt one. Importing compiles nothing.
)kb";

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string py_string(std::string const& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string py_tuple(std::vector<std::string> const& items) {
  std::string s;
  for (auto const& i : items) s += i + ", ";
  if (items.size() > 1) s.resize(s.size() - 2);
  return s;  // "x," for one item, "x, y" for two: the caller adds the parentheses
}

std::string py_sizes(std::vector<std::int64_t> const& v) {
  std::vector<std::string> items;
  items.reserve(v.size());
  for (auto x : v) items.push_back(std::to_string(x));
  return "(" + py_tuple(items) + ")";
}

std::string tuned_lines(export_model const& m, std::string const& indent) {
  std::string s;
  for (auto const& t : m.shapes) {
    const std::string call = call_text(m, t);
    s += fmt::format("{}{}: {} ({})\n", indent, t.name, call,
                     t.speedup ? fmt::format("{:.2f}x", *t.speedup) : std::string("speed-up unknown"));
  }
  return s;
}

std::string tuned_dict(export_model const& m) {
  std::string s;
  for (auto const& t : m.shapes) {
    std::string sizes, attrs, dims;
    for (std::size_t i = 0; i < m.tensors.size(); ++i)
      sizes += fmt::format("{}{}: {}", sizes.empty() ? "" : ", ", py_string(m.tensors[i].name), py_sizes(t.sizes[i]));
    for (std::size_t a = 0; a < m.desc.attributes.size(); ++a)
      attrs +=
          fmt::format("{}{}: {}", attrs.empty() ? "" : ", ", py_string(m.desc.attributes[a].second), t.attributes[a]);
    for (auto const& d : m.prob.dim_order)
      dims += fmt::format("{}{}: {}", dims.empty() ? "" : ", ", py_string(d), t.dims.at(d));
    std::string kernel = t.candidate.empty() ? "(unnamed)" : t.candidate;
    if (!t.family.empty()) kernel += " " + t.family;
    if (!t.params.empty()) kernel += " " + t.params;
    s += fmt::format(
        "    {}: {{\n        \"sizes\": {{{}}},\n        \"attributes\": {{{}}},\n        \"speedup\": {},\n"
        "        \"workspace_bytes\": {},\n        \"dims\": {{{}}},\n        \"kernel\": {},\n    }},\n",
        py_string(t.name), sizes, attrs, t.speedup ? number_text(*t.speedup) : std::string("None"), t.workspace, dims,
        py_string(kernel));
  }
  return s;
}

std::string reference_text(export_model const& m, std::string const& signature, std::string const& dtypes) {
  auto one = [&](std::string const& expression, std::string const& extra, std::string const& indent) {
    return fmt::format(
        "{0}def reference({1}):\n{0}    \"\"\"The PyTorch expression the kernels implement (and forward "
        "falls back to):\n{0}    {2}{3}, with {4}.\"\"\"\n{0}    return {2}\n",
        indent, signature, expression, extra, dtypes);
  };
  if (m.desc.compat_requires.empty()) return one(m.desc.pytorch, "", "");
  const std::string path = m.desc.compat_requires.substr(6);  // after "torch."
  return fmt::format(
      "def _has(path):\n    found = torch\n    for part in path.split(\".\"):\n        found = getattr(found, part, "
      "None)\n        if found is None:\n            return False\n    return True\n\n\n"
      "if _has({}):\n{}else:\n{}",
      py_string(path), one(m.desc.pytorch, "", "    "),
      one(m.desc.compat_pytorch, "\n        (this PyTorch has no " + m.desc.compat_requires + ": the same computation)",
          "    "));
}

}  // namespace

std::vector<generated_file> torch_files(export_model const& m, std::string const& cu_text,
                                        std::string const& header_text) {
  const std::string api = api_name(m);
  const std::string env = upper(api) + "_LIBRARY";
  const auto cap = required_capability(m.arch);

  std::vector<std::string> inputs, outputs, attribute_names, torch_dtypes, codes, input_list, attribute_list;
  std::string dtypes;
  for (auto const& t : m.tensors) {
    (t.output ? outputs : inputs).push_back(py_string(t.name));
    torch_dtypes.emplace_back(t.dtype == "f16" ? "torch.float16" : "torch.float32");
    codes.emplace_back(t.dtype == "f16" ? "1" : "0");
    if (!t.output) {
      input_list.push_back(t.name);
      dtypes +=
          fmt::format("{}{} torch.{}", dtypes.empty() ? "" : ", ", t.name, t.dtype == "f16" ? "float16" : "float32");
    }
  }
  std::string signature, call_args, reference_args;
  for (auto const& n : input_list) {
    signature += (signature.empty() ? "" : ", ") + n;
    call_args += (call_args.empty() ? "" : ", ") + n;
    reference_args += (reference_args.empty() ? "" : ", ") + n;
  }
  if (!m.desc.attributes.empty()) signature += ", *";
  for (auto const& [dim, name] : m.desc.attributes) {
    attribute_names.push_back(py_string(name));
    attribute_list.push_back(name);
    signature += ", " + name;
    call_args += fmt::format(", {}={}", name, name);
    reference_args += fmt::format(", {}={}", name, name);
  }
  std::string flags = "\"-O3\", \"-std=c++17\", \"-shared\", \"-Xcompiler\", \"-fPIC\"";
  for (auto const& f : nvcc_arch_flags(m.arch)) flags += ", " + py_string(f);
  std::string cc_text = cap.exact ? fmt::format("{}.{}", cap.major, cap.minor)
                                  : fmt::format("{}.{} or a later {}.x", cap.major, cap.minor, cap.major);

  const std::vector<std::pair<std::string, std::string>> values = {
      {"API", api},
      {"PROBLEM", m.prob.name},
      {"FUNCTION", m.desc.function},
      {"PYTORCH", m.desc.pytorch},
      {"SOURCE", m.source},
      {"ENV", env},
      {"BUILD_ID", m.build_id},
      {"NVCC_FLAGS", flags},
      {"ARCH", m.arch},
      {"CC_MAJOR", std::to_string(cap.major)},
      {"CC_MINOR", std::to_string(cap.minor)},
      {"CC_EXACT", cap.exact ? "True" : "False"},
      {"CC_TEXT", cc_text},
      {"DTYPES", dtypes},
      {"CALL_ARGS", call_args},
      {"AND_ATTRIBUTES", m.desc.attributes.empty() ? "" : " and attributes"},
      {"TUNED_LINES", tuned_lines(m, "    ")},
      {"INPUT_NAMES", py_tuple(inputs)},
      {"OUTPUT_NAMES", py_tuple(outputs)},
      {"ATTRIBUTE_NAMES", py_tuple(attribute_names)},
      {"TORCH_DTYPES", py_tuple(torch_dtypes)},
      {"DTYPE_CODES", py_tuple(codes)},
      {"TOTAL_RANK", std::to_string(m.total_rank)},
      {"TUNED_DICT", tuned_dict(m)},
      {"REFERENCE", reference_text(m, signature, dtypes)},
      {"SIGNATURE", signature},
      {"INPUT_TUPLE", py_tuple(input_list)},
      {"ATTRIBUTE_TUPLE", py_tuple(attribute_list)},
      {"REFERENCE_ARGS", reference_args},
  };
  const std::filesystem::path dir = std::filesystem::path("torch") / api;
  auto readme_values = values;
  readme_values.emplace_back("TUNED_BULLETS", tuned_lines(m, "- "));
  return {{dir / "__init__.py", fill(init_template, values)},
          {dir / "_build.py", fill(build_template, values)},
          {dir / "__main__.py", fill(main_template, values)},
          {dir / "README.md", fill(package_readme_template, readme_values)},
          {dir / "csrc" / "kernels.cu", cu_text},
          {dir / "csrc" / (m.prob.name + ".h"), header_text},
          {dir / "csrc" / "capi.cu", capi_source(m)}};
}

}  // namespace kernelbrain::exporting
