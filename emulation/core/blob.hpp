// The emulated "CUBIN" / code object: a small header of our own (so a real CUBIN,
// another API's blob or a corrupted one is rejected as a driver would) followed by
// the bytes of the shared object the host compiler built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qd::emulation {

enum class gpu_api : std::uint32_t { cuda = 1, hip = 2 };

struct blob_header {
  char magic[8];          // "QDEMUGPU"
  std::uint32_t version;  // blob_format_version
  std::uint32_t api;      // gpu_api
  char target[48];        // "sm_90", "gfx90a:sramecc+:xnack-", NUL-terminated
  std::uint64_t payload_size;
  std::uint64_t payload_hash;  // FNV-1a of the payload
};
inline constexpr std::uint32_t blob_format_version = 1;

std::vector<unsigned char> make_blob(gpu_api api, std::string_view target, std::string_view shared_object);

enum class blob_status { ok, not_a_blob, corrupt };

struct blob_view {
  gpu_api api = gpu_api::cuda;
  std::string target;
  const unsigned char* payload = nullptr;
  std::size_t payload_size = 0;
};

// Reads a blob from memory whose size the caller does not know (cuModuleLoadData's
// contract): the header says how much follows.
blob_status read_blob(const void* image, blob_view& out);

std::uint64_t fnv1a(const unsigned char* data, std::size_t size);

}  // namespace qd::emulation
