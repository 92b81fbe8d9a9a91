// Type-erased policies (any_generator, any_gate, any_ladder, any_scorer, any_scheduler), so that the
// CLI and the ablation harness can pick a composition by name at run time.
#pragma once
#include <concepts>
#include <cstdint>
#include <memory>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>
#include "kernelbrain/core/concepts.hpp"
#include "kernelbrain/core/policies.hpp"

namespace kernelbrain {

namespace detail {

/// One address per type: lets target<T>() work without RTTI.
template <class T>
inline constexpr char erased_tag = 0;

/// What every erased policy does besides its verb: the optional hooks, and identifying its type.
class erased_policy {
 public:
  virtual ~erased_policy() = default;
  virtual void reseed(std::uint64_t seed) = 0;
  virtual void observe(event const& e) = 0;
  [[nodiscard]] virtual void const* tag() const noexcept = 0;
  [[nodiscard]] virtual void* address() noexcept = 0;
};

/// Owns the concrete policy and forwards the hooks only where the concrete type has them, so an
/// erased policy behaves exactly like the type it wraps. `Interface` adds the axis's verb.
template <class Interface, class T>
class erased_holder : public Interface {
 public:
  explicit erased_holder(T v) : value(std::move(v)) {}
  void reseed(std::uint64_t seed) final { reseed_if_able(value, seed); }
  void observe(event const& e) final { observe_if_able(value, e); }
  [[nodiscard]] void const* tag() const noexcept final { return &erased_tag<T>; }
  [[nodiscard]] void* address() noexcept final { return &value; }

 protected:
  T value;
};

/// What a wrapper `Any` may be built from: a movable (or copyable) model of its axis's concept that is
/// not itself such a wrapper.
template <class T, class Any>
concept erasable_into =
    !std::derived_from<std::remove_cvref_t<T>, Any> && Any::axis::template models<std::remove_cvref_t<T>> &&
    std::constructible_from<std::remove_cvref_t<T>, T&&>;

/// The owning handle the five wrappers share. `Axis` names the interface, the model that
/// implements it for a T, and whether T models the axis's concept.
template <class Axis>
class basic_any {
 public:
  using axis = Axis;

  /// From any model of the concept, but never from another erased wrapper of this axis (that is a move).
  template <erasable_into<basic_any> T>
  // Implicit on purpose, like std::function; the constraint keeps it from hiding copy and move.
  basic_any(T&& policy)  // NOLINT(google-explicit-constructor,bugprone-forwarding-reference-overload)
      : self_(std::make_unique<typename Axis::template model<std::remove_cvref_t<T>>>(std::forward<T>(policy))) {}

  /// From anything else: the axis's readable requirement, once, at the point of use (instead of a bare
  /// "conversion ... requested"). It never compiles; ask erasable_into<T, any_x> to test in a trait.
  template <class T>
  requires(!std::derived_from<std::remove_cvref_t<T>, basic_any> && !erasable_into<T, basic_any>)
      basic_any(T&&)  // NOLINT(google-explicit-constructor,bugprone-forwarding-reference-overload)
  {
    static_assert(Axis::template check<std::remove_cvref_t<T>>());
    static_assert(
        !Axis::template models<std::remove_cvref_t<T>> || std::constructible_from<std::remove_cvref_t<T>, T&&>,
        "kernelbrain: an erased policy is stored by value: the policy type must be movable or copyable");
  }

  /// Optional hooks: always present here, forwarded only when the wrapped type has them.
  void reseed(std::uint64_t seed) { self_->reseed(seed); }
  void observe(event const& e) { self_->observe(e); }

  /// The wrapped policy if it is a T, else null (for reading a policy's state after a search).
  template <class T>
  [[nodiscard]] T* target() noexcept {
    return self_ && self_->tag() == &erased_tag<T> ? static_cast<T*>(self_->address()) : nullptr;
  }
  template <class T>
  [[nodiscard]] T const* target() const noexcept {
    return self_ && self_->tag() == &erased_tag<T> ? static_cast<T const*>(self_->address()) : nullptr;
  }
  /// False only after being moved from.
  [[nodiscard]] explicit operator bool() const noexcept { return self_ != nullptr; }

