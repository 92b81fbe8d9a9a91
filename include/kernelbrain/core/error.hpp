// The one exception type the library throws for errors a user can cause (bad input, bad config).
#pragma once
#include <stdexcept>
#include <string>

namespace kernelbrain {

/// Thrown for user-caused errors. The message names the input and says what to do.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown by a generator that cannot go on until something outside the search happens (an exchange
/// folder waiting for answer files): the engine stops the search with what() as the reason, keeps
/// everything measured, and a resumed run continues from there.
class search_suspended : public error {
 public:
  using error::error;
};

}  // namespace kernelbrain
