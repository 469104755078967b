// Implementation of backend/vulkan/device.hpp.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "quadrants/backend/compile_only_module.hpp"
#include "quadrants/backend/vulkan/device.hpp"
#include "quadrants/backend/vulkan/loader.hpp"
#include "quadrants/backend/vulkan/spirv_bundle.hpp"
#include "quadrants/base/env_integer.hpp"
#include "quadrants/base/error.hpp"
#include "quadrants/base/limits.hpp"
#include "quadrants/codegen/cpp_emitter.hpp"
#include "quadrants/codegen/glsl_emitter.hpp"
#include "quadrants/codegen/glsl_prelude.hpp"
#include "quadrants/base/format.hpp"

#if QD_HAS_VULKAN_HEADERS
namespace qd::inline v0::backend::vulkan {
namespace detail {

// The ABI between a launch and generated GLSL (codegen/glsl_prelude): push constants
// with five device addresses, and a parameter block laid out as gpu_task_params'
// first two members (the arrays' descriptors, then the scalars).
struct push_block {
  std::uint64_t params, temps, error, print, rng_stream;
};
static_assert(sizeof(push_block) == 40 && sizeof(array_abi) == 48, "the GLSL prelude's qd_push and qd_array");
inline constexpr std::size_t scalars_offset = limits::max_kernel_params * sizeof(array_abi);
inline constexpr std::size_t params_bytes = scalars_offset + limits::max_kernel_params * sizeof(std::uint64_t);
// The error record: a 32-bit flag (its first write wins), then param, dim, index, extent as i64.
inline constexpr std::size_t error_bytes = 40;
// qd::print records: a header (the words used), then 64-bit words.
inline constexpr std::size_t print_bytes = 8 + std::size_t{codegen::glsl_print_words} * 8;
inline constexpr std::size_t staging_chunk = std::size_t{64} << 20;

struct buffer {
  VkBuffer handle = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  VkDeviceAddress address = 0;
  unsigned char* mapped = nullptr;  // host-visible memory, mapped for its lifetime
};

// The Vulkan API version as "1.3.230".
inline std::string version_text(std::uint32_t v) {
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

inline const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    case VK_PHYSICAL_DEVICE_TYPE_OTHER:
    case VK_PHYSICAL_DEVICE_TYPE_MAX_ENUM: return "other";
  }
  return "other";
}

// A physical device's features, queried through one pNext chain (and enabled through it).
struct feature_chain {
  VkPhysicalDeviceFeatures2 base{};
  VkPhysicalDeviceVulkan11Features v11{};
  VkPhysicalDeviceVulkan12Features v12{};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float{};
  explicit feature_chain(bool with_atomic_float) {
    base.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    atomic_float.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
    base.pNext = &v11;
    v11.pNext = &v12;
    v12.pNext = with_atomic_float ? &atomic_float : nullptr;
  }
  feature_chain(const feature_chain&) = delete;
  feature_chain& operator=(const feature_chain&) = delete;
};

// One physical device as the backend sees it.
struct candidate {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  std::string name;
  std::string why_not;  // empty: usable
  std::uint32_t family = 0;
  bool atomic_float_extension = false;
  bool portability_subset = false;
  codegen::glsl_target target;
  VkPhysicalDeviceProperties properties{};
  VkDeviceSize max_allocation = 0;
};

inline bool has_extension(const std::vector<VkExtensionProperties>& list, const char* name) {
  return std::any_of(list.begin(), list.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

inline candidate inspect(const instance_api& api, VkPhysicalDevice pd) {
  candidate c;
  c.handle = pd;
  api.vkGetPhysicalDeviceProperties(pd, &c.properties);
  c.name = c.properties.deviceName;
  if (c.properties.apiVersion < VK_API_VERSION_1_2) {
    c.why_not = fmt::format("it supports Vulkan {} only; 1.2 is needed", version_text(c.properties.apiVersion));
    return c;
  }
  std::uint32_t count = 0;
  QD_VULKAN_CHECK(api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, nullptr));
  std::vector<VkExtensionProperties> extensions(count);
  QD_VULKAN_CHECK(api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, extensions.data()));
  c.atomic_float_extension = has_extension(extensions, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  c.portability_subset = has_extension(extensions, "VK_KHR_portability_subset");

  api.vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  api.vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, families.data());
  auto compute = std::find_if(families.begin(), families.end(), [](const VkQueueFamilyProperties& f) {
    return (f.queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
  });
  if (compute == families.end()) {
    c.why_not = "it has no compute queue";
    return c;
  }
  c.family = static_cast<std::uint32_t>(compute - families.begin());

  feature_chain f(c.atomic_float_extension);
  api.vkGetPhysicalDeviceFeatures2(pd, &f.base);
  if (!f.base.features.shaderInt64) {
    c.why_not = "it lacks shaderInt64 (64-bit integers)";
    return c;
  }
  if (!f.v12.bufferDeviceAddress) {
    c.why_not = "it lacks bufferDeviceAddress";
    return c;
  }
  VkPhysicalDeviceVulkan12Properties p12{};
  p12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES;
  VkPhysicalDeviceVulkan11Properties p11{};
  p11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES;
  p11.pNext = &p12;
  VkPhysicalDeviceProperties2 p2{};
  p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  p2.pNext = &p11;
  api.vkGetPhysicalDeviceProperties2(pd, &p2);
  c.max_allocation = p11.maxMemoryAllocationSize;

  codegen::glsl_target& t = c.target;
  t.f64 = f.base.features.shaderFloat64;
  t.int8_storage = f.v12.storageBuffer8BitAccess;
  t.int16_storage = f.v11.storageBuffer16BitAccess;
  t.i64_atomics = f.v12.shaderBufferInt64Atomics;
  t.f32_atomic_add = c.atomic_float_extension && f.atomic_float.shaderBufferFloat32AtomicAdd;
  t.f64_atomic_add = c.atomic_float_extension && f.atomic_float.shaderBufferFloat64AtomicAdd && t.f64;
  // Not a feature Vulkan reports: GPU drivers implement fma() with the hardware's fused
  // multiply-add; lavapipe splits it into a multiply and an add (the spec allows both).
  t.fused_fma = c.properties.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
  t.lavapipe_workarounds = c.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  t.preserve_nan32 = p12.shaderSignedZeroInfNanPreserveFloat32;
  t.preserve_nan64 = p12.shaderSignedZeroInfNanPreserveFloat64 && t.f64;
  t.f16 = f.v12.shaderFloat16 && f.v11.storageBuffer16BitAccess;
  t.int8_arithmetic = f.v12.shaderInt8;
  const VkPhysicalDeviceLimits& l = c.properties.limits;
  t.max_workgroup_size = std::min(l.maxComputeWorkGroupSize[0], l.maxComputeWorkGroupInvocations);
  t.subgroup_size = p11.subgroupSize;
  return c;
}

// An instance, one device with one compute queue, and what every launch shares: the
// pipeline layout, a command buffer and its fence, the parameter block and the error
// record. Shared by the device object and every module loaded on it.
class context {
 public:
  explicit context(int ordinal) : global_(loader()) {
    std::uint32_t instance_version = 0;
    QD_VULKAN_CHECK(global_.vkEnumerateInstanceVersion(&instance_version));
    if (instance_version < VK_API_VERSION_1_2)
      throw driver_error(fmt::format("the Vulkan loader supports Vulkan {} only; 1.2 is needed. Install a newer "
                                     "libvulkan1, or set QD_VULKAN_PATH to one",
                                     version_text(instance_version)),
                         "vkEnumerateInstanceVersion", 0);
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "quadrants";
    app.pEngineName = "quadrants";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ci.pApplicationInfo = &app;
    QD_VULKAN_CHECK(global_.vkCreateInstance(&ci, nullptr, &instance_));
    try {
      instance_api_ = resolve_instance(instance_);
      open_device(ordinal);
    } catch (...) {
      release();
      throw;
    }
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;
  ~context() { release(); }

  const device_api& api() const { return api_; }
  VkDevice device() const { return device_; }
  VkPipelineLayout layout() const { return layout_; }
  VkPipelineCache pipeline_cache() const { return cache_; }
  const codegen::glsl_target& target() const { return candidate_.target; }
  bool is_cpu() const { return candidate_.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  std::string description() const {
    return fmt::format("{}, Vulkan {}, {}", candidate_.name, version_text(candidate_.properties.apiVersion),
                       device_type_name(candidate_.properties.deviceType));
  }
  std::mutex& mutex() const { return mutex_; }

  // Device memory for an array: device-local, mapped where the device lets the host see it.
  void* allocate(std::size_t bytes) {
    // Rounded up to 8 bytes: u8 atomics and stores update the aligned word holding their byte.
    const std::size_t size = (std::max<std::size_t>(bytes, 1) + 7) / 8 * 8;
    if (candidate_.max_allocation != 0 && size > candidate_.max_allocation)
      throw driver_error(fmt::format("allocating {} bytes of Vulkan device memory: {} allows at most {} bytes in one "
                                     "allocation (maxMemoryAllocationSize); use smaller arrays",
                                     bytes, candidate_.name, candidate_.max_allocation),
                         "vkAllocateMemory", VK_ERROR_OUT_OF_DEVICE_MEMORY);
    std::lock_guard lock(mutex_);
    buffer b = create_buffer(size, memory_kind::array, "a qd::ndarray");
    allocations_.emplace(b.address, b);
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(b.address));
  }
  void release(void* p) noexcept {
    std::lock_guard lock(mutex_);
    auto it = allocations_.find(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)));
    if (it == allocations_.end()) return;
    destroy_buffer(it->second);
    allocations_.erase(it);
  }
  void copy(void* device_address, void* host, std::size_t bytes, bool to_device, std::string_view what) {
    if (bytes == 0) return;
    std::lock_guard lock(mutex_);
    const auto address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(device_address));
    auto it = allocations_.upper_bound(address);
    if (it == allocations_.begin() || (--it, address + bytes > it->first + it->second.size))
      throw internal_error(
          fmt::format("{}: {} bytes at Vulkan address {:#x} are not inside one allocation", what, bytes, address));
    const buffer& b = it->second;
    const std::size_t offset = static_cast<std::size_t>(address - it->first);
    if (b.mapped) {  // launches have finished (they wait), so the memory is idle
      if (to_device)
        std::memcpy(b.mapped + offset, host, bytes);
      else
        std::memcpy(host, b.mapped + offset, bytes);
      return;
    }
    auto* h = static_cast<unsigned char*>(host);
    for (std::size_t done = 0; done < bytes;) {
      const std::size_t n = std::min(staging_chunk, bytes - done);
      if (staging_.size < n) {
        destroy_buffer(staging_);
        staging_ = create_buffer(std::min(staging_chunk, std::max<std::size_t>(n, 1 << 20)), memory_kind::staging,
                                 "the staging buffer");
      }
      if (to_device) std::memcpy(staging_.mapped, h + done, n);
      VkBufferCopy region{};
      region.size = n;
      (to_device ? region.dstOffset : region.srcOffset) = offset + done;
      run(
          [&](VkCommandBuffer cb) {
            if (to_device)
              api_.vkCmdCopyBuffer(cb, staging_.handle, b.handle, 1, &region);
            else
              api_.vkCmdCopyBuffer(cb, b.handle, staging_.handle, 1, &region);
          },
          what);
      if (!to_device) std::memcpy(h + done, staging_.mapped, n);
      done += n;
    }
  }

