// The kernelbrain::runtime library: KernelBrain separately compiled (kernelbrain/config.hpp), with
// Boost.JSON, in this one translation unit.
#include <kernelbrain/src.hpp>
