// Include this in exactly one .cpp of a program that uses kernelbrain/io/ (journal, problem files)
// or kernelbrain/evaluate/host.hpp:
// it compiles Boost.JSON and KernelBrain's non-template bodies once (Boost.Beast's model).
// CMake users can link kernelbrain::runtime instead.
#pragma once
#include <boost/json/src.hpp>
#include "kernelbrain/impl/cubin.ipp"
#include "kernelbrain/impl/ptxas_report.ipp"
#include "kernelbrain/impl/journal.ipp"
#include "kernelbrain/impl/problem_loader.ipp"
#include "kernelbrain/impl/source_policy.ipp"
#if defined(__linux__)  // process-isolated backends: posix_spawn, memfd_create, /proc
#include "kernelbrain/impl/worker_process.ipp"
#include "kernelbrain/impl/host_compiler.ipp"
#include "kernelbrain/impl/host.ipp"
#include "kernelbrain/impl/launch_plan.ipp"
#include "kernelbrain/impl/cuda.ipp"  // parent side only: no CUDA headers or libraries
#endif