  // The parameter block, error record and print buffer of a launch (the caller holds mutex()).
  unsigned char* params() const { return params_.mapped; }
  VkDeviceAddress params_address() const { return params_.address; }
  unsigned char* error_record() const { return error_.mapped; }
  VkDeviceAddress error_address() const { return error_.address; }
  const buffer& print_buffer() {
    if (!print_.handle) {
      print_ = create_buffer(print_bytes, memory_kind::host, "the qd::print buffer");
      std::memset(print_.mapped, 0, print_bytes);
    }
    return print_;
  }

  // Records commands into the one command buffer, runs them and waits (the caller holds
  // mutex()). Ordered after every earlier submission; their results visible to the host.
  template <class Record>
  void run(Record&& record, std::string_view what) {
    QD_VULKAN_CHECK(api_.vkResetCommandBuffer(commands_, 0));
    record_commands(commands_, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, record);
    submit(commands_, what);
  }

  // Records `record` into `cb` between the barriers every submission has: after the work
  // submitted before it, and visible to the host at its end.
  template <class Record>
  void record_commands(VkCommandBuffer cb, VkCommandBufferUsageFlags usage, Record&& record) {
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = usage;
    QD_VULKAN_CHECK(api_.vkBeginCommandBuffer(cb, &begin));
    memory_barrier(cb);  // host writes need none: a submission makes them visible
    record(cb);
    memory_barrier(cb, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    QD_VULKAN_CHECK(api_.vkEndCommandBuffer(cb));
  }
  // Between two dispatches of one command buffer: the first's writes before the second.
  void dispatch_barrier(VkCommandBuffer cb) { memory_barrier(cb); }

  // Submits a recorded command buffer and waits for it (the caller holds mutex()).
  void submit(VkCommandBuffer cb, std::string_view what) {
    VkSubmitInfo submit{};
    submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cb;
    check_run(api_.vkQueueSubmit(queue_, 1, &submit, fence_), "vkQueueSubmit", what);
    check_run(api_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences", what);
    QD_VULKAN_CHECK(api_.vkResetFences(device_, 1, &fence_));
  }

  // A command buffer of its own, for a recording (the caller holds mutex()).
  VkCommandBuffer allocate_commands() {
    VkCommandBufferAllocateInfo cb{};
    cb.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    cb.commandPool = pool_;
    cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cb.commandBufferCount = 1;
    VkCommandBuffer out = VK_NULL_HANDLE;
    QD_VULKAN_CHECK(api_.vkAllocateCommandBuffers(device_, &cb, &out));
    return out;
  }
  void free_commands(VkCommandBuffer cb) noexcept {
    if (cb) api_.vkFreeCommandBuffers(device_, pool_, 1, &cb);
  }
  // Host-visible memory the device reads by address (a recording's parameter blocks).
  buffer host_buffer(std::size_t size, std::string_view what) {
    std::lock_guard lock(mutex_);
    return create_buffer(size, memory_kind::host, what);
  }
  void destroy_locked(buffer& b) noexcept { destroy_buffer(b); }  // the caller holds mutex()

 private:
  enum class memory_kind { array, host, staging };

  void open_device(int ordinal) {
    std::uint32_t count = 0;
    QD_VULKAN_CHECK(instance_api_.vkEnumeratePhysicalDevices(instance_, &count, nullptr));
    std::vector<VkPhysicalDevice> devices(count);
    QD_VULKAN_CHECK(instance_api_.vkEnumeratePhysicalDevices(instance_, &count, devices.data()));
    if (devices.empty())
      throw driver_error(
          "the Vulkan loader found no device: install a Vulkan driver (mesa-vulkan-drivers has "
          "lavapipe, a CPU one), or point VK_DRIVER_FILES at one",
          "vkEnumeratePhysicalDevices", 0);
    std::vector<candidate> candidates;
    for (VkPhysicalDevice d : devices) candidates.push_back(inspect(instance_api_, d));
    if (ordinal < 0) {
      const char* env = std::getenv("QD_VULKAN_DEVICE");
      if (env && *env) ordinal = static_cast<int>(qd::detail::parse_env_integer("QD_VULKAN_DEVICE", env, 0, 1023));
    }
    auto list = [&] {
      std::string s;
      for (std::size_t i = 0; i < candidates.size(); ++i)
        s += fmt::format("\n  {}: {}{}", i, candidates[i].name,
                         candidates[i].why_not.empty() ? "" : " (passed over: " + candidates[i].why_not + ")");
      return s;
    };
    if (ordinal >= static_cast<int>(candidates.size()))
      throw driver_error(
          fmt::format("Vulkan device {} does not exist; set QD_VULKAN_DEVICE to one of:{}", ordinal, list()),
          "vkEnumeratePhysicalDevices", 0);
    auto usable = ordinal >= 0 ? candidates.begin() + ordinal
                               : std::find_if(candidates.begin(), candidates.end(),
                                              [](const candidate& c) { return c.why_not.empty(); });
    if (usable == candidates.end() || !usable->why_not.empty())
      throw driver_error(fmt::format("no usable Vulkan device: Quadrants needs Vulkan 1.2 with a compute queue, "
                                     "shaderInt64 and bufferDeviceAddress. Devices:{}",
                                     list()),
                         "vkCreateDevice", 0);
    candidate_ = *usable;
    physical_ = candidate_.handle;

    const codegen::glsl_target& t = candidate_.target;
    feature_chain f(t.f32_atomic_add || t.f64_atomic_add);
    f.base.features.shaderInt64 = VK_TRUE;
    f.base.features.shaderFloat64 = t.f64;
    f.v11.storageBuffer16BitAccess = t.int16_storage;
    f.v12.bufferDeviceAddress = VK_TRUE;
    f.v12.storageBuffer8BitAccess = t.int8_storage;
    f.v12.shaderInt8 = t.int8_arithmetic;
    f.v12.shaderFloat16 = t.f16;
    f.v12.shaderBufferInt64Atomics = t.i64_atomics;
    f.atomic_float.shaderBufferFloat32AtomicAdd = t.f32_atomic_add;
    f.atomic_float.shaderBufferFloat64AtomicAdd = t.f64_atomic_add;
    std::vector<const char*> extensions;
    if (t.f32_atomic_add || t.f64_atomic_add) extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
    if (candidate_.portability_subset) extensions.push_back("VK_KHR_portability_subset");  // MoltenVK requires it
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{};
    queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    queue.queueFamilyIndex = candidate_.family;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{};
    dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    dci.pNext = &f.base;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &queue;
    dci.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
    dci.ppEnabledExtensionNames = extensions.data();
    QD_VULKAN_CHECK(instance_api_.vkCreateDevice(physical_, &dci, nullptr, &device_));
    api_ = resolve_device(instance_api_, device_);
    api_.vkGetDeviceQueue(device_, candidate_.family, 0, &queue_);
    instance_api_.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);

    VkCommandPoolCreateInfo pool{};
    pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = candidate_.family;
    QD_VULKAN_CHECK(api_.vkCreateCommandPool(device_, &pool, nullptr, &pool_));
    VkCommandBufferAllocateInfo cb{};
    cb.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    cb.commandPool = pool_;
    cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cb.commandBufferCount = 1;
    QD_VULKAN_CHECK(api_.vkAllocateCommandBuffers(device_, &cb, &commands_));
    VkFenceCreateInfo fence{};
    fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    QD_VULKAN_CHECK(api_.vkCreateFence(device_, &fence, nullptr, &fence_));
    VkPushConstantRange range{};
    range.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    range.size = sizeof(push_block);
    VkPipelineLayoutCreateInfo layout{};
    layout.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    layout.pushConstantRangeCount = 1;
    layout.pPushConstantRanges = &range;
    QD_VULKAN_CHECK(api_.vkCreatePipelineLayout(device_, &layout, nullptr, &layout_));
    VkPipelineCacheCreateInfo cache{};
    cache.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    QD_VULKAN_CHECK(api_.vkCreatePipelineCache(device_, &cache, nullptr, &cache_));
    params_ = create_buffer(params_bytes, memory_kind::host, "the parameter block");
    error_ = create_buffer(error_bytes, memory_kind::host, "the error record");
    std::memset(error_.mapped, 0, error_bytes);
  }

  // The first memory type in `bits` with all of `want`, or -1.
  int memory_type(std::uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid = 0) const {
    for (std::uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
      if ((bits & (1u << i)) && (f & want) == want && (f & avoid) == 0) return static_cast<int>(i);
    }
    return -1;
  }
  int choose_memory(std::uint32_t bits, memory_kind kind) const {
    constexpr VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    constexpr VkMemoryPropertyFlags visible =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int type = -1;
    switch (kind) {
      case memory_kind::array:
        // A discrete GPU's device-only memory (the host-visible part of its VRAM is small);
        // elsewhere (integrated GPUs, lavapipe) memory both sides see: no staging copies.
        type = memory_type(bits, local, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
        if (type < 0) type = memory_type(bits, local | visible);
        if (type < 0) type = memory_type(bits, local);
        break;
      case memory_kind::staging: type = memory_type(bits, visible | VK_MEMORY_PROPERTY_HOST_CACHED_BIT); break;
      case memory_kind::host: break;
    }
    if (type < 0) type = memory_type(bits, visible);
    if (type < 0) type = memory_type(bits, 0);
    return type;
  }

  buffer create_buffer(std::size_t size, memory_kind kind, std::string_view what) {
    buffer b;
    b.size = size;
    VkBufferCreateInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    try {
      check_allocation(api_.vkCreateBuffer(device_, &bi, nullptr, &b.handle), "vkCreateBuffer", size, what);
      VkMemoryRequirements req{};
      api_.vkGetBufferMemoryRequirements(device_, b.handle, &req);
      const int type = choose_memory(req.memoryTypeBits, kind);
      if (type < 0)
        throw driver_error(fmt::format("{}: no Vulkan memory type can hold a buffer", what), "vkAllocateMemory", 0);
      VkMemoryAllocateFlagsInfo flags{};
      flags.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO;
      flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
      VkMemoryAllocateInfo ai{};
      ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
      ai.pNext = &flags;
      ai.allocationSize = req.size;
      ai.memoryTypeIndex = static_cast<std::uint32_t>(type);
      check_allocation(api_.vkAllocateMemory(device_, &ai, nullptr, &b.memory), "vkAllocateMemory", size, what);
      QD_VULKAN_CHECK(api_.vkBindBufferMemory(device_, b.handle, b.memory, 0));
      VkBufferDeviceAddressInfo ai2{};
      ai2.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO;
      ai2.buffer = b.handle;
      b.address = api_.vkGetBufferDeviceAddress(device_, &ai2);
      if (memory_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        void* p = nullptr;
        QD_VULKAN_CHECK(api_.vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &p));
        b.mapped = static_cast<unsigned char*>(p);
      }
    } catch (...) {
      destroy_buffer(b);
      throw;
    }
    return b;
  }
  void destroy_buffer(buffer& b) noexcept {
    if (b.handle) api_.vkDestroyBuffer(device_, b.handle, nullptr);
    if (b.memory) api_.vkFreeMemory(device_, b.memory, nullptr);  // unmaps it
    b = buffer{};
  }
  void check_allocation(VkResult r, const char* call, std::size_t size, std::string_view what) const {
    if (r == VK_SUCCESS) return;
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
      throw driver_error(fmt::format("allocating {} bytes of Vulkan memory for {} on {}: {}; free arrays or use "
                                     "smaller ones",
                                     size, what, candidate_.name, result_text(r)),
                         call, static_cast<int>(r));
    throw_failed_call(r, call, __FILE__, __LINE__);
  }
  void check_run(VkResult r, const char* call, std::string_view what) const {
    if (r == VK_SUCCESS) return;
    throw driver_error(fmt::format("{}: {} failed on {}: {}", what, call, candidate_.name, result_text(r)), call,
                       static_cast<int>(r));
  }
  // The compute and transfer writes before it, available to `dst` (by default, the
  // compute and transfer work after it).
  static constexpr VkPipelineStageFlags work_stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  static constexpr VkAccessFlags work_access = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                               VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  void memory_barrier(VkCommandBuffer cb, VkPipelineStageFlags dst = work_stages,
                      VkAccessFlags dst_access = work_access) {
    VkMemoryBarrier b{};
    b.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = dst_access;
    api_.vkCmdPipelineBarrier(cb, work_stages, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
  }

  void release() noexcept {
    if (device_) {
      api_.vkDeviceWaitIdle(device_);
      for (auto& [address, b] : allocations_) destroy_buffer(b);
      allocations_.clear();
      destroy_buffer(staging_);
      destroy_buffer(print_);
      destroy_buffer(error_);
      destroy_buffer(params_);
      if (cache_) api_.vkDestroyPipelineCache(device_, cache_, nullptr);
      if (layout_) api_.vkDestroyPipelineLayout(device_, layout_, nullptr);
      if (fence_) api_.vkDestroyFence(device_, fence_, nullptr);
      if (pool_) api_.vkDestroyCommandPool(device_, pool_, nullptr);  // frees the command buffer
      api_.vkDestroyDevice(device_, nullptr);
      device_ = VK_NULL_HANDLE;
    }
    if (instance_) {
      instance_api_.vkDestroyInstance(instance_, nullptr);
      instance_ = VK_NULL_HANDLE;
    }
  }

  const global_api& global_;
  instance_api instance_api_{};
  device_api api_{};
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  candidate candidate_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  buffer params_, error_, print_, staging_;
  std::map<std::uint64_t, buffer> allocations_;  // by device address
  mutable std::mutex mutex_;                     // the queue, the command buffer, the launch buffers, allocations_
};

// One task of a loaded module: its pipeline and markers.
struct pipeline_entry {
  VkPipeline pipeline = VK_NULL_HANDLE;
  codegen::glsl_task_info task;
};

class vulkan_module final : public loaded_module {
 public:
  vulkan_module(std::shared_ptr<context> c, std::vector<compiled_shader> shaders, std::string_view what)
      : context_(std::move(c)) {
    const device_api& api = context_->api();
    try {
      for (compiled_shader& s : shaders) {
        VkShaderModuleCreateInfo mi{};
        mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
        mi.codeSize = s.spirv.size() * sizeof(std::uint32_t);
        mi.pCode = s.spirv.data();
        VkShaderModule module = VK_NULL_HANDLE;
        check(api.vkCreateShaderModule(context_->device(), &mi, nullptr, &module), "vkCreateShaderModule", what, s);
        VkComputePipelineCreateInfo pi{};
        pi.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
        pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        pi.stage.module = module;
        pi.stage.pName = "main";
        pi.layout = context_->layout();
        pipeline_entry& e = entries_.emplace_back();
        e.task = std::move(s.task);
        const VkResult r =
            api.vkCreateComputePipelines(context_->device(), context_->pipeline_cache(), 1, &pi, nullptr, &e.pipeline);
        api.vkDestroyShaderModule(context_->device(), module, nullptr);
        check(r, "vkCreateComputePipelines", what, s);
      }
    } catch (...) {
      destroy();
      throw;
    }
  }
  vulkan_module(const vulkan_module&) = delete;
  vulkan_module& operator=(const vulkan_module&) = delete;
  ~vulkan_module() override { destroy(); }

  void* entry(const std::string& name) const override {
    for (const pipeline_entry& e : entries_)
      if (e.task.entry == name) return const_cast<pipeline_entry*>(&e);
    throw driver_error(fmt::format("the loaded Vulkan module has no task '{}'", name), "vkCreateComputePipelines", 0);
  }

 private:
  void check(VkResult r, const char* call, std::string_view what, const compiled_shader& s) const {
    if (r != VK_SUCCESS)
      throw driver_error(fmt::format("{}: {} for task '{}' failed: {}", what, call, s.task.entry, result_text(r)), call,
                         static_cast<int>(r));
  }
  void destroy() noexcept {
    for (pipeline_entry& e : entries_)
      if (e.pipeline) context_->api().vkDestroyPipeline(context_->device(), e.pipeline, nullptr);
    entries_.clear();
  }

  std::shared_ptr<context> context_;
  std::deque<pipeline_entry> entries_;  // stable addresses: entry() hands them out
};

// A device graph (docs/graphs.md): launches recorded once into command buffers and
// resubmitted by each replay, without recording or pushing anything again. Every
// recorded launch has its own parameter block (one host-visible buffer holds them all),
// so an update writes new arguments there in place. A task that prints ends a command
// buffer: its records are drained before the next one runs, as after a plain launch.
class vulkan_recording final : public launch_queue {
 public:
  struct step {
    const pipeline_entry* entry = nullptr;
    push_block push{};  // push.params is filled in by end()
    unsigned groups = 1;
    std::vector<unsigned char> params;  // the block until end(); then it lives in blocks_
  };

  explicit vulkan_recording(std::shared_ptr<context> c) : context_(std::move(c)) {}
  vulkan_recording(const vulkan_recording&) = delete;
  vulkan_recording& operator=(const vulkan_recording&) = delete;
  ~vulkan_recording() override {
    std::lock_guard lock(context_->mutex());
    for (VkCommandBuffer cb : commands_) context_->free_commands(cb);
    commands_.clear();
    if (blocks_.handle) context_->destroy_locked(blocks_);
  }

  bool ended() const { return ended_; }
  bool updating() const { return updating_; }

  void add(step s) { steps_.push_back(std::move(s)); }
  // Gives the next recorded launch its new arguments: write(block) fills its parameter
  // block in place (no copy made). Where the launch is another task's, the update fails
  // (end_update() then says false) and nothing is written.
  template <class Write>
  void update(const pipeline_entry* e, const push_block& push, Write&& write) {
    const std::size_t i = next_++;
    if (i >= steps_.size() || steps_[i].entry != e) {
      update_ok_ = false;
      return;
    }
    write(blocks_.mapped + i * params_bytes);
    push_block p = push;
    p.params = steps_[i].push.params;
    if (std::memcmp(&p, &steps_[i].push, sizeof(p)) != 0) {
      steps_[i].push = p;
      rerecord_ = true;
    }
  }

  // The parameter blocks and the command buffers (the device's mutex not held).
  void end() {
    if (!steps_.empty()) {
      blocks_ = context_->host_buffer(steps_.size() * params_bytes, "a device graph's parameter blocks");
      for (std::size_t i = 0; i < steps_.size(); ++i) {
        std::memcpy(blocks_.mapped + i * params_bytes, steps_[i].params.data(), params_bytes);
        steps_[i].params = {};
        steps_[i].push.params = blocks_.address + i * params_bytes;
      }
    }
    std::lock_guard lock(context_->mutex());
    record();
    ended_ = true;
  }
  void begin_update() {
    updating_ = true;
    update_ok_ = true;
    rerecord_ = false;
    next_ = 0;
  }
  bool end_update() {
    updating_ = false;
    if (!update_ok_ || next_ != steps_.size()) return false;
    if (rerecord_) {
      std::lock_guard lock(context_->mutex());
      record();
    }
    return true;
  }

  // Submits the command buffers in turn; `drain` is given each printing task after its own.
  template <class Drain>
  void replay(Drain&& drain) {
    if (!ended_) throw internal_error("a Vulkan device graph replayed before it was recorded");
    std::lock_guard lock(context_->mutex());
    for (std::size_t c = 0; c < commands_.size(); ++c) {
      context_->submit(commands_[c], "replaying a device graph");
      const pipeline_entry* last = steps_[ends_[c] - 1].entry;
      if (!last->task.prints.empty()) drain(*last);
    }
  }

 private:
  // (Re)records the command buffers from steps_ (the caller holds the mutex).
  void record() {
    for (VkCommandBuffer cb : commands_) context_->free_commands(cb);
    commands_.clear();
    ends_.clear();
    const device_api& api = context_->api();
    for (std::size_t from = 0; from < steps_.size();) {
      std::size_t to = from;
      while (to < steps_.size() && (to == from || steps_[to - 1].entry->task.prints.empty())) ++to;
      VkCommandBuffer cb = context_->allocate_commands();
      commands_.push_back(cb);
      ends_.push_back(to);
      context_->record_commands(cb, 0, [&](VkCommandBuffer b) {
        for (std::size_t i = from; i < to; ++i) {
          if (i > from) context_->dispatch_barrier(b);
          const step& s = steps_[i];
          api.vkCmdBindPipeline(b, VK_PIPELINE_BIND_POINT_COMPUTE, s.entry->pipeline);
          api.vkCmdPushConstants(b, context_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(s.push), &s.push);
          api.vkCmdDispatch(b, s.groups, 1, 1);
        }
      });
      from = to;
    }
  }

  std::shared_ptr<context> context_;
  std::vector<step> steps_;
  buffer blocks_;                          // steps_.size() parameter blocks of params_bytes
  std::vector<VkCommandBuffer> commands_;  // each ends after a printing task, or at the end
  std::vector<std::size_t> ends_;          // the step after each command buffer's last
  bool ended_ = false, updating_ = false, update_ok_ = false, rerecord_ = false;
  std::size_t next_ = 0;  // the next step an update gives arguments to
};

// Appends one printed value, formatted as the C++ backends' printf does.
inline void append_value(std::string& out, dtype t, std::uint64_t bits) {
  char text[64];
  switch (t) {
    case dtype::f16:  // the shader writes an f16 as its f32 value
    case dtype::f32:
      std::snprintf(text, sizeof(text), "%g",
                    static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits))));
      break;
    case dtype::f64: std::snprintf(text, sizeof(text), "%g", std::bit_cast<double>(bits)); break;
    case dtype::i64: std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(bits)); break;
    case dtype::u64: std::snprintf(text, sizeof(text), "%llu", static_cast<unsigned long long>(bits)); break;
    case dtype::u32: std::snprintf(text, sizeof(text), "%u", static_cast<unsigned>(bits)); break;
    case dtype::boolean:
    case dtype::u8:
    case dtype::i8:
    case dtype::i16:
    case dtype::u16:
    case dtype::i32: std::snprintf(text, sizeof(text), "%d", static_cast<int>(static_cast<std::int32_t>(bits))); break;
  }
  out += text;
}

