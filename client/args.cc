#include "client/args.h"

#include <cstdio>

#include "client/command.h"

namespace jitsym::client {

ArgParser::ArgParser(std::string command, std::string usage)
    : command_(std::move(command)), usage_(std::move(usage)) {}

void ArgParser::AddFlag(std::string name, bool* value) {
  options_.push_back(Option{std::move(name), value, nullptr});
}

void ArgParser::AddValue(std::string name, std::optional<std::string>* value) {
  options_.push_back(Option{std::move(name), nullptr, value});
}

void ArgParser::AddList(std::string name, std::vector<std::string>* values) {
  options_.push_back(Option{std::move(name), nullptr, nullptr, values});
}

int ArgParser::UsageError(std::string_view message) const {
  std::fprintf(stderr, "jitsym %s: %.*s\n%s", command_.c_str(), static_cast<int>(message.size()),
               message.data(), usage_.substr(0, usage_.find('\n') + 1).c_str());
  std::fprintf(stderr, "(`jitsym %s --help` for more)\n", command_.c_str());
  return kExitUsage;
}

std::optional<int> ArgParser::Parse(const std::vector<std::string>& args,
                                    std::vector<std::string>* positional) const {
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      positional->push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage_.c_str(), stdout);
      return kExitOk;
    }
    std::string_view name = arg;
    std::optional<std::string> inline_value;
    if (const size_t eq = name.find('='); eq != std::string_view::npos) {
      inline_value = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    const Option* option = nullptr;
    for (const Option& o : options_) {
      if (name == o.name) option = &o;
    }
    if (option == nullptr) return UsageError("unknown option " + std::string(name));
    if (option->flag != nullptr) {
      if (inline_value) return UsageError(std::string(name) + " takes no value");
      *option->flag = true;
      continue;
    }
    // Given twice (or with its alias: -o and --output): which one was meant is a guess.
    if (option->value != nullptr && option->value->has_value()) {
      return UsageError(std::string(name) + " given more than once");
    }
    std::string value;
    if (inline_value) {
      value = std::move(*inline_value);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return UsageError(std::string(name) + " needs a value");
    }
    if (option->list != nullptr) {
      option->list->push_back(std::move(value));
    } else {
      *option->value = std::move(value);
    }
  }
  return std::nullopt;
}

}  // namespace jitsym::client
