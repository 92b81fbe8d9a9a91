"""Builds kb_softmax's kernel library with nvcc. Needs no PyTorch: `python3 _build.py` builds it as a script too.

The library is csrc/kernels.cu (the exported kernels and their C++ API) plus csrc/capi.cu (a C ABI for ctypes),
compiled into <dir>/libkb_softmax-<build id>.so, <dir> being this package's directory when it is writable
and ~/.cache/kernelbrain (or $XDG_CACHE_HOME/kernelbrain) otherwise. nvcc is looked for in $CUDA_HOME/bin,
/usr/local/cuda/bin and PATH. $KB_SOFTMAX_LIBRARY may name a prebuilt library instead.
"""
import os
import shutil
import subprocess
import sys
import tempfile

PROBLEM = "softmax"
BUILD_ID = "f2be4e4a90bf898e"
ENV_LIBRARY = "KB_SOFTMAX_LIBRARY"
LIBRARY_NAME = "libkb_softmax-%s.so" % BUILD_ID
NVCC_FLAGS = ["-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90,code=sm_90"]
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
    """The library the package loads: $KB_SOFTMAX_LIBRARY when set, else a built one (package directory or user cache), else
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
    raise RuntimeError("kb_softmax: nvcc not found ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH): install the CUDA "
                       "toolkit or set CUDA_HOME, or set %s to a prebuilt library" % ENV_LIBRARY)


def build_command(output, nvcc=None):
    """The nvcc command line that builds the library into `output`."""
    return [nvcc or find_nvcc()] + NVCC_FLAGS + [os.path.join(_CSRC, s) for s in SOURCES] + ["-o", output]


def build(force=False, verbose=False):
    """Compiles the kernel library now, unless it is built already (force=True compiles it again); returns its
    path. Ignores $KB_SOFTMAX_LIBRARY. Raises RuntimeError when nvcc is missing or fails."""
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
            raise RuntimeError("kb_softmax: nvcc failed (exit %d): %s\n%s" % (done.returncode, " ".join(command),
                                                                            done.stdout[-6000:]))
        os.chmod(temporary, 0o755)
        os.replace(temporary, target)  # atomic: a concurrent build or load never sees half a library
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target


if __name__ == "__main__":
    print(build(force="--force" in sys.argv[1:], verbose=True))
