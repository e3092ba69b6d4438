// Option parsing for one subcommand: "--name VALUE", "--name=VALUE", flags, "--help", "--".
#ifndef JITSYM_CLIENT_ARGS_H_
#define JITSYM_CLIENT_ARGS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::client {

class ArgParser {
 public:
  // `usage` is printed for --help; its first line also follows a usage error (on stderr).
  ArgParser(std::string command, std::string usage);

  void AddFlag(std::string name, bool* value);
  // `value` starts empty; an option given twice (names sharing a value are aliases) is a usage
  // error.
  void AddValue(std::string name, std::optional<std::string>* value);
  // An option that may be given any number of times (--label K=V --label K2=V2), in order.
  void AddList(std::string name, std::vector<std::string>* values);

  // Parses `args`; positional arguments go to *positional. Returns nullopt to go on, or the exit
  // status to return right away (0 after --help, kExitUsage after an error, already reported).
  std::optional<int> Parse(const std::vector<std::string>& args,
                           std::vector<std::string>* positional) const;

  // Reports a usage error for this command; returns kExitUsage.
  int UsageError(std::string_view message) const;

 private:
  struct Option {
    std::string name;
    bool* flag = nullptr;
    std::optional<std::string>* value = nullptr;
    std::vector<std::string>* list = nullptr;
  };
  std::string command_;
  std::string usage_;
  std::vector<Option> options_;
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_ARGS_H_
