// The language models' figures of a job as one table, for `gpubench show`
// and the HTML report alike: tokens/s, MFU with its denominator, the share
// of the host's own matmul peak, time to first token, inter-token latency,
// decoding's reads and the attention kernel. Thread-safe (no state).
#ifndef GPUBENCH_REPORT_LANGUAGE_MODEL_TABLE_H_
#define GPUBENCH_REPORT_LANGUAGE_MODEL_TABLE_H_

#include <map>
#include <string>
#include <vector>

#include "gpubench/v1/result.pb.h"
#include "report/roofline.h"

namespace gpubench::report {

struct LanguageModelTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // cells as printed; "-" where none
};

// What the columns mean, in a sentence under the table.
extern const char kLanguageModelLegend[];

// The table as the HTML report shows it: a <table> with its caption
// (escaped here), numbers right-aligned.
std::string TableHtml(const std::string& caption, const LanguageModelTable& table);

// One row per measured run with tokens/s, in order; no rows where there is
// none. peaks: the host's own (PeaksOf).
LanguageModelTable LanguageModelFigures(const std::vector<const v1::Run*>& runs,
                                        const std::map<std::string, DevicePeaks>& peaks);

}  // namespace gpubench::report

#endif  // GPUBENCH_REPORT_LANGUAGE_MODEL_TABLE_H_
