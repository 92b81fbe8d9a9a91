"""python3 -m kb_softmax build [--force] | info: build the kernel library now, or print what the package holds."""
import sys

import kb_softmax


def main(argv):
    if len(argv) >= 1 and argv[0] == "build":
        print(kb_softmax._build.build(force="--force" in argv[1:], verbose=True))
        return 0
    if len(argv) >= 1 and argv[0] == "info":
        print("%s: %s, forward only; kernels for %s" % (kb_softmax._API, kb_softmax.__doc__.splitlines()[0],
                                                        kb_softmax.REQUIRED_ARCH))
        for name, shape in kb_softmax.TUNED.items():
            speedup = "%.2fx" % shape["speedup"] if shape["speedup"] is not None else "-"
            print("  %-28s %-8s %s" % (name, speedup, shape["sizes"]))
        print("library: %s" % kb_softmax.library_path())
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
