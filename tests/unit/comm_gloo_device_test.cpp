// Gloo device choice from the environment (pure) and its resolution on this machine.
#include <gtest/gtest.h>

#include <map>

#include "roll/comm/gloo_device.h"
#include "roll/core/error.h"

using namespace roll::comm;

namespace {

EnvLookup fake(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST(CommGlooDeviceChoice, SingleNodeDefaultsToLoopbackAddress) {
  auto d = choose_gloo_devices(fake({}), false, "");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, GlooDeviceSpec::Kind::address);
  EXPECT_EQ(d[0].value, "127.0.0.1");
  EXPECT_EQ(d[0].source, "default");
}

TEST(CommGlooDeviceChoice, MultiNodeRoutesTowardsTheMasterNeverTheHostname) {
  auto d = choose_gloo_devices(fake({}), true, "10.1.2.3");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, GlooDeviceSpec::Kind::route_to);
  EXPECT_EQ(d[0].value, "10.1.2.3");
  EXPECT_THROW(choose_gloo_devices(fake({}), true, ""), roll::Error);
}

TEST(CommGlooDeviceChoice, GlooSocketIfnameListWinsOverHcclVariables) {
  auto d = choose_gloo_devices(
      fake({{"GLOO_SOCKET_IFNAME", "eth0, eth1"}, {"HCCL_SOCKET_IFNAME", "enp"}, {"HCCL_IF_IP", "10.0.0.5"}}), true,
      "10.0.0.1");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].kind, GlooDeviceSpec::Kind::interface);
  EXPECT_EQ(d[0].value, "eth0");
  EXPECT_EQ(d[1].value, "eth1");
  EXPECT_EQ(d[0].source, "GLOO_SOCKET_IFNAME");
}

TEST(CommGlooDeviceChoice, HcclSocketIfnameForms) {
  auto exact = choose_gloo_devices(fake({{"HCCL_SOCKET_IFNAME", "=eth0"}}), true, "");
  ASSERT_EQ(exact.size(), 1u);
  EXPECT_EQ(exact[0].value, "eth0");
  EXPECT_FALSE(exact[0].prefix);
  auto prefix = choose_gloo_devices(fake({{"HCCL_SOCKET_IFNAME", "enp,eth"}}), true, "");
  ASSERT_EQ(prefix.size(), 1u);
  EXPECT_EQ(prefix[0].value, "enp");
  EXPECT_TRUE(prefix[0].prefix);
  try {
    choose_gloo_devices(fake({{"HCCL_SOCKET_IFNAME", "^=docker0"}}), true, "");
    FAIL() << "exclusion form accepted";
  } catch (const roll::Error& e) {
    EXPECT_NE(std::string(e.what()).find("HCCL_SOCKET_IFNAME"), std::string::npos);
  }
}

TEST(CommGlooDeviceChoice, HcclIfIpIsAnAddress) {
  auto d = choose_gloo_devices(fake({{"HCCL_IF_IP", "192.168.1.7"}}), true, "10.0.0.1");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, GlooDeviceSpec::Kind::address);
  EXPECT_EQ(d[0].value, "192.168.1.7");
  EXPECT_THROW(choose_gloo_devices(fake({{"HCCL_IF_IP", "node-3"}}), true, ""), roll::Error);
}

TEST(CommGlooDeviceResolve, LoopbackInterfaceAndRoute) {
  auto lo = resolve_gloo_device({GlooDeviceSpec::Kind::interface, "lo", false, "GLOO_SOCKET_IFNAME"});
  EXPECT_TRUE(lo.by_interface);
  EXPECT_EQ(lo.value, "lo");
  auto pre = resolve_gloo_device({GlooDeviceSpec::Kind::interface, "l", true, "HCCL_SOCKET_IFNAME"});
  EXPECT_EQ(pre.value, "lo");
  auto route = resolve_gloo_device({GlooDeviceSpec::Kind::route_to, "127.0.0.1", false, "default"});
  EXPECT_FALSE(route.by_interface);
  EXPECT_EQ(route.value, "127.0.0.1");
  try {
    resolve_gloo_device({GlooDeviceSpec::Kind::interface, "nosuchif0", false, "GLOO_SOCKET_IFNAME"});
    FAIL() << "unknown interface accepted";
  } catch (const roll::Error& e) {
    EXPECT_NE(std::string(e.what()).find("nosuchif0"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("lo (127.0.0.1)"), std::string::npos);
  }
}
