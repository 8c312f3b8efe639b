// The language models' plots of one job in the HTML report: inter-token
// latency and time to first token against the context, and MFU by model size.
// (Tokens/s against batch and model size are the sweep plots', plots.h.)
#ifndef GPUBENCH_REPORT_LANGUAGE_MODEL_PLOTS_H_
#define GPUBENCH_REPORT_LANGUAGE_MODEL_PLOTS_H_

#include <string>

#include "report/facets.h"

namespace gpubench::report::internal {

// The language-model runs' figures as a table (show's, from
// report/language_model_table.h), then the <figure>s of view's
// language-model runs, empty when none:
//  - decoding's ITL p50 and p99 and TTFT p50 against the prompt length, a
//    line per config that agrees on everything else (two prompt lengths at
//    least);
//  - a bar per training run with an MFU: its share of the GPU's dense
//    datasheet peak, and, where the host's matmul runs measured the
//    precision's peak (report/roofline.h), its share of that in the bar's
//    tooltip and a second bar.
// Thread-safe (no state).
std::string LanguageModelPlots(const JobView& view);

}  // namespace gpubench::report::internal

#endif  // GPUBENCH_REPORT_LANGUAGE_MODEL_PLOTS_H_
