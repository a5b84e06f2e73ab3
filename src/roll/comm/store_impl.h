#pragma once
// Store internals shared by comm/*.cpp (pulls in c10d through c10d_compat.h).
#include "roll/comm/c10d_compat.h"
#include "roll/comm/store.h"

namespace roll::comm {

struct Store::Impl {
  compat::StorePtr store;
  uint16_t port = 0;
};

}  // namespace roll::comm
