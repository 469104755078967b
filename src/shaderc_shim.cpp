// libqd_shaderc.so: shaderc with glslang and SPIRV-Tools linked in from their static
// libraries, for systems whose libshaderc.so.1 cannot be opened on its own (Debian 12
// ships it without its glslang and SPIRV-Tools dependencies). The Vulkan backend opens
// it with dlopen like any shaderc (backend/vulkan/shaderc.hpp); nothing links against it.
// The archives build shaderc's functions hidden, so they are reached through one lookup.
#include <shaderc/shaderc.h>

#include <cstring>

extern "C" __attribute__((visibility("default"))) void* qd_shaderc_symbol(const char* name) {
  struct row {
    const char* name;
    void* address;
  };
  // clang-format off
#define QD_SHIM_ROW(f) {#f, reinterpret_cast<void*>(&f)}
  // clang-format on
  static const row rows[] = {
      QD_SHIM_ROW(shaderc_compiler_initialize),
      QD_SHIM_ROW(shaderc_compiler_release),
      QD_SHIM_ROW(shaderc_compile_options_initialize),
      QD_SHIM_ROW(shaderc_compile_options_release),
      QD_SHIM_ROW(shaderc_compile_options_add_macro_definition),
      QD_SHIM_ROW(shaderc_compile_options_set_source_language),
      QD_SHIM_ROW(shaderc_compile_options_set_optimization_level),
      QD_SHIM_ROW(shaderc_compile_options_set_target_env),
      QD_SHIM_ROW(shaderc_compile_into_spv),
      QD_SHIM_ROW(shaderc_result_release),
      QD_SHIM_ROW(shaderc_result_get_length),
      QD_SHIM_ROW(shaderc_result_get_compilation_status),
      QD_SHIM_ROW(shaderc_result_get_bytes),
      QD_SHIM_ROW(shaderc_result_get_error_message),
      QD_SHIM_ROW(shaderc_get_spv_version),
  };
#undef QD_SHIM_ROW
  for (const row& r : rows)
    if (std::strcmp(r.name, name) == 0) return r.address;
  return nullptr;
}
