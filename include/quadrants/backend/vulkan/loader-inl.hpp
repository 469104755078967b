// Implementation of backend/vulkan/loader.hpp.
#pragma once

#include "quadrants/backend/vulkan/loader.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/format.hpp"

namespace qd::inline v0::backend::vulkan {

QD_FUNC library_search loader_library() {
  return {"the Vulkan loader (libvulkan)",
          {"libvulkan.so.1", "libvulkan.so"},
          {"QD_VULKAN_PATH"},
          {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/lib/x86_64-linux-gnu",
           "/lib64", "/usr/local/lib"}};
}

}  // namespace qd::inline v0::backend::vulkan

#if QD_HAS_VULKAN_HEADERS
namespace qd::inline v0::backend::vulkan {
namespace detail {

template <class T>
T entry_point(PFN_vkVoidFunction f, const char* name, std::string_view from) {
  if (f == nullptr)
    throw driver_error(fmt::format("the Vulkan {} has no entry point {}; the loader or driver is older than Vulkan 1.2 "
                                   "or broken. Set QD_VULKAN_PATH to a newer libvulkan.so.1",
                                   from, name),
                       name, 0);
  return reinterpret_cast<T>(f);
}

struct result_name {
  VkResult result;
  const char* name;
  const char* text;
};

inline constexpr result_name result_names[] = {
    {VK_NOT_READY, "VK_NOT_READY", "not ready"},
    {VK_TIMEOUT, "VK_TIMEOUT", "timed out"},
    {VK_INCOMPLETE, "VK_INCOMPLETE", "a result was truncated"},
    {VK_ERROR_OUT_OF_HOST_MEMORY, "VK_ERROR_OUT_OF_HOST_MEMORY", "the driver ran out of host memory"},
    {VK_ERROR_OUT_OF_DEVICE_MEMORY, "VK_ERROR_OUT_OF_DEVICE_MEMORY", "the device ran out of memory"},
    {VK_ERROR_INITIALIZATION_FAILED, "VK_ERROR_INITIALIZATION_FAILED", "initialization failed"},
    {VK_ERROR_DEVICE_LOST, "VK_ERROR_DEVICE_LOST",
     "the device was lost (a driver crash, a reset, or a shader that ran too long); the process must start over"},
    {VK_ERROR_MEMORY_MAP_FAILED, "VK_ERROR_MEMORY_MAP_FAILED", "mapping memory failed"},
    {VK_ERROR_LAYER_NOT_PRESENT, "VK_ERROR_LAYER_NOT_PRESENT", "a requested layer is not present"},
    {VK_ERROR_EXTENSION_NOT_PRESENT, "VK_ERROR_EXTENSION_NOT_PRESENT", "a requested extension is not supported"},
    {VK_ERROR_FEATURE_NOT_PRESENT, "VK_ERROR_FEATURE_NOT_PRESENT", "a requested feature is not supported"},
    {VK_ERROR_INCOMPATIBLE_DRIVER, "VK_ERROR_INCOMPATIBLE_DRIVER",
     "no installed driver supports the requested Vulkan version (is a Vulkan driver, e.g. mesa-vulkan-drivers, "
     "installed?)"},
    {VK_ERROR_TOO_MANY_OBJECTS, "VK_ERROR_TOO_MANY_OBJECTS", "too many objects of one type"},
    {VK_ERROR_FRAGMENTED_POOL, "VK_ERROR_FRAGMENTED_POOL", "a pool allocation failed from fragmentation"},
    {VK_ERROR_UNKNOWN, "VK_ERROR_UNKNOWN", "an unknown error"},
    {VK_ERROR_OUT_OF_POOL_MEMORY, "VK_ERROR_OUT_OF_POOL_MEMORY", "a pool ran out of memory"},
    {VK_ERROR_FRAGMENTATION, "VK_ERROR_FRAGMENTATION", "a descriptor pool allocation failed from fragmentation"},
    {VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS, "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS",
     "a buffer device address is not available"},
    {VK_PIPELINE_COMPILE_REQUIRED, "VK_PIPELINE_COMPILE_REQUIRED", "a pipeline must be compiled"},
    {VK_ERROR_VALIDATION_FAILED_EXT, "VK_ERROR_VALIDATION_FAILED_EXT", "a validation layer rejected the call"},
    {VK_ERROR_INVALID_SHADER_NV, "VK_ERROR_INVALID_SHADER_NV", "the driver rejected a shader"},
};

}  // namespace detail

QD_FUNC const global_api& loader() {
  static const global_api api = [] {
    static const shared_library library(loader_library());
    global_api a;
    a.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(library.symbol("vkGetInstanceProcAddr"));
#define QD_VULKAN_RESOLVE(name) \
  a.name = detail::entry_point<PFN_##name>(a.vkGetInstanceProcAddr(nullptr, #name), #name, "loader");
    QD_VULKAN_GLOBAL_ENTRY_POINTS(QD_VULKAN_RESOLVE)
#undef QD_VULKAN_RESOLVE
    return a;
  }();
  return api;
}

QD_FUNC instance_api resolve_instance(VkInstance instance) {
  const global_api& g = loader();
  instance_api a;
#define QD_VULKAN_RESOLVE(name) \
  a.name = detail::entry_point<PFN_##name>(g.vkGetInstanceProcAddr(instance, #name), #name, "instance");
  QD_VULKAN_INSTANCE_ENTRY_POINTS(QD_VULKAN_RESOLVE)
#undef QD_VULKAN_RESOLVE
  return a;
}

QD_FUNC device_api resolve_device(const instance_api& api, VkDevice device) {
  device_api a;
#define QD_VULKAN_RESOLVE(name) \
  a.name = detail::entry_point<PFN_##name>(api.vkGetDeviceProcAddr(device, #name), #name, "device");
  QD_VULKAN_DEVICE_ENTRY_POINTS(QD_VULKAN_RESOLVE)
#undef QD_VULKAN_RESOLVE
  return a;
}

QD_FUNC std::string result_text(VkResult r) {
  for (const auto& n : detail::result_names)
    if (n.result == r) return fmt::format("{} ({}: {})", n.name, static_cast<int>(r), n.text);
  return fmt::format("VkResult {}", static_cast<int>(r));
}

QD_FUNC void throw_failed_call(VkResult r, const char* call, const char* file, int line) {
  throw driver_error(fmt::format("Vulkan call {} failed: {} [{}:{}]", call, result_text(r), file, line), call,
                     static_cast<int>(r));
}

}  // namespace qd::inline v0::backend::vulkan
#endif  // QD_HAS_VULKAN_HEADERS
