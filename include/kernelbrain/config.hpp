// How KernelBrain's compiled bodies (the impl/*.ipp files beside their headers) reach a program.
//
// Header-only (the default): every header includes its own bodies, declared inline through
// KERNELBRAIN_DECL. Nothing to link but what the bodies themselves need: Boost.JSON's library source
// (#include <boost/json/src.hpp> in exactly one .cpp, or link Boost::json) for io/ and the host and
// CUDA backends, and the worker executables for those backends (src/*_worker.cpp).
//
// Separately compiled: define KERNELBRAIN_SEPARATE_COMPILATION for the whole program and include
// <kernelbrain/src.hpp> in exactly one .cpp (it also compiles Boost.JSON), or link the CMake target
// kernelbrain::runtime, which does both. Headers then hold declarations only, which builds faster.
#pragma once

#include "kernelbrain/version.hpp"

#if defined(KERNELBRAIN_SEPARATE_COMPILATION)
#define KERNELBRAIN_HEADER_ONLY 0
#define KERNELBRAIN_DECL
#else
#define KERNELBRAIN_HEADER_ONLY 1
#define KERNELBRAIN_DECL inline
#endif