class vulkan_device_impl final : public vulkan_device {
 public:
  explicit vulkan_device_impl(const device_options& o) : options_(o) {
    if (o.compile_only && o.target_from_device) {
      try {  // the features of the device present; without one, the options' target
        options_.target = context(o.ordinal).target();
      } catch (const driver_error&) {
      }
    }
    if (!o.compile_only) {
      context_ = std::make_shared<context>(o.ordinal);
      options_.target = context_->target();
      workgroups_ = o.workgroups;
      if (workgroups_ == 0)  // a CPU driver runs each workgroup on one thread: a few per core
        workgroups_ = context_->is_cpu() ? std::max(8u, 4 * std::thread::hardware_concurrency()) : 2048u;
    }
    locate_library(shaderc_library());  // a missing shaderc is reported now, not at the first kernel
    prelude_ = codegen::glsl_prelude(options_.target);
  }

  std::string_view name() const override { return "vulkan"; }
  device_traits traits() const override { return {.splits_by_default = true, .records_launches = true}; }
  std::string target() const override { return "spirv1.5 vulkan1.2 " + options_.target.key(); }
  std::string compiler_identity() const override { return "shaderc " + shaderc_fingerprint(); }
  std::string code_options() const override { return shaderc_flags(options_.compiler); }
  const codegen::glsl_target& glsl_target() const override { return options_.target; }
  std::string description() const override { return context_ ? context_->description() : "compile-only"; }

