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

}  // namespace kernelbrain
