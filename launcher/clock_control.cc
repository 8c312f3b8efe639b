#include "launcher/clock_control.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpubench {
namespace {

// An NVML call's refusal as a status: what the operator can do about it.
absl::Status Refused(const std::string& what, nvml::Return rc) {
  if (rc == nvml::kNoPermission) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, ": NVML refused (no permission: clocks and power limits need root or the "
              "driver's permission)"));
  }
  if (rc == nvml::kNotSupported) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": this GPU does not support it"));
  }
  return absl::InternalError(absl::StrCat(what, ": NVML error ", rc));
}

std::string KeyOf(const std::string& device_id, int index) {
  return device_id.empty() ? absl::StrCat("#", index) : device_id;
}

}  // namespace

ClockControl::ClockControl(std::shared_ptr<nvml::Library> nvml, std::string state_path)
    : nvml_(std::move(nvml)), state_path_(std::move(state_path)) {}

absl::Status ClockControl::Find(const std::string& key, nvml::Device* device) const {
  if (nvml_ == nullptr) {
    return absl::FailedPreconditionError("clock control: NVML is not there (no NVIDIA driver)");
  }
  int index = 0;
  const bool by_index = key[0] == '#';
  if (by_index && !absl::SimpleAtoi(key.substr(1), &index)) {
    return absl::InvalidArgumentError("clock control: bad GPU " + key);
  }
  std::string why;
  if (!nvml_->Find(by_index ? "" : key, index, device, &why)) {
    return absl::NotFoundError("clock control: " + why);
  }
  return absl::OkStatus();
}

absl::Status ClockControl::CheckSaved(const std::string& key, const Saved& saved) const {
  nvml::Device device;
  if (auto s = Find(key, &device); !s.ok()) return s;
  if (saved.power_limit_mw == 0) return absl::OkStatus();
  const nvml::Api& api = nvml_->api();
  unsigned int low = 0, high = 0;
  if (api.power_limit_constraints == nullptr ||
      api.power_limit_constraints(device, &low, &high) != nvml::kSuccess ||
      saved.power_limit_mw < low || saved.power_limit_mw > high) {
    return absl::InvalidArgumentError(absl::StrCat(
        "clock control: ", key, ": a power limit of ", saved.power_limit_mw,
        " mW in the state file is not one this GPU takes; left as it is"));
  }
  return absl::OkStatus();
}

absl::Status ClockControl::Undo(const std::string& key, const Saved& saved) const {
  nvml::Device device;
  if (auto s = Find(key, &device); !s.ok()) return s;
  const nvml::Api& api = nvml_->api();
  absl::Status result;
  if (saved.power_limit_mw > 0) {
    const nvml::Return rc = api.set_power_limit ? api.set_power_limit(device, saved.power_limit_mw)
                                                : nvml::kNotSupported;
    if (rc != nvml::kSuccess) result.Update(Refused(key + ": restoring the power limit", rc));
  }
  if (saved.locked) {
    const nvml::Return rc =
        api.reset_locked_clocks ? api.reset_locked_clocks(device) : nvml::kNotSupported;
    if (rc != nvml::kSuccess) result.Update(Refused(key + ": unlocking the clocks", rc));
  }
  return result;
}

