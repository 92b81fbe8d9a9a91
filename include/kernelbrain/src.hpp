// Include this in exactly one .cpp of a program that uses kernelbrain/io/ (journal, problem files):
// it compiles Boost.JSON and KernelBrain's non-template bodies once (Boost.Beast's model).
// CMake users can link kernelbrain::runtime instead.
#pragma once
#include <boost/json/src.hpp>