  void* allocate(std::size_t bytes) override { return ctx("qd::ndarray").allocate(bytes); }
  void release(void* p) noexcept override {
    if (context_ && p) context_->release(p);
  }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    ctx("qd::ndarray::from_host").copy(dst, const_cast<void*>(src), bytes, true, "qd::ndarray::from_host");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    ctx("qd::ndarray::to_host").copy(const_cast<void*>(src), dst, bytes, false, "qd::ndarray::to_host");
  }

  // A task as GLSL (codegen/glsl_emitter); program() and build() are the defaults: the
  // prelude and the tasks as one source, each task compiled by shaderc on its own.
  std::string emit(const codegen::lowered_task& t, std::string_view entry,
                   const codegen::emit_options& o) const override {
    const std::string what = o.kernel.empty() ? std::string("a kernel") : fmt::format("kernel '{}'", o.kernel);
    return codegen::emit_glsl_task(t, entry, {o.bounds_checks, options_.target}, what);
  }
  std::string prelude() const override { return prelude_; }
  std::vector<std::byte> compile(std::string_view source, std::string_view what) override {
    std::vector<codegen::glsl_task_info> tasks = codegen::glsl_tasks_in(source);
    // A kernel with no task (nothing left after dead code elimination) is an empty
    // bundle: nothing to launch, as on the other backends.
    std::vector<compiled_shader> shaders;
    for (codegen::glsl_task_info& t : tasks) {
      const std::string macro = codegen::glsl_task_macro(t.entry);
      shaders.push_back({std::move(t), compile_glsl(source, {&macro, 1}, options_.compiler, what)});
    }
    return encode_bundle(shaders);
  }
  std::unique_ptr<loaded_module> load(std::span<const std::byte> binary, std::string_view what) override {
    auto shaders = decode_bundle(binary);
    if (!shaders)
      throw driver_error(fmt::format("{}: the compiled Vulkan module is malformed ({} bytes)", what, binary.size()),
                         "load", 0);
    if (!context_) return std::make_unique<compile_only_module>();
    return std::make_unique<vulkan_module>(context_, std::move(*shaders), what);
  }

  void launch(void* entry, bool, const launch_context& c) override {
    context& g = ctx("launching a kernel");
    if (c.param_count > limits::max_kernel_params)
      throw internal_error("a Vulkan task has more parameters than its parameter block holds");
    const auto* e = static_cast<const pipeline_entry*>(entry);
    std::lock_guard lock(g.mutex());
    push_block push{0, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(c.temps)), g.error_address(),
                    e->task.prints.empty() ? 0 : g.print_buffer().address, c.rng_stream};
    const unsigned groups = e->task.parallel ? workgroups_ : 1;
    if (c.queue) {  // a device graph's launch: recorded, or its new arguments
      auto& r = dynamic_cast<vulkan_recording&>(*c.queue);
      // A whole parameter block: the arguments, zeros after them.
      auto write = [&](unsigned char* block) {
        std::memset(block, 0, params_bytes);
        std::memcpy(block, c.arrays, c.param_count * sizeof(array_abi));
        std::memcpy(block + scalars_offset, c.scalars, c.param_count * sizeof(std::uint64_t));
      };
      if (r.updating()) {
        r.update(e, push, write);  // into the recorded block, in place
      } else if (!r.ended()) {
        std::vector<unsigned char> params(params_bytes);
        write(params.data());
        r.add({e, push, groups, std::move(params)});
      } else {
        throw internal_error("a launch into a Vulkan device graph that has ended and is not being updated");
      }
      return;
    }
    std::memcpy(g.params(), c.arrays, c.param_count * sizeof(array_abi));
    std::memcpy(g.params() + scalars_offset, c.scalars, c.param_count * sizeof(std::uint64_t));
    push.params = g.params_address();
    g.run(
        [&](VkCommandBuffer cb) {
          g.api().vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipeline);
          g.api().vkCmdPushConstants(cb, g.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), &push);
          g.api().vkCmdDispatch(cb, groups, 1, 1);
        },
        fmt::format("running task '{}'", e->task.entry));
    read_error_record(g, c);
    if (!e->task.prints.empty()) drain_prints(g, *e);
  }

  // Device graphs: launches recorded into command buffers, replayed by resubmitting them,
  // updated in place (vulkan_recording). A do_while stays a host loop: no device loops.
  std::unique_ptr<launch_queue> begin_recording() override {
    ctx("recording a device graph");
    return std::make_unique<vulkan_recording>(context_);
  }
  void end_recording(launch_queue& r) override { dynamic_cast<vulkan_recording&>(r).end(); }
  void replay(launch_queue& r) override {
    context& g = ctx("replaying a device graph");
    dynamic_cast<vulkan_recording&>(r).replay([&](const pipeline_entry& e) { drain_prints(g, e); });
  }
  bool begin_update(launch_queue& r) override {
    dynamic_cast<vulkan_recording&>(r).begin_update();
    return true;
  }
  bool end_update(launch_queue& r) override { return dynamic_cast<vulkan_recording&>(r).end_update(); }

 private:
  context& ctx(std::string_view what) const {
    if (!context_)
      throw user_error(
          fmt::format("{}: compile_only is set, so there is no Vulkan device: kernels can be compiled "
                      "(kernel.compile()) and cached, but nothing can be allocated or run",
                      what));
    return *context_;
  }

  // The launch's first out-of-range access (flag 1) or overflowing loop bound (flag 2).
  static void read_error_record(context& g, const launch_context& c) {
    std::uint32_t flag = 0;
    std::memcpy(&flag, g.error_record(), sizeof(flag));
    if (flag == 0) return;
    std::int64_t fields[4];
    std::memcpy(fields, g.error_record() + 8, sizeof(fields));
    if (c.error) {
      c.error[0] = flag;
      for (int k = 0; k < 4; ++k) c.error[k + 1] = fields[k];
    }
    std::memset(g.error_record(), 0, error_bytes);
  }

  // Prints the launch's records, in the order the invocations reserved them.
  static void drain_prints(context& g, const pipeline_entry& e) {
    const buffer& b = g.print_buffer();
    std::uint32_t header[2];
    std::memcpy(header, b.mapped, sizeof(header));
    const std::size_t capacity = codegen::glsl_print_words;
    const std::size_t used = std::min<std::size_t>(header[0], capacity);
    const unsigned char* words = b.mapped + 8;
    auto word = [&](std::size_t i) {
      std::uint64_t w = 0;
      std::memcpy(&w, words + i * 8, 8);
      return w;
    };
    std::string out;
    std::size_t at = 0;
    for (; at < used;) {
      const std::uint64_t head = word(at);
      const std::size_t site = static_cast<std::size_t>(head >> 32), count = head & 0xffffffffu;
      if (site == 0 || site > e.task.prints.size() || at + 1 + count > used) break;  // 0: a record that did not fit
      std::size_t arg = 0;
      bool first = true, ended = false;
      for (const codegen::glsl_print_piece& p : e.task.prints[site - 1]) {
        if (!first) out += ' ';
        first = false;
        if (!p.is_text) {
          if (arg < count) append_value(out, p.type, word(at + 1 + arg++));
          continue;
        }
        const std::size_t nul = p.text.find('\0');  // printf's format ends there, newline included
        out.append(p.text, 0, nul);
        if ((ended = nul != std::string::npos)) break;
      }
      if (!ended) out += '\n';
      at += 1 + count;
    }
    if (!out.empty()) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
    }
    if (header[0] > at)
      qd::detail::log_fmt(log_level::warn,
                          "qd::print in task '{}': the print buffer ({} bytes) filled up; later lines of that launch "
                          "were dropped",
                          e.task.entry, print_bytes);
    std::memset(b.mapped, 0, 8 + std::min<std::size_t>(header[0], capacity) * 8);
  }

  device_options options_;
  std::shared_ptr<context> context_;  // null in compile-only mode
  unsigned workgroups_ = 1;
  std::string prelude_;
};

}  // namespace detail

QD_FUNC std::unique_ptr<vulkan_device> make_device(const device_options& options) {
  return std::make_unique<detail::vulkan_device_impl>(options);
}

}  // namespace qd::inline v0::backend::vulkan
#else
namespace qd::inline v0::backend::vulkan {

QD_FUNC std::unique_ptr<vulkan_device> make_device(const device_options&) {
  throw driver_error(
      "this build of Quadrants has no Vulkan backend: it was compiled without the Vulkan headers. "
      "Install libvulkan-dev and rebuild",
      "vulkan", 0);
}

}  // namespace qd::inline v0::backend::vulkan
#endif  // QD_HAS_VULKAN_HEADERS