 protected:
  std::unique_ptr<typename Axis::interface> self_;
};

struct generator_axis {
  struct interface : erased_policy {
    virtual std::vector<candidate> propose(search_view const& v, proposal_request const& r) = 0;
    virtual std::vector<model_exchange> take_exchanges() = 0;
    virtual std::vector<candidate> settle() = 0;
  };
  template <class T>
  struct model final : erased_holder<interface, T> {
    using erased_holder<interface, T>::erased_holder;
    std::vector<candidate> propose(search_view const& v, proposal_request const& r) override {
      return this->value.propose(v, r);
    }
    std::vector<model_exchange> take_exchanges() override { return take_exchanges_if_able(this->value); }
    std::vector<candidate> settle() override { return settle_if_able(this->value); }
  };
  template <class T>
  static constexpr bool models = generator<T>;
  template <class T>
  static constexpr bool check() {
    return check_generator<T>();
  }
};

struct gate_axis {
  struct interface : erased_policy {
    virtual verdict admit(candidate const& c, evaluator& e) = 0;
    [[nodiscard]] virtual std::vector<std::size_t> checked_shapes() const = 0;
  };
  template <class T>
  struct model final : erased_holder<interface, T> {
    using erased_holder<interface, T>::erased_holder;
    verdict admit(candidate const& c, evaluator& e) override { return this->value.admit(c, e); }
    [[nodiscard]] std::vector<std::size_t> checked_shapes() const override {
      return gate_checked_shapes_if_able(this->value);
    }
  };
  template <class T>
  static constexpr bool models = gate<T>;
  template <class T>
  static constexpr bool check() {
    return check_gate<T>();
  }
};

struct ladder_axis {
  struct interface : erased_policy {
    [[nodiscard]] virtual std::span<rung const> rungs() const = 0;
  };
  template <class T>
  struct model final : erased_holder<interface, T> {
    // A ladder may hand back its rungs by value (the concept allows it); keep one copy so the span
    // the engine holds for the whole search does not dangle.
    static constexpr bool returns_temporary = !std::ranges::borrowed_range<decltype(std::declval<T const&>().rungs())>;
    explicit model(T v) : erased_holder<interface, T>(std::move(v)) {
      if constexpr (returns_temporary) {
        auto const& self = this->value;
        auto const held = self.rungs();  // keep the temporary alive while copying out of it
        const std::span<rung const> rs = held;
        copy_.assign(rs.begin(), rs.end());
      }
    }
    [[nodiscard]] std::span<rung const> rungs() const override {
      if constexpr (returns_temporary)
        return copy_;
      else
        return this->value.rungs();
    }
    std::vector<rung> copy_;
  };
  template <class T>
  static constexpr bool models = fidelity_ladder<T>;
  template <class T>
  static constexpr bool check() {
    return check_fidelity_ladder<T>();
  }
};

struct scorer_axis {
  struct interface : erased_policy {
    [[nodiscard]] virtual kernelbrain::score score(measurement const& m, baseline const& b) const = 0;
  };
  template <class T>
  struct model final : erased_holder<interface, T> {
    using erased_holder<interface, T>::erased_holder;
    [[nodiscard]] kernelbrain::score score(measurement const& m, baseline const& b) const override {
      return this->value.score(m, b);
    }
  };
  template <class T>
  static constexpr bool models = scorer<T>;
  template <class T>
  static constexpr bool check() {
    return check_scorer<T>();
  }
};

struct scheduler_axis {
  struct interface : erased_policy {
    virtual action next(search_view const& v) = 0;
  };
  template <class T>
  struct model final : erased_holder<interface, T> {
    using erased_holder<interface, T>::erased_holder;
    action next(search_view const& v) override { return this->value.next(v); }
  };
  template <class T>
  static constexpr bool models = scheduler<T>;
  template <class T>
  static constexpr bool check() {
    return check_scheduler<T>();
  }
};

}  // namespace detail

/// Any generator, chosen at run time.
class any_generator : public detail::basic_any<detail::generator_axis> {
 public:
  using basic_any::basic_any;
  std::vector<candidate> propose(search_view const& v, proposal_request const& r) { return self_->propose(v, r); }
  /// The optional hook, always present here (empty for a generator without it).
  std::vector<model_exchange> take_exchanges() { return self_->take_exchanges(); }
  /// The optional hook, always present here (empty for a generator without it).
  std::vector<candidate> settle() { return self_->settle(); }
};

/// Any gate, chosen at run time.
class any_gate : public detail::basic_any<detail::gate_axis> {
 public:
  using basic_any::basic_any;
  verdict admit(candidate const& c, evaluator& e) { return self_->admit(c, e); }
  /// The optional hook, always present here (none for a gate without it).
  [[nodiscard]] std::vector<std::size_t> checked_shapes() const { return self_->checked_shapes(); }
};

/// Any fidelity ladder, chosen at run time.
class any_ladder : public detail::basic_any<detail::ladder_axis> {
 public:
  using basic_any::basic_any;
  [[nodiscard]] std::span<rung const> rungs() const { return self_->rungs(); }
};

/// Any scorer, chosen at run time.
class any_scorer : public detail::basic_any<detail::scorer_axis> {
 public:
  using basic_any::basic_any;
  [[nodiscard]] kernelbrain::score score(measurement const& m, baseline const& b) const { return self_->score(m, b); }
};

/// Any scheduler, chosen at run time.
class any_scheduler : public detail::basic_any<detail::scheduler_axis> {
 public:
  using basic_any::basic_any;
  action next(search_view const& v) { return self_->next(v); }
};

/// A composition whose five axes are chosen at run time (one type for every strategy).
using any_policies = policies<any_generator, any_gate, any_ladder, any_scorer, any_scheduler>;

/// Erases the types of a concrete composition. The policies are moved, never copied.
template <class G, class Ga, class L, class Sc, class Sh>
[[nodiscard]] any_policies erase(policies<G, Ga, L, Sc, Sh> p) {
  return {any_generator(std::move(p.generator)), any_gate(std::move(p.gate)), any_ladder(std::move(p.ladder)),
          any_scorer(std::move(p.scorer)), any_scheduler(std::move(p.scheduler))};
}

}  // namespace kernelbrain
