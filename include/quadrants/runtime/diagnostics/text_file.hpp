// Text files the runtime writes for the user (debug dumps, coverage reports): each is
// published whole, through a new temporary file in a trusted directory and a rename.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::detail {

// Writes `text` to `path` atomically: a temporary file created new (O_EXCL | O_NOFOLLOW,
// a random name) beside it, then a rename, so a reader sees the old content or the new one.
// `path` must be a new name or a regular file: a symbolic link, FIFO, device, socket or
// directory there is refused and left as it was. The directories from `root` (default:
// the one holding `path`; created if missing) down to `path`'s are created with mode 0755
// where missing, opened without following links below `root`, and must each be owned by
// this user or root and not writable by group or others unless sticky (as /tmp is): else
// another user could swap the files. Returns false, with the reason in `why`; never throws
// and never blocks on a special file.
QD_FUNC bool write_text_atomically(const std::string& path, std::string_view text, std::string* why = nullptr,
                                   const std::string& root = {});

// Reads the regular file `path` (an empty text when there is none) of at most `max_bytes`.
// False, with the reason in `why`, for anything else there (a link, FIFO, device, ...),
// which is neither opened nor read, so it never blocks or reads without end.
QD_FUNC bool read_regular_file(const std::string& path, std::string& out, std::string* why = nullptr,
                               std::size_t max_bytes = std::size_t{256} << 20);

}  // namespace qd::inline v0::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/diagnostics/text_file-inl.hpp"
#endif
