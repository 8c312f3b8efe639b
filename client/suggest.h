// Did-you-mean for the CLI's commands and flags.
#ifndef GPUBENCH_CLIENT_SUGGEST_H_
#define GPUBENCH_CLIENT_SUGGEST_H_

#include <string>
#include <vector>

namespace gpubench::client {

// "; did you mean \"K\"?" for the known word K closest to `word` by edit
// distance, when it is close enough to be a typo (at most 2 edits, and
// fewer than half of the word); "" otherwise.
std::string DidYouMean(const std::string& word, const std::vector<std::string>& known);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_SUGGEST_H_
