// Compiles Boost.JSON and KernelBrain's non-template bodies once, for the kernelbrain::runtime target.
#include <kernelbrain/src.hpp>
