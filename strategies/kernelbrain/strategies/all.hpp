// Every strategy that ships, registered by name: what the CLI's --strategy and the ablation harness pick from.
#pragma once
#include "kernelbrain/core/any_policy.hpp"
#include "kernelbrain/core/registry.hpp"
#include "kernelbrain/defaults/default_policies.hpp"
#include "kernelbrain/generate/llm/llm_generator.hpp"
#include "kernelbrain/strategies/exhaustive.hpp"
#include "kernelbrain/strategies/hyperband.hpp"
#include "kernelbrain/strategies/null_policies.hpp"
#include "kernelbrain/strategies/random_evolution.hpp"
#include "kernelbrain/strategies/successive_halving.hpp"

namespace kernelbrain {

/// The model a search may use: the client, and how the generator asks it.
struct model_setup {
  std::shared_ptr<llm::model_client> client;
  llm::llm_generator_options options;
  llm::prompt_templates templates = llm::prompt_templates::defaults();
};

namespace detail {
/// The default family's generator: the expert catalogue alone, or with a model, templates and model side
/// by side (llm::hybrid_generator).
inline any_policies with_model(default_policies_t pol, std::shared_ptr<model_setup const> const& model) {
  if (!model || !model->client) return erase(std::move(pol));
  return erase(std::move(pol).with_generator(
      llm::hybrid_generator(expert_generator{}, llm::llm_generator(model->client, model->options, model->templates))));
}
/// The options of the default family: its scheduler's and its ladder's.
inline auto default_options() { return option_table(coarse_to_fine_options::describe(), ladder_options::describe()); }
inline std::shared_ptr<model_setup const> const& need_model(std::shared_ptr<model_setup const> const& model,
                                                            std::string const& strategy) {
  if (!model || !model->client)
    throw error("strategy '" + strategy +
                "' needs a model: give one (--model with --llm-url, --exchange DIR, or --recorded-answers JOURNAL)");
  return model;
}
}  // namespace detail

/// A registry holding every strategy that ships. Each entry names the option table it reads (declared
/// next to the strategy's options struct); the registry lists those options in the description,
/// refuses any other, and documents them in help(name). With a model, the default family's generator
/// writes kernels with it too (llm::hybrid_generator), and the model-only strategies (llm-only,
/// blind-llm) are registered: they need `model` non-null, and refuse to start, saying what to give, while
/// its client is null (how the CLI lists and checks them before a model is configured).
[[nodiscard]] inline strategy_registry builtin_strategies(std::shared_ptr<model_setup const> const& model = nullptr) {
  strategy_registry r;
  // The default family shares the coarse-to-fine scheduler's options, so the ablations differ in one axis only.
  r.add("default",
        "the paper's composition: expert generator (with a model: and LLM-written kernels guided by hints and "
        "profiler diagnoses), policy gate, lean smoke(/screen)/confirm ladder, speedup scorer, coarse-to-fine "
        "(ASHA) scheduler",
        detail::default_options(), [model](problem const& p, coarse_to_fine_options const& c, ladder_options const& l) {
          return detail::with_model(default_policies(p, c, l), model);
        });
  r.add("default-no-gate", "ablation: the default with a gate that admits everything", detail::default_options(),
        [model](problem const& p, coarse_to_fine_options const& c, ladder_options const& l) {
          auto pol = detail::with_model(default_policies(p, c, l), model);
          pol.gate = pass_all_gate{};
          return pol;
        });
  r.add("default-one-rung", "ablation: the default with one rung of every shape instead of the ladder",
        option_table(coarse_to_fine_options::describe(), one_rung_options::describe()),
        [model](problem const& p, coarse_to_fine_options const& c, one_rung_options const& l) {
          auto pol = detail::with_model(default_policies(p, c), model);
          pol.ladder = one_rung_ladder::all_shapes(p, l);
          return pol;
        });
  r.add("random", "(mu+lambda) random evolution at the confirm rung only", evolution_options::describe(),
        [](problem const& p, evolution_options const& e) { return random_evolution_policies(p, e); });
  r.add("sha", "synchronous successive halving over the standard ladder",
        option_table(successive_halving_options::describe(), ladder_options::describe()),
        [](problem const& p, successive_halving_options const& s, ladder_options const& l) {
          return successive_halving_policies(p, s, l);
        });
  r.add("hyperband", "Hyperband: successive-halving brackets from every rung, cycled",
        option_table(hyperband_options::describe(), ladder_options::describe()),
        [](problem const& p, hyperband_options const& h, ladder_options const& l) {
          return hyperband_policies(p, h, l);
        });
  r.add("exhaustive", "every admitted template point once, in seeded random order, at one rung of every shape",
        option_table(one_rung_options::describe(), exhaustive_options::describe()),
        [](problem const& p, one_rung_options const& l, exhaustive_options const& e) {
          return exhaustive_policies(p, l, e);
        });
  // The model-only strategies: registered where a model may be configured (see the CLI).
  if (model) {
    r.add("llm-only", "ablation: the default with the model as the only generator (hints and diagnoses, no templates)",
          detail::default_options(),
          [model](problem const& p, coarse_to_fine_options const& c, ladder_options const& l) {
            auto const& m = detail::need_model(model, "llm-only");
            return default_policies(p, c, l).with_generator(llm::llm_generator(m->client, m->options, m->templates));
          });
    r.add("blind-llm",
          "ablation: the model alone and blind: no hints, no profiler, no measurements or failures fed back (the "
          "paper's blind mutation), same gate, ladder and scheduler",
          detail::default_options(),
          [model](problem const& p, coarse_to_fine_options const& c, ladder_options const& l) {
            auto const& m = detail::need_model(model, "blind-llm");
            auto o = m->options;
            o.blind = true;
            return default_policies(p, c, l).with_generator(llm::llm_generator(m->client, o, m->templates));
          });
  }
  return r;
}

}  // namespace kernelbrain
