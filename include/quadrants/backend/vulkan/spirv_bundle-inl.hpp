// Implementation of backend/vulkan/spirv_bundle.hpp.
#pragma once

#include <cstring>
#include <string>

#include "quadrants/backend/vulkan/spirv_bundle.hpp"
#include "quadrants/base/error.hpp"

namespace qd::inline v0::backend::vulkan {
namespace detail {

// "QDSPIRV1": format version 1.
inline constexpr unsigned char bundle_magic[8] = {'Q', 'D', 'S', 'P', 'I', 'R', 'V', '1'};
inline constexpr std::uint32_t spirv_magic = 0x07230203u;

QD_FUNC void put_u32(std::vector<std::byte>& out, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<std::byte>((v >> (8 * k)) & 0xffu));
}

// Reads from a span, failing (not throwing) on a short read.
struct bundle_reader {
  std::span<const std::byte> bytes;
  std::size_t at = 0;
  bool ok = true;
  std::uint32_t u32() {
    if (bytes.size() - at < 4) {
      ok = false;
      return 0;
    }
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= static_cast<std::uint32_t>(bytes[at + static_cast<std::size_t>(k)]) << (8 * k);
    at += 4;
    return v;
  }
  std::span<const std::byte> take(std::size_t n) {
    if (bytes.size() - at < n) {
      ok = false;
      return {};
    }
    auto s = bytes.subspan(at, n);
    at += n;
    return s;
  }
};

}  // namespace detail

QD_FUNC std::vector<std::byte> encode_bundle(const std::vector<compiled_shader>& shaders) {
  std::vector<std::byte> out;
  for (unsigned char c : detail::bundle_magic) out.push_back(static_cast<std::byte>(c));
  detail::put_u32(out, static_cast<std::uint32_t>(shaders.size()));
  for (const compiled_shader& s : shaders) {
    const std::string markers = codegen::glsl_task_markers(s.task);
    detail::put_u32(out, static_cast<std::uint32_t>(markers.size()));
    for (char c : markers) out.push_back(static_cast<std::byte>(c));
    detail::put_u32(out, static_cast<std::uint32_t>(s.spirv.size()));
    for (std::uint32_t w : s.spirv) detail::put_u32(out, w);
  }
  return out;
}

QD_FUNC std::optional<std::vector<compiled_shader>> decode_bundle(std::span<const std::byte> bytes) {
  detail::bundle_reader in{bytes};
  auto magic = in.take(sizeof(detail::bundle_magic));
  if (!in.ok || std::memcmp(magic.data(), detail::bundle_magic, sizeof(detail::bundle_magic)) != 0) return std::nullopt;
  const std::uint32_t count = in.u32();
  if (!in.ok || count > bytes.size()) return std::nullopt;  // 0: a kernel with no task
  std::vector<compiled_shader> shaders;
  for (std::uint32_t k = 0; k < count; ++k) {
    auto text = in.take(in.u32());
    const std::uint32_t words = in.u32();
    if (!in.ok || words < 5 || words > (bytes.size() - in.at) / 4) return std::nullopt;
    compiled_shader s;
    s.spirv.resize(words);
    for (std::uint32_t w = 0; w < words; ++w) s.spirv[w] = in.u32();
    if (!in.ok || s.spirv[0] != detail::spirv_magic) return std::nullopt;
    try {
      auto tasks = codegen::glsl_tasks_in(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()));
      if (tasks.size() != 1) return std::nullopt;
      s.task = std::move(tasks.front());
    } catch (const internal_error&) {
      return std::nullopt;
    }
    shaders.push_back(std::move(s));
  }
  if (in.at != bytes.size()) return std::nullopt;
  return shaders;
}

}  // namespace qd::inline v0::backend::vulkan
