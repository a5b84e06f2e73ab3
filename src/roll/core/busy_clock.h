#pragma once
// How long this process has spent working rather than waiting, for the step profile's
// system/busy/<cluster> (docs/tracking.md, "Step profile"). Work is marked by a BusyScope around it (serial RPC
// handlers, engine steps). Scopes may nest and may be open on several threads at once: the clock
// counts the union of their intervals, so two threads working through the same second add one second.

namespace roll {

class BusyScope {
 public:
  BusyScope();
  ~BusyScope();
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;
};

// Busy seconds since the process started, including scopes still open.
double busy_seconds();

}  // namespace roll
