// Text files the runtime writes for the user (debug dumps, coverage reports): each is
// published whole, through a temporary file in the same directory and a rename.
#pragma once

#include <string>
#include <string_view>

#include "quadrants/base/api.hpp"

namespace qd::detail {

// Writes `text` to `path` atomically (temporary file, then rename), creating missing
// directories. A reader sees the old content or the new one, never a partial file.
// Returns false, with the reason in `why`, when it cannot; never throws.
QD_FUNC bool write_text_atomically(const std::string& path, std::string_view text, std::string* why = nullptr);

}  // namespace qd::detail

#ifdef QD_HEADER_ONLY
#include "quadrants/runtime/text_file-inl.hpp"
#endif
