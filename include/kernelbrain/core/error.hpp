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

/// Thrown by a generator whose model endpoint keeps failing, or failed in a way that asking again
/// will not fix (a refused key or parameter, an unknown model, a spent quota): the search stops as
/// when suspended (everything measured is kept, and --resume continues once the endpoint is fixed),
/// and the caller reports it as a failure.
class model_endpoint_failed : public search_suspended {
 public:
  using search_suspended::search_suspended;
};

}  // namespace kernelbrain
