#include "emu/check/error_event_checker.h"

namespace nvl::emu {

CheckResult ErrorEventChecker::finish(const RunEnd& end) {
  if (end.error_records == 0) return {true, "no error-severity record in the event log"};
  return {false, std::to_string(end.error_records) + " error-severity record(s); first: " + end.first_error};
}

}  // namespace nvl::emu
