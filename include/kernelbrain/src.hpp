// The separately compiled form of KernelBrain (see kernelbrain/config.hpp): include this in exactly one
// .cpp of a program built with KERNELBRAIN_SEPARATE_COMPILATION defined everywhere. It compiles
// Boost.JSON and every KernelBrain body once (Boost.Beast's model). CMake users link
// kernelbrain::runtime instead, which is this file compiled, with the definition made public.
#pragma once
#if !defined(KERNELBRAIN_SEPARATE_COMPILATION)
#error \
    "kernelbrain/src.hpp is for KERNELBRAIN_SEPARATE_COMPILATION builds; header-only programs include <boost/json/src.hpp> in one .cpp instead"
#endif
#include <boost/json/src.hpp>
#include "kernelbrain/backends/cuda/impl/cubin.ipp"
#include "kernelbrain/backends/cuda/impl/diagnosis.ipp"
#include "kernelbrain/backends/cuda/impl/ptxas_report.ipp"
#include "kernelbrain/backends/host/impl/source_policy.ipp"
#include "kernelbrain/detail/impl/json_reader.ipp"
#include "kernelbrain/generate/llm/http/impl/base64.ipp"
#include "kernelbrain/generate/llm/http/impl/proxy.ipp"
#include "kernelbrain/generate/llm/http/impl/retry_after.ipp"
#include "kernelbrain/generate/llm/http/impl/text.ipp"
#include "kernelbrain/generate/llm/http/impl/url.ipp"
#include "kernelbrain/generate/llm/impl/http_client.ipp"
#include "kernelbrain/generate/llm/impl/reply_parser.ipp"
#include "kernelbrain/generate/llm/providers/impl/anthropic.ipp"
#include "kernelbrain/generate/llm/providers/impl/openai.ipp"
#include "kernelbrain/generate/llm/providers/impl/provider.ipp"
#include "kernelbrain/generate/llm/providers/impl/registry.ipp"
#include "kernelbrain/generate/llm/reply/impl/code_scan.ipp"
#include "kernelbrain/generate/llm/reply/impl/fences.ipp"
#include "kernelbrain/generate/llm/reply/impl/plan_text.ipp"
#include "kernelbrain/io/impl/journal.ipp"
#include "kernelbrain/io/impl/problem_loader.ipp"
#include "kernelbrain/io/impl/recording.ipp"
#if defined(__linux__)  // process-isolated backends: posix_spawn, memfd_create, /proc
#include "kernelbrain/backends/common/impl/pytorch_baseline.ipp"
#include "kernelbrain/backends/cuda/impl/evaluator.ipp"  // parent side only: no CUDA headers or libraries
#include "kernelbrain/backends/cuda/impl/launch_plan.ipp"
#include "kernelbrain/backends/host/detail/impl/compiler.ipp"
#include "kernelbrain/backends/host/impl/evaluator.ipp"
#include "kernelbrain/backends/replay/impl/evaluator.ipp"
#include "kernelbrain/isolation/impl/worker_process.ipp"
#endif
