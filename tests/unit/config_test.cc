// The settings table, the config file parser and the command line: precedence, every malformed
// line named by file and line, value syntaxes.
#include "daemon/config/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace jitsym::config {
namespace {

// The error message of a Status, or nullopt when it is ok: what the user reads.
std::optional<std::string> Msg(const Status& s) {
  if (s.ok()) return std::nullopt;
  return s.error().message;
}

std::optional<std::string> Parse(std::vector<const char*> args, CommandLine* out) {
  args.insert(args.begin(), "jitsymd");
  return Msg(ParseCommandLine(static_cast<int>(args.size()), args.data(), out));
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/jitsymd-config-test-XXXXXX";
    const int fd = ::mkstemp(name);
    EXPECT_GE(fd, 0);
    path_ = name;
    EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(SettingsTableTest, NamesAreUniqueAndDocumented) {
  std::set<std::string_view> names;
  for (const SettingDef& def : AllSettings()) {
    EXPECT_TRUE(names.insert(def.name).second) << def.name;
    EXPECT_FALSE(def.help.empty()) << def.name;
    EXPECT_TRUE(def.binding.parse && def.binding.format) << def.name;
    EXPECT_EQ(def.binding.repeatable, static_cast<bool>(def.binding.clear)) << def.name;
    EXPECT_NE(OptionsHelp().find("--" + std::string(def.name)), std::string::npos) << def.name;
  }
  // The options jitsymd has always had.
  for (const char* name : {"watch", "r2rmap-dir", "socket", "threads", "log-level"}) {
    EXPECT_NE(FindSetting(name), nullptr) << name;
  }
}

TEST(ConfigTextTest, EmptyAndCommentsOnlyKeepDefaults) {
  Settings s;
  EXPECT_EQ(Msg(ParseConfigText("", "f", &s)), std::nullopt);
  EXPECT_EQ(Msg(ParseConfigText("# nothing\n\n   # indented\n\t\n", "f", &s)), std::nullopt);
  Settings defaults;
  EXPECT_TRUE(ChangedSettings(s, defaults).empty());
}

TEST(ConfigTextTest, SettingsWithBlanksAndTrailingComments) {
  Settings s;
  ASSERT_EQ(Msg(ParseConfigText("watch = /a\n"
                                "  watch=/b   # second\n"
                                "socket = /run/x#y.sock\n"
                                "threads\t=\t3\r\n"
                                "log-level = debug\n"
                                "retention = 90s\n"
                                "memory-budget = 512M\n",
                                "f", &s)),
            std::nullopt);
  EXPECT_EQ(s.watch, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(s.socket, "/run/x#y.sock");  // '#' not after a blank is part of the value
  EXPECT_EQ(s.threads, 3);
  EXPECT_EQ(s.log_level, "debug");
  EXPECT_EQ(s.retention_ms, 90000u);
  EXPECT_EQ(s.memory_budget_bytes, 512u << 20);
}

TEST(ConfigTextTest, ErrorsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"watch /a\n", "cfg:1: expected 'name = value', got 'watch /a'"},
      {"\n\nbogus = 1\n", "cfg:3: unknown setting 'bogus'"},
      {"threads = 0\n", "cfg:1: threads takes a number from 1 to 256"},
      {"threads = 2x\n", "cfg:1: threads takes a number from 1 to 256"},
      {"log-level = loud\n", "cfg:1: log-level takes one of debug, info, warning, error"},
      {"socket = /a\nsocket = /b\n", "cfg:2: 'socket' is already set on line 1"},
      {"socket =\n", "cfg:1: socket needs a value"},
      {"retention = soon\n", "cfg:1: retention takes a duration"},
      {"memory-budget = -1\n", "cfg:1: memory-budget takes a size"},
      {"watch = /a\0b\n", "cfg:1: contains a NUL byte"},
  };
  for (const Case& c : cases) {
    Settings s;
    std::string_view text = c.text;
    if (std::string_view(c.error).ends_with("NUL byte")) text = std::string_view(c.text, 13);
    auto err = Msg(ParseConfigText(text, "cfg", &s));
    ASSERT_TRUE(err.has_value()) << c.text;
    EXPECT_TRUE(err->starts_with(c.error)) << "got: " << *err;
  }
}

TEST(ConfigTextTest, RandomBytesNeverCrashAndErrorsNameALine) {
  std::mt19937 rng(11);
  const std::string alphabet = "watch=socket#threads \t\r\n0123456789kMGmsh/-\x01\xff";
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    const int n = static_cast<int>(rng() % 120);
    for (int j = 0; j < n; ++j) text += alphabet[rng() % alphabet.size()];
    Settings s;
    if (auto err = Msg(ParseConfigText(text, "fuzz", &s))) {
      EXPECT_TRUE(err->starts_with("fuzz:")) << *err;
    }
  }
}

