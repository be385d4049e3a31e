#pragma once
// Errors the runtime raises. All derive from std::runtime_error and say what was wrong and where.
#include <stdexcept>
#include <string>

namespace nvl::rt {

// Bad use of the runtime: sleeping into the past, waiting outside a fiber, closing a closed channel.
class UsageError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Every fiber is blocked, nothing is scheduled and some fiber waits other than a daemon at an idle point.
// what() lists each waiting fiber by name and what it waits on.
class DeadlockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A fiber's body threw: the run fails with the fiber's name and the original message.
class FiberFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad user input (a scenario, profile or trace file, a command-line value): names the file, the key
// path or line, and what was expected. Commands print it as one line and exit 2.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, const std::string& where, const std::string& problem)
      : std::runtime_error(file + (where.empty() ? "" : ": " + where) + ": " + problem) {}
};

// Thrown inside a blocked fiber when its runtime shuts down, to unwind its stack.
// Fiber bodies must not swallow it (catch it only to rethrow).
class Cancelled {
 public:
  const char* what() const noexcept { return "fiber cancelled: runtime shutting down"; }
};

}  // namespace nvl::rt
