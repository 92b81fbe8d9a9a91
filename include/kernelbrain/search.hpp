// KernelBrain: everything a researcher needs to compose and run a search, from headers alone: the
// core, the default policies and the synthetic backend. Light on purpose: no JSON or CUDA headers.
// The journal and problem files (kernelbrain/io/) and the host and CUDA backends
// (kernelbrain/backends/host/, cuda/) are included on their own; they need Boost.JSON's library source in one .cpp
// (see kernelbrain/config.hpp).
#pragma once
#include "kernelbrain/backends/synthetic/evaluator.hpp"
#include "kernelbrain/core/action.hpp"
#include "kernelbrain/core/budget.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/concepts.hpp"
#include "kernelbrain/core/driver.hpp"
#include "kernelbrain/core/engine.hpp"
#include "kernelbrain/core/evaluation.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/event.hpp"
#include "kernelbrain/core/journal_sink.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/parameters.hpp"
#include "kernelbrain/core/policies.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/score.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/core/template_space.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/defaults/default_policies.hpp"