TEST(ValueSyntaxTest, Sizes) {
  EXPECT_EQ(ParseSize("0"), 0u);
  EXPECT_EQ(ParseSize("4096"), 4096u);
  EXPECT_EQ(ParseSize("4k"), 4096u);
  EXPECT_EQ(ParseSize("3M"), 3u << 20);
  EXPECT_EQ(ParseSize("2G"), 2ull << 30);
  EXPECT_EQ(ParseSize("1T"), 1ull << 40);
  EXPECT_FALSE(ParseSize(""));
  EXPECT_FALSE(ParseSize("G"));
  EXPECT_FALSE(ParseSize("1.5G"));
  EXPECT_FALSE(ParseSize("99999999999T"));  // overflows
  EXPECT_EQ(FormatSize(1ull << 30), "1G");
  EXPECT_EQ(FormatSize(1536), "1536");
  EXPECT_EQ(FormatSize(0), "0");
}

TEST(ValueSyntaxTest, Durations) {
  EXPECT_EQ(ParseDurationMs("900"), 900000u);
  EXPECT_EQ(ParseDurationMs("250ms"), 250u);
  EXPECT_EQ(ParseDurationMs("2s"), 2000u);
  EXPECT_EQ(ParseDurationMs("15m"), 900000u);
  EXPECT_EQ(ParseDurationMs("2h"), 7200000u);
  EXPECT_EQ(ParseDurationMs("1d"), 86400000u);
  EXPECT_EQ(ParseDurationMs("0"), 0u);
  EXPECT_FALSE(ParseDurationMs(""));
  EXPECT_FALSE(ParseDurationMs("m"));
  EXPECT_FALSE(ParseDurationMs("5 m"));
  EXPECT_FALSE(ParseDurationMs("-5s"));
  EXPECT_FALSE(ParseDurationMs("99999999999999999999"));
  for (uint64_t ms : {0ull, 250ull, 2000ull, 900000ull, 7200000ull, 86400000ull, 1500ull}) {
    EXPECT_EQ(ParseDurationMs(FormatDurationMs(ms)), ms) << ms;
  }
}

TEST(BindingTest, Uint) {
  // The helper binds a Settings field; exercise it on an existing one of its type.
  Settings s;
  Binding u = Uint(&Settings::memory_budget_bytes, 1, 100);
  EXPECT_EQ(Msg(u.parse(s, "100")), std::nullopt);
  EXPECT_EQ(s.memory_budget_bytes, 100u);
  EXPECT_EQ(Msg(u.parse(s, "0")), "takes a number from 1 to 100");
  EXPECT_EQ(Msg(u.parse(s, "101")), "takes a number from 1 to 100");
  EXPECT_EQ(Msg(u.parse(s, "1k")), "takes a number from 1 to 100");
  EXPECT_EQ(u.format(s), std::vector<std::string>{"100"});
}

TEST(CommandLineTest, BothValueSpellingsAndMetaOptions) {
  CommandLine cl;
  ASSERT_EQ(Parse({"--watch", "/a", "--watch=/b", "--threads=4", "--config", "/etc/x.conf",
                   "--print-config"},
                  &cl),
            std::nullopt);
  EXPECT_EQ(cl.values.size(), 3u);
  // --log-level warn has always been accepted, as warning.
  CommandLine warn;
  ASSERT_EQ(Parse({"--log-level", "warn"}, &warn), std::nullopt);
  Settings s;
  ASSERT_EQ(Msg(BuildSettings(warn, &s)), std::nullopt);
  EXPECT_EQ(s.log_level, "warning");
  EXPECT_EQ(cl.config_path, "/etc/x.conf");
  EXPECT_TRUE(cl.config_given);
  EXPECT_TRUE(cl.print_config);
}

TEST(CommandLineTest, Errors) {
  struct Case {
    std::vector<const char*> args;
    const char* error;
  };
  const Case cases[] = {
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"watch"}, "unknown option 'watch'"},
      {{"--watch"}, "--watch needs a value"},
      {{"--threads", "0"}, "--threads takes a number from 1 to 256"},
      {{"--threads", "300"}, "--threads takes a number from 1 to 256"},
      {{"--log-level", "loud"}, "--log-level takes one of"},
      {{"--config="}, "--config needs a file name"},
  };
  for (const Case& c : cases) {
    CommandLine cl;
    auto err = Parse(c.args, &cl);
    ASSERT_TRUE(err.has_value()) << c.args[0];
    EXPECT_TRUE(err->starts_with(c.error)) << "got: " << *err;
  }
}

