// The Vulkan loader, opened with dlopen (libvulkan.so.1, or QD_VULKAN_PATH): one table
// row per entry point, resolved once per process, instance and device; every call checked.
#pragma once

// Vulkan's types come from its C header (Debian's libvulkan-dev), types only: nothing
// links against libvulkan. Without the header this build has no Vulkan backend
// (docs/backends.md says why the header rather than our own declarations).
#if __has_include(<vulkan/vulkan_core.h>)
#define QD_HAS_VULKAN_HEADERS 1
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan_core.h>
#else
#define QD_HAS_VULKAN_HEADERS 0
#endif

#include <string>

#include "quadrants/backend/shared_library.hpp"
#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::vulkan {

// Where the loader is looked for (QD_VULKAN_PATH, then the usual directories).
QD_FUNC library_search loader_library();

}  // namespace qd::inline v0::backend::vulkan

#if QD_HAS_VULKAN_HEADERS
namespace qd::inline v0::backend::vulkan {

// Entry points of the loader itself, from vkGetInstanceProcAddr(nullptr, ...).
#define QD_VULKAN_GLOBAL_ENTRY_POINTS(X) \
  X(vkCreateInstance)                    \
  X(vkEnumerateInstanceVersion)

// Entry points of an instance, from vkGetInstanceProcAddr(instance, ...).
#define QD_VULKAN_INSTANCE_ENTRY_POINTS(X)    \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

// Entry points of a device, from vkGetDeviceProcAddr(device, ...): no dispatch through the loader.
#define QD_VULKAN_DEVICE_ENTRY_POINTS(X) \
  X(vkDestroyDevice)                     \
  X(vkGetDeviceQueue)                    \
  X(vkDeviceWaitIdle)                    \
  X(vkCreateBuffer)                      \
  X(vkDestroyBuffer)                     \
  X(vkGetBufferMemoryRequirements)       \
  X(vkAllocateMemory)                    \
  X(vkFreeMemory)                        \
  X(vkBindBufferMemory)                  \
  X(vkMapMemory)                         \
  X(vkGetBufferDeviceAddress)            \
  X(vkCreateShaderModule)                \
  X(vkDestroyShaderModule)               \
  X(vkCreatePipelineCache)               \
  X(vkDestroyPipelineCache)              \
  X(vkCreatePipelineLayout)              \
  X(vkDestroyPipelineLayout)             \
  X(vkCreateComputePipelines)            \
  X(vkDestroyPipeline)                   \
  X(vkCreateCommandPool)                 \
  X(vkDestroyCommandPool)                \
  X(vkAllocateCommandBuffers)            \
  X(vkFreeCommandBuffers)                \
  X(vkResetCommandBuffer)                \
  X(vkBeginCommandBuffer)                \
  X(vkEndCommandBuffer)                  \
  X(vkCmdBindPipeline)                   \
  X(vkCmdPushConstants)                  \
  X(vkCmdDispatch)                       \
  X(vkCmdCopyBuffer)                     \
  X(vkCmdPipelineBarrier)                \
  X(vkCreateFence)                       \
  X(vkDestroyFence)                      \
  X(vkWaitForFences)                     \
  X(vkResetFences)                       \
  X(vkQueueSubmit)

#define QD_VULKAN_MEMBER(name) PFN_##name name = nullptr;
struct global_api {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  QD_VULKAN_GLOBAL_ENTRY_POINTS(QD_VULKAN_MEMBER)
};
struct instance_api {
  QD_VULKAN_INSTANCE_ENTRY_POINTS(QD_VULKAN_MEMBER)
};
struct device_api {
  QD_VULKAN_DEVICE_ENTRY_POINTS(QD_VULKAN_MEMBER)
};
#undef QD_VULKAN_MEMBER

// Opens the loader on first use and resolves its entry points; a missing library or
// entry point is a qd::driver_error naming it and QD_VULKAN_PATH.
QD_FUNC const global_api& loader();
// An instance's and a device's entry points; a missing one is a qd::driver_error naming it.
QD_FUNC instance_api resolve_instance(VkInstance instance);
QD_FUNC device_api resolve_device(const instance_api& api, VkDevice device);

// "VK_ERROR_DEVICE_LOST (-4: the device was lost ...)".
QD_FUNC std::string result_text(VkResult r);

// Throws a qd::driver_error naming the call, its result, and where it was made.
[[noreturn]] QD_FUNC void throw_failed_call(VkResult r, const char* call, const char* file, int line);

}  // namespace qd::inline v0::backend::vulkan

// Checks one Vulkan call: QD_VULKAN_CHECK(api.vkCreateFence(...)).
#define QD_VULKAN_CHECK(call)                                                                 \
  do {                                                                                        \
    const VkResult qd_vulkan_result_ = (call);                                                \
    if (qd_vulkan_result_ != VK_SUCCESS)                                                      \
      ::qd::backend::vulkan::throw_failed_call(qd_vulkan_result_, #call, __FILE__, __LINE__); \
  } while (false)
#endif  // QD_HAS_VULKAN_HEADERS

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/vulkan/loader-inl.hpp"
#endif
