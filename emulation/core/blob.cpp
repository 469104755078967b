#include "core/blob.hpp"

#include <algorithm>
#include <cstring>

namespace qd::emulation {
namespace {
constexpr char blob_magic[8] = {'Q', 'D', 'E', 'M', 'U', 'G', 'P', 'U'};
constexpr std::uint64_t max_payload = std::uint64_t{1} << 32;
}  // namespace

std::uint64_t fnv1a(const unsigned char* data, std::size_t size) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ull;
  return h;
}

std::vector<unsigned char> make_blob(gpu_api api, std::string_view target, std::string_view shared_object) {
  blob_header h{};
  std::memcpy(h.magic, blob_magic, sizeof(h.magic));
  h.version = blob_format_version;
  h.api = static_cast<std::uint32_t>(api);
  std::memcpy(h.target, target.data(), std::min(target.size(), sizeof(h.target) - 1));
  h.payload_size = shared_object.size();
  h.payload_hash = fnv1a(reinterpret_cast<const unsigned char*>(shared_object.data()), shared_object.size());
  std::vector<unsigned char> out(sizeof(h) + shared_object.size());
  std::memcpy(out.data(), &h, sizeof(h));
  if (!shared_object.empty()) std::memcpy(out.data() + sizeof(h), shared_object.data(), shared_object.size());
  return out;
}

blob_status read_blob(const void* image, blob_view& out) {
  if (image == nullptr) return blob_status::not_a_blob;
  blob_header h;
  std::memcpy(&h, image, sizeof(h));
  if (std::memcmp(h.magic, blob_magic, sizeof(h.magic)) != 0) return blob_status::not_a_blob;
  if (h.version != blob_format_version || h.payload_size == 0 || h.payload_size > max_payload ||
      h.target[sizeof(h.target) - 1] != '\0')
    return blob_status::corrupt;
  const auto* payload = static_cast<const unsigned char*>(image) + sizeof(h);
  if (fnv1a(payload, h.payload_size) != h.payload_hash) return blob_status::corrupt;
  if (h.api != static_cast<std::uint32_t>(gpu_api::cuda) && h.api != static_cast<std::uint32_t>(gpu_api::hip))
    return blob_status::corrupt;
  out.api = static_cast<gpu_api>(h.api);
  out.target = h.target;
  out.payload = payload;
  out.payload_size = h.payload_size;
  return blob_status::ok;
}

}  // namespace qd::emulation