TEST(BuildSettingsTest, CommandLineOverridesFileAndReplacesLists) {
  TempFile file(
      "watch = /from-file-1\n"
      "watch = /from-file-2\n"
      "threads = 3\n"
      "log-level = warning\n"
      "retention = 1h\n");
  CommandLine cl;
  ASSERT_EQ(Parse({"--config", file.path().c_str(), "--watch", "/cli", "--threads", "5"}, &cl),
            std::nullopt);
  Settings s;
  bool found = false;
  ASSERT_EQ(Msg(BuildSettings(cl, &s, &found)), std::nullopt);
  EXPECT_TRUE(found);
  EXPECT_EQ(s.watch, std::vector<std::string>{"/cli"});
  EXPECT_EQ(s.threads, 5);
  EXPECT_EQ(s.log_level, "warning");             // from the file
  EXPECT_EQ(s.retention_ms, 3600000u);           // from the file
  EXPECT_EQ(s.memory_budget_bytes, 1ull << 30);  // default
}

TEST(BuildSettingsTest, MissingDefaultFileIsFineMissingGivenFileIsNot) {
  CommandLine cl;
  cl.config_path = "/nonexistent/jitsymd.conf";
  Settings s;
  bool found = true;
  EXPECT_EQ(Msg(BuildSettings(cl, &s, &found)), std::nullopt);
  EXPECT_FALSE(found);
  cl.config_given = true;
  auto err = Msg(BuildSettings(cl, &s));
  ASSERT_TRUE(err.has_value());
  EXPECT_NE(err->find("/nonexistent/jitsymd.conf"), std::string::npos) << *err;
}

TEST(BuildSettingsTest, BadFileIsAnError) {
  TempFile file("threads = many\n");
  CommandLine cl;
  cl.config_path = file.path();
  cl.config_given = true;
  Settings s;
  auto err = Msg(BuildSettings(cl, &s));
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(*err, file.path() + ":1: threads takes a number from 1 to 256");
}

TEST(BuildSettingsTest, OnlyRegularFilesAndDevNullOfBoundedSizeAreRead) {
  CommandLine cl;
  cl.config_given = true;
  Settings s;
  cl.config_path = "/dev/null";  // no settings
  EXPECT_EQ(Msg(BuildSettings(cl, &s)), std::nullopt);
  cl.config_path = "/tmp";
  EXPECT_EQ(Msg(BuildSettings(cl, &s)), "config file /tmp is not a regular file");
  TempFile big(std::string(kMaxConfigBytes + 1, '#'));
  cl.config_path = big.path();
  EXPECT_EQ(Msg(BuildSettings(cl, &s)), "config file " + big.path() + " is larger than " +
                                            std::to_string(kMaxConfigBytes) + " bytes");
  TempFile full(std::string(kMaxConfigBytes, '#'));
  cl.config_path = full.path();
  EXPECT_EQ(Msg(BuildSettings(cl, &s)), std::nullopt);
}

TEST(FormatConfigTest, RoundTripsThroughTheParser) {
  Settings s;
  s.watch = {"/a", "/b"};
  s.r2rmap_dirs = {"/r"};
  s.socket = "/run/j.sock";
  s.threads = 7;
  s.log_level = "error";
  s.retention_ms = 1500;
  s.memory_budget_bytes = 3ull << 20;
  Settings back;
  ASSERT_EQ(Msg(ParseConfigText(FormatConfig(s), "formatted", &back)), std::nullopt);
  EXPECT_TRUE(ChangedSettings(s, back).empty()) << FormatConfig(back);
  back.threads = 8;
  auto changed = ChangedSettings(s, back);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0]->name, "threads");
}

// Code that reacts to a config error by kind (a reload keeps the running settings either way,
// but a missing file is an I/O failure, not the operator's typo) gets the kind from the one
// error convention.
TEST(BuildSettingsTest, ErrorsCarryAKind) {
  Settings s;
  EXPECT_EQ(ParseConfigText("nonsense\n", "f", &s).error().kind, ErrorKind::kMalformed);
  EXPECT_EQ(ParseConfigText("threads = 0\n", "f", &s).error().kind, ErrorKind::kUsage);
  CommandLine cl;
  cl.config_path = "/nonexistent/jitsymd.conf";
  cl.config_given = true;
  EXPECT_EQ(BuildSettings(cl, &s).error().kind, ErrorKind::kIo);
  CommandLine bad;
  EXPECT_EQ(
      ParseCommandLine(2, std::vector<const char*>{"jitsymd", "--nope"}.data(), &bad).error().kind,
      ErrorKind::kUsage);
}

}  // namespace
}  // namespace jitsym::config
