"""python3 -m kb_linear_relu_div build [--force] | info: build the kernel library now, or print what the package holds."""
import sys

import kb_linear_relu_div


def main(argv):
    if len(argv) >= 1 and argv[0] == "build":
        print(kb_linear_relu_div._build.build(force="--force" in argv[1:], verbose=True))
        return 0
    if len(argv) >= 1 and argv[0] == "info":
        print("%s: %s, forward only; kernels for %s" % (kb_linear_relu_div._API, kb_linear_relu_div.__doc__.splitlines()[0],
                                                        kb_linear_relu_div.REQUIRED_ARCH))
        for name, shape in kb_linear_relu_div.TUNED.items():
            speedup = "%.2fx" % shape["speedup"] if shape["speedup"] is not None else "-"
            print("  %-28s %-8s %s" % (name, speedup, shape["sizes"]))
        print("library: %s" % kb_linear_relu_div.library_path())
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
