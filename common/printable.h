// Text that another party chose (a job's name, a label, a run's error, a
// worker's log line), made safe to show and to keep: control and
// bidirectional formatting characters escaped, and a length bound. Used by
// the CLI's output, the daemon's log, the HTML view and the store.
#ifndef GPUBENCH_COMMON_PRINTABLE_H_
#define GPUBENCH_COMMON_PRINTABLE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace gpubench {

// s with every control character (C0, DEL, C1) and every bidirectional
// formatting character (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069)
// written as an escape ("\x1b", "\n", "\u009b", "\u202e"), so that such text
// cannot move the cursor, recolour or rewrite a terminal, nor show itself
// reordered on a terminal or a web page. keep_newlines leaves '\n' as it is,
// for multi-line text such as stderr or a traceback.
std::string Printable(std::string_view s, bool keep_newlines = false);

// s cut to at most max_bytes (at a UTF-8 boundary) with " ... (N more
// bytes)" after it, else s whole: a model's error message or a worker's log
// line is the model's to choose, and must not fill the store or a reply.
std::string Bounded(std::string_view s, size_t max_bytes);

// The length of the well-formed UTF-8 sequence at s[i] (1 for ASCII), or 0
// where none starts there (a stray or overlong byte, a surrogate).
size_t Utf8Length(std::string_view s, size_t i);

// s with each byte that does not start a well-formed UTF-8 sequence written
// as U+FFFD: text from a model or a worker may hold any bytes, and a
// database's text column or a strict JSON reader takes only UTF-8.
std::string ValidUtf8(std::string_view s);

// The bound on a run's error and a worker's log line, as the daemon keeps
// them: a TorchScript traceback fits many times over.
inline constexpr size_t kMaxMessageBytes = 16 * 1024;

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_PRINTABLE_H_
