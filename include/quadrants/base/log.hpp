// Logging: levels, the process-wide sink (stderr by default), qd::set_log_sink.
// Library code logs through detail::log_write; formatting happens only when enabled.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "quadrants/base/api.hpp"

namespace qd::inline v0 {

enum class log_level : std::uint8_t { trace, debug, info, warn, error, critical, off };

using log_sink = std::function<void(log_level, std::string_view)>;

// Redirects every log line to `sink`; an empty function restores stderr.
QD_FUNC void set_log_sink(log_sink sink);
// The threshold below which lines are dropped; qd::init sets it from config.log_level.
QD_FUNC void set_log_level(log_level level) noexcept;
QD_FUNC log_level get_log_level() noexcept;
QD_FUNC std::string_view name(log_level level) noexcept;

namespace detail {
QD_FUNC bool log_enabled(log_level level) noexcept;
QD_FUNC void log_write(log_level level, std::string_view message);
}  // namespace detail

}  // namespace qd::inline v0

#ifdef QD_HEADER_ONLY
#include "quadrants/base/log-inl.hpp"
#endif
