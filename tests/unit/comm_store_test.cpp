// The rendezvous store: host + connect in one process, prefixes, and a clear error when nobody hosts.
#include <gtest/gtest.h>

#include "roll/comm/store.h"
#include "roll/core/error.h"

using namespace roll::comm;

TEST(CommStore, HostConnectSetGetAdd) {
  auto server = Store::tcp({"127.0.0.1", 0, true, std::chrono::seconds(10)});
  ASSERT_GT(server->port(), 0);
  auto client = Store::tcp({"127.0.0.1", server->port(), false, std::chrono::seconds(10)});
  client->set("endpoint/actor_train/0", "tcp://10.0.0.1:5555");
  EXPECT_EQ(server->get("endpoint/actor_train/0"), "tcp://10.0.0.1:5555");
  EXPECT_EQ(server->add("joined", 1), 1);
  EXPECT_EQ(client->add("joined", 1), 2);
  EXPECT_TRUE(client->check({"joined"}));
  EXPECT_FALSE(client->check({"absent"}));
  auto a = Store::prefixed(client, "a"), b = Store::prefixed(client, "b");
  a->set("k", "1");
  b->set("k", "2");
  EXPECT_EQ(a->get("k"), "1");
  EXPECT_EQ(b->get("k"), "2");
}

TEST(CommStore, ConnectingToNobodyFailsNamingTheAddress) {
  // Take a free port and release it so that nothing listens there.
  uint16_t port;
  { port = Store::tcp({"127.0.0.1", 0, true, std::chrono::seconds(1)})->port(); }
  try {
    Store::tcp({"127.0.0.1", port, false, std::chrono::milliseconds(300)});
    FAIL() << "connected to nobody";
  } catch (const roll::Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos) << e.what();
  }
}

TEST(CommStore, GetTimesOutWithTheKeyName) {
  auto server = Store::tcp({"127.0.0.1", 0, true, std::chrono::seconds(1)});  // below 1 s c10d rounds to 0
  try {
    server->get("never/set");
    FAIL();
  } catch (const roll::Error& e) {
    EXPECT_NE(std::string(e.what()).find("never/set"), std::string::npos) << e.what();
  }
}
