// Test helper: an environment variable of this process set (or unset) for one scope, and restored.
#pragma once
#include <stdlib.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace kb_test {

/// Sets `name` to `value` (nullopt: unsets it) until the end of the scope, then restores what was there.
class scoped_env {
 public:
  scoped_env(std::string name, std::optional<std::string> const& value) : name_(std::move(name)) {
    if (char const* old = std::getenv(name_.c_str())) old_ = old;
    if (value)
      ::setenv(name_.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ~scoped_env() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  scoped_env(scoped_env const&) = delete;
  scoped_env& operator=(scoped_env const&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace kb_test
