// The service manager protocols through libsystemd: notifications reach NOTIFY_SOCKET, the
// watchdog interval comes from WATCHDOG_USEC, and a passed socket is taken only if it is one
// listening Unix stream socket.
#include "daemon/service/service_manager.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace jitsym::service {
namespace {

// Sets environment variables for one test and restores them after.
class ScopedEnv {
 public:
  void Set(const char* name, const std::string& value) {
    Save(name);
    ::setenv(name, value.c_str(), 1);
  }
  void Unset(const char* name) {
    Save(name);
    ::unsetenv(name);
  }
  ~ScopedEnv() {
    for (auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  void Save(const char* name) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// Puts `fd` at SD_LISTEN_FDS_START (3) for the test, restoring what was there.
class AtFd3 {
 public:
  explicit AtFd3(int fd) {
    if (fd == 3) return;  // it is there already (fd 3 was free); closed at the end
    saved_ = ::fcntl(3, F_GETFD) >= 0 ? ::dup(3) : -1;
    EXPECT_EQ(::dup2(fd, 3), 3);
    ::close(fd);
  }
  ~AtFd3() {
    if (saved_ >= 0) {
      ::dup2(saved_, 3);
      ::close(saved_);
    } else {
      ::close(3);
    }
  }

 private:
  int saved_ = -1;
};

std::string TempSocketPath(const char* tag) {
  return "/tmp/jitsym-sm-test-" + std::to_string(::getpid()) + "-" + tag;
}

TEST(NotifyTest, WithoutNotifySocketIsANoOp) {
  ScopedEnv env;
  env.Unset("NOTIFY_SOCKET");
  EXPECT_FALSE(Notify("READY=1"));
}

TEST(NotifyTest, MessageArrivesOnTheSocket) {
  const std::string path = TempSocketPath("notify");
  ::unlink(path.c_str());
  const int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ScopedEnv env;
  env.Set("NOTIFY_SOCKET", path);
  EXPECT_TRUE(Notify("READY=1\nSTATUS=" + StatusLine("two\nlines")));
  char buf[256] = {};
  const ssize_t n = ::recv(sock, buf, sizeof(buf) - 1, MSG_DONTWAIT);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "READY=1\nSTATUS=two lines");
  ::close(sock);
  ::unlink(path.c_str());
}

TEST(WatchdogIntervalTest, FromWatchdogUsecForThisProcessOnly) {
  ScopedEnv env;
  env.Unset("WATCHDOG_PID");
  env.Unset("WATCHDOG_USEC");
  EXPECT_FALSE(WatchdogInterval());
  env.Set("WATCHDOG_USEC", "400000");
  ASSERT_TRUE(WatchdogInterval());
  EXPECT_EQ(WatchdogInterval()->count(), 400000);
  env.Set("WATCHDOG_PID", std::to_string(::getpid()));
  EXPECT_TRUE(WatchdogInterval());
  env.Set("WATCHDOG_PID", "1");  // meant for another process
  EXPECT_FALSE(WatchdogInterval());
  env.Unset("WATCHDOG_PID");
  env.Set("WATCHDOG_USEC", "soon");
  EXPECT_FALSE(WatchdogInterval());
}

TEST(TakeListeningSocketTest, NothingPassed) {
  ScopedEnv env;
  env.Unset("LISTEN_FDS");
  env.Unset("LISTEN_PID");
  EXPECT_FALSE(TakeListeningSocket());
}

TEST(TakeListeningSocketTest, AListeningUnixStreamSocketIsTaken) {
  const std::string path = TempSocketPath("listen");
  ::unlink(path.c_str());
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(sock, 4), 0);
  AtFd3 at3(sock);
  ScopedEnv env;
  env.Set("LISTEN_PID", std::to_string(::getpid()));
  env.Set("LISTEN_FDS", "1");
  auto fd = TakeListeningSocket();
  ASSERT_TRUE(fd);
  EXPECT_EQ(*fd, 3);
  EXPECT_EQ(std::getenv("LISTEN_FDS"), nullptr);  // not passed on to children
  EXPECT_NE(::fcntl(3, F_GETFD) & FD_CLOEXEC, 0);
  ::unlink(path.c_str());
}

TEST(TakeListeningSocketTest, NotAListeningStreamSocketIsAnError) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM, 0, pair), 0);
  ::close(pair[1]);
  AtFd3 at3(pair[0]);
  ScopedEnv env;
  env.Set("LISTEN_PID", std::to_string(::getpid()));
  env.Set("LISTEN_FDS", "1");
  try {
    TakeListeningSocket();
    FAIL() << "a datagram socket was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a listening Unix stream socket"), std::string::npos)
        << e.what();
  }
}

TEST(TakeListeningSocketTest, ForAnotherProcessIsIgnored) {
  ScopedEnv env;
  env.Set("LISTEN_PID", "1");
  env.Set("LISTEN_FDS", "1");
  EXPECT_FALSE(TakeListeningSocket());
}

}  // namespace
}  // namespace jitsym::service
