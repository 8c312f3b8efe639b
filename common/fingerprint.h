// A run's environment fingerprint (gpubench.v1.Fingerprint) in words: its
// fields for show, and what changed between two runs' for compare and the
// nightly verdict ("power limit 700 W -> 500 W").
#ifndef GPUBENCH_COMMON_FINGERPRINT_H_
#define GPUBENCH_COMMON_FINGERPRINT_H_

#include <string>
#include <utility>
#include <vector>

#include "gpubench/v1/result.pb.h"

namespace gpubench {

// The fields the fingerprint has, in the message's order, as (label,
// value): ("driver", "580.159.04"), ("power limit", "700 W"), ("ECC", "on").
std::vector<std::pair<std::string, std::string>> FingerprintFields(const v1::Fingerprint& f);

// What differs from before to after, a field each ("driver 580.159.04 ->
// 590.12", "power limit 700 W -> 500 W"; "-" where one side lacks the
// field). The GPU's identity (UUID, serial) is left out: another card is a
// difference of hosts, not of setup; so is the PCIe link's current
// generation and width, which drop while the GPU idles (the maximum ones
// count). Nothing where either side has no
// fingerprint at all (a run from before fingerprints): there is nothing to
// tell from.
std::vector<std::string> FingerprintChanges(const v1::Fingerprint& before,
                                            const v1::Fingerprint& after);

// FingerprintChanges joined for a verdict: "environment differs: a, b", or
// "" where nothing differs.
std::string EnvironmentDiffers(const v1::Fingerprint& before, const v1::Fingerprint& after);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_FINGERPRINT_H_
