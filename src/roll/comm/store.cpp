#include "roll/comm/store.h"

#include <fmt/format.h>

#include "roll/comm/store_impl.h"
#include "roll/core/error.h"

namespace roll::comm {
namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

std::shared_ptr<Store> Store::tcp(const StoreOptions& o) {
  auto s = std::make_shared<Store>();
  s->impl_ = std::make_shared<Impl>();
  try {
    s->impl_->store = compat::make_tcp_store(o.host, o.port, o.is_server, o.timeout);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{} the rendezvous store at {}:{} failed: {}", o.is_server ? "hosting" : "connecting to",
                            o.host, o.port, e.what()));
  }
  s->impl_->port = compat::tcp_store_port(s->impl_->store);
  return s;
}

std::shared_ptr<Store> Store::prefixed(const std::shared_ptr<Store>& base, const std::string& prefix) {
  auto s = std::make_shared<Store>();
  s->impl_ = std::make_shared<Impl>();
  s->impl_->store = compat::make_prefix_store(prefix, base->impl_->store);
  return s;
}

void Store::set(const std::string& key, const std::string& value) { impl_->store->set(key, bytes(value)); }

std::string Store::get(const std::string& key) {
  try {
    auto v = impl_->store->get(key);
    return {v.begin(), v.end()};
  } catch (const std::exception& e) {
    throw Error(fmt::format("rendezvous store: waiting for key '{}' failed: {}", key, e.what()));
  }
}

int64_t Store::add(const std::string& key, int64_t delta) { return impl_->store->add(key, delta); }

bool Store::check(const std::vector<std::string>& keys) { return impl_->store->check(keys); }

void Store::wait(const std::vector<std::string>& keys) {
  try {
    impl_->store->wait(keys);
  } catch (const std::exception& e) {
    throw Error(fmt::format("rendezvous store: waiting for {} key(s) (first '{}') failed: {}", keys.size(),
                            keys.empty() ? "" : keys.front(), e.what()));
  }
}

uint16_t Store::port() const { return impl_->port; }

}  // namespace roll::comm
