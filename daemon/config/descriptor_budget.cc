// The descriptor budget (descriptor_budget.h): a pure function of the limit and the settings.
#include "daemon/config/descriptor_budget.h"

#include <algorithm>

namespace jitsym::config {

DescriptorBudget ComputeDescriptorBudget(uint64_t nofile, const DescriptorWishes& wishes) {
  DescriptorBudget b;
  b.nofile = nofile;
  // Under a tiny limit the reserve takes at most half, so files and connections still get some.
  b.reserve = std::min(kDescriptorReserve, nofile / 2);
  const uint64_t rest = nofile - b.reserve;
  const uint64_t for_connections = std::max<uint64_t>(1, rest / 4);
  const uint64_t for_files = std::max<uint64_t>(1, rest - rest / 4);
  b.connections = std::clamp<uint64_t>(wishes.connections, 1, for_connections);
  b.total_files = std::clamp<uint64_t>(wishes.total_files, 1, for_files);
  b.user_connections =
      std::clamp<uint64_t>(wishes.user_connections, 1, std::max<uint64_t>(1, b.connections / 2));
  b.user_files =
      std::clamp<uint64_t>(wishes.user_files, 1, std::max<uint64_t>(1, b.total_files / 2));
  return b;
}

std::string FormatDescriptorBudget(const DescriptorBudget& b) {
  return "nofile " + std::to_string(b.nofile) + " (reserve " + std::to_string(b.reserve) +
         "): " + std::to_string(b.connections) + " connections (" +
         std::to_string(b.user_connections) + " per user), " + std::to_string(b.total_files) +
         " files (" + std::to_string(b.user_files) + " per user)";
}

std::vector<std::string> DescribeLoweredLimits(const DescriptorWishes& wishes,
                                               const DescriptorBudget& budget) {
  std::vector<std::string> out;
  const std::string fit =
      "to fit " + std::to_string(budget.nofile) + " descriptors (raise LimitNOFILE= or ulimit -n)";
  auto note = [&](const char* setting, uint64_t wished, uint64_t granted, std::string why) {
    if (granted >= wished) return;
    out.push_back(std::string(setting) + " lowered from " + std::to_string(wished) + " to " +
                  std::to_string(granted) + " " + why);
  };
  // A per-user share is lowered by its total's halving when the total got all it asked for.
  auto share_why = [&](const char* total, uint64_t total_wished, uint64_t total_granted) {
    return total_granted >= total_wished ? std::string("(at most half of ") + total + ")" : fit;
  };
  note("max-connections", wishes.connections, budget.connections, fit);
  note("max-user-connections", wishes.user_connections, budget.user_connections,
       share_why("max-connections", wishes.connections, budget.connections));
  note("limit-total-files", wishes.total_files, budget.total_files, fit);
  note("limit-user-files", wishes.user_files, budget.user_files,
       share_why("limit-total-files", wishes.total_files, budget.total_files));
  return out;
}

}  // namespace jitsym::config