absl::Status ClockControl::WriteState() const {
  if (saved_.empty()) {
    if (unlink(state_path_.c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError("clock control: cannot remove " + state_path_);
    }
    return absl::OkStatus();
  }
  const std::string temp = state_path_ + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    for (const auto& [key, saved] : saved_) {
      out << key << " " << saved.power_limit_mw << " " << (saved.locked ? 1 : 0) << "\n";
    }
    out.flush();
    if (!out) return absl::InternalError("clock control: cannot write " + temp);
  }
  if (rename(temp.c_str(), state_path_.c_str()) != 0) {
    return absl::InternalError("clock control: cannot write " + state_path_);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ClockControl::RecoverAtStart() {
  absl::MutexLock lock(&mu_);
  std::ifstream in(state_path_);
  if (!in) return std::vector<std::string>{};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    Saved saved;
    int locked = 0;
    if (fields >> key >> saved.power_limit_mw >> locked && !key.empty()) {
      saved.locked = locked != 0;
      saved_[key] = saved;
    }
  }
  std::vector<std::string> undone;
  absl::Status result;
  for (auto it = saved_.begin(); it != saved_.end();) {
    if (auto s = CheckSaved(it->first, it->second); !s.ok()) {
      // Not what this daemon writes: set nothing from it.
      result.Update(s);
      it = saved_.erase(it);
      continue;
    }
    if (auto s = Undo(it->first, it->second); !s.ok()) {
      result.Update(s);
      ++it;
      continue;
    }
    std::vector<std::string> what;
    if (it->second.power_limit_mw > 0) {
      what.push_back(absl::StrCat("power limit back to ", it->second.power_limit_mw / 1000.0, " W"));
    }
    if (it->second.locked) what.push_back("clocks unlocked");
    undone.push_back(absl::StrCat(it->first, ": ", absl::StrJoin(what, ", ")));
    it = saved_.erase(it);
  }
  result.Update(WriteState());
  if (!result.ok()) return result;
  return undone;
}

absl::StatusOr<AppliedSetting> ClockControl::Apply(const std::string& device_id, int index,
                                                   const GpuSetting& setting) {
  absl::MutexLock lock(&mu_);
  const std::string key = KeyOf(device_id, index);
  if (auto left = saved_.find(key); left != saved_.end()) {
    // A setting an earlier undo could not take back: try again first.
    if (auto s = Undo(key, left->second); !s.ok()) return s;
    saved_.erase(left);
    if (auto s = WriteState(); !s.ok()) return s;
  }
  nvml::Device device;
  if (auto s = Find(key, &device); !s.ok()) return s;
  const nvml::Api& api = nvml_->api();
  AppliedSetting applied;
  Saved saved;
  if (!setting.clocks.empty()) {
    unsigned int highest = 0;
    if (api.max_clock == nullptr || api.max_clock(device, nvml::kClockGraphics, &highest) != 0) {
      return absl::FailedPreconditionError("config.gpu_clocks: NVML cannot tell this GPU's clocks");
    }
    unsigned int mhz = 0;
    if (setting.clocks == "max") {
      mhz = highest;
    } else if (setting.clocks == "base") {
      if (api.default_applications_clock == nullptr ||
          api.default_applications_clock(device, nvml::kClockGraphics, &mhz) != 0) {
        return absl::FailedPreconditionError(
            "config.gpu_clocks: NVML cannot tell this GPU's base (default applications) clock");
      }
    } else if (!absl::SimpleAtoi(setting.clocks, &mhz) || mhz == 0 || mhz > highest) {
      return absl::InvalidArgumentError(absl::StrCat("config.gpu_clocks: \"", setting.clocks,
                                                     "\" is not base, max or a clock in MHz up to "
                                                     "this GPU's highest, ", highest, " MHz"));
    }
    applied.locked_mhz = mhz;
    saved.locked = true;
  }
  if (setting.power_limit_w > 0) {
    unsigned int low = 0, high = 0, now = 0;
    if (api.power_limit_constraints == nullptr || api.power_limit == nullptr ||
        api.power_limit_constraints(device, &low, &high) != 0 ||
        api.power_limit(device, &now) != 0) {
      return absl::FailedPreconditionError(
          "config.power_limit_w: NVML cannot tell this GPU's power limits");
    }
    const double mw = std::round(setting.power_limit_w * 1000);
    if (mw < low || mw > high) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.power_limit_w: ", setting.power_limit_w, " W is outside this GPU's range, ",
          low / 1000.0, "-", high / 1000.0, " W"));
    }
    applied.power_limit_mw = static_cast<unsigned int>(mw);
    saved.power_limit_mw = now;
  }
  // Recorded before it is done: a daemon that dies from here on finds it.
  saved_[key] = saved;
  if (auto s = WriteState(); !s.ok()) {
    saved_.erase(key);
    return s;
  }
  if (applied.power_limit_mw > 0) {
    const nvml::Return rc = api.set_power_limit ? api.set_power_limit(device, applied.power_limit_mw)
                                                : nvml::kNotSupported;
    if (rc != nvml::kSuccess) return Abandon(key, Saved{}, Refused("config.power_limit_w", rc));
  }
  if (applied.locked_mhz > 0) {
    const nvml::Return rc =
        api.set_locked_clocks ? api.set_locked_clocks(device, applied.locked_mhz, applied.locked_mhz)
                              : nvml::kNotSupported;
    if (rc != nvml::kSuccess) {
      return Abandon(key, Saved{saved.power_limit_mw, false}, Refused("config.gpu_clocks", rc));
    }
  }
  return applied;
}

absl::Status ClockControl::Abandon(const std::string& key, const Saved& done,
                                   absl::Status why) {
  if (absl::Status undo = Undo(key, done); !undo.ok()) {
    // Still set: kept in the file for the next Apply or start to undo.
    saved_[key] = done;
    why.Update(undo);
  } else {
    saved_.erase(key);
  }
  why.Update(WriteState());
  return why;
}

absl::Status ClockControl::Restore(const std::string& device_id, int index) {
  absl::MutexLock lock(&mu_);
  const std::string key = KeyOf(device_id, index);
  auto it = saved_.find(key);
  if (it == saved_.end()) return absl::OkStatus();
  if (auto s = Undo(key, it->second); !s.ok()) return s;  // stays in the file
  saved_.erase(it);
  return WriteState();
}

}  // namespace gpubench
