// Every implementation (-inl) file outside the cache layer: the one list that
// src/{quadrants,backend,runtime}.cpp and <quadrants/implementation.hpp> compile. Internal.
// In three parts, so that the compiled library builds in parallel and an edit recompiles
// a third of it: QD_IMPLEMENTATION_PART 1 (base, ir, lang, autodiff, codegen), 2 (backend),
// 3 (runtime) compiles one part (src/); undefined, all of them. A new file goes into
// the part of its layer; any part works, as each file declares what it uses.
#pragma once

#if !defined(QD_IMPLEMENTATION_PART) || QD_IMPLEMENTATION_PART == 1

#include "quadrants/base/log-inl.hpp"
#include "quadrants/base/env_integer-inl.hpp"
#include "quadrants/ir/printer-inl.hpp"
#include "quadrants/ir/verify-inl.hpp"
#include "quadrants/lang/trace-inl.hpp"
#include "quadrants/lang/loop_control-inl.hpp"
#include "quadrants/lang/kernel_return-inl.hpp"
#include "quadrants/autodiff/activity-inl.hpp"
#include "quadrants/autodiff/adjoint-inl.hpp"
#include "quadrants/autodiff/footprint-inl.hpp"
#include "quadrants/lang/graph-inl.hpp"
#include "quadrants/codegen/lower-inl.hpp"
#include "quadrants/codegen/cpp_emitter-inl.hpp"
#include "quadrants/codegen/glsl_task_info-inl.hpp"
#include "quadrants/codegen/glsl_prelude-inl.hpp"
#include "quadrants/codegen/glsl_helpers-inl.hpp"
#include "quadrants/codegen/glsl_emitter-inl.hpp"
#endif

#if !defined(QD_IMPLEMENTATION_PART) || QD_IMPLEMENTATION_PART == 2
#include "quadrants/backend/device-inl.hpp"
#include "quadrants/backend/description-inl.hpp"
#include "quadrants/backend/host_memory-inl.hpp"
#include "quadrants/backend/cpu/thread_pool-inl.hpp"
#include "quadrants/backend/cpu/scratch_dir-inl.hpp"
#include "quadrants/backend/cpu/compiler-inl.hpp"
#include "quadrants/backend/cpu/module-inl.hpp"
#include "quadrants/backend/cpu/device-inl.hpp"
#include "quadrants/backend/cpu/description-inl.hpp"
#include "quadrants/backend/shared_library-inl.hpp"
#include "quadrants/backend/compiler_log-inl.hpp"
#include "quadrants/backend/gpu_task_params-inl.hpp"
#include "quadrants/backend/gpu_entry_table-inl.hpp"
#include "quadrants/backend/gpu_compiler-inl.hpp"
#include "quadrants/backend/gpu_device-inl.hpp"
#include "quadrants/backend/cuda/driver-inl.hpp"
#include "quadrants/backend/cuda/nvrtc-inl.hpp"
#include "quadrants/backend/cuda/device-inl.hpp"
#include "quadrants/backend/cuda/description-inl.hpp"
#include "quadrants/backend/amdgpu/hip-inl.hpp"
#include "quadrants/backend/amdgpu/hiprtc-inl.hpp"
#include "quadrants/backend/amdgpu/device-inl.hpp"
#include "quadrants/backend/amdgpu/description-inl.hpp"
#include "quadrants/backend/vulkan/loader-inl.hpp"
#include "quadrants/backend/vulkan/shaderc-inl.hpp"
#include "quadrants/backend/vulkan/spirv_bundle-inl.hpp"
#include "quadrants/backend/vulkan/device-inl.hpp"
#include "quadrants/backend/vulkan/description-inl.hpp"
#include "quadrants/backend/metal/description-inl.hpp"
#include "quadrants/backend/reference/interpreter-inl.hpp"
#include "quadrants/backend/reference/device-inl.hpp"
#include "quadrants/backend/reference/description-inl.hpp"
#include "quadrants/backend/registry-inl.hpp"
#endif

#if !defined(QD_IMPLEMENTATION_PART) || QD_IMPLEMENTATION_PART == 3
#include "quadrants/runtime/config-inl.hpp"
#include "quadrants/runtime/pipeline/program-inl.hpp"
#include "quadrants/runtime/ndarray-inl.hpp"
#include "quadrants/runtime/diagnostics/dump_path-inl.hpp"
#include "quadrants/runtime/diagnostics/text_file-inl.hpp"
#include "quadrants/runtime/diagnostics/debug_dump-inl.hpp"
#include "quadrants/runtime/pipeline/kernel_state-inl.hpp"
#include "quadrants/runtime/pipeline/variant_builder-inl.hpp"
#include "quadrants/runtime/pipeline/variant_choice-inl.hpp"
#include "quadrants/runtime/diagnostics/explain-inl.hpp"
#include "quadrants/runtime/diagnostics/coverage-inl.hpp"
#include "quadrants/runtime/pipeline/task_launch-inl.hpp"
#include "quadrants/runtime/pipeline/launch-inl.hpp"
#include "quadrants/runtime/graph/branch_workers-inl.hpp"
#include "quadrants/runtime/gradient-inl.hpp"
#include "quadrants/runtime/graph/graph-inl.hpp"
#include "quadrants/runtime/mesh-inl.hpp"
#include "quadrants/runtime/statistics-inl.hpp"
#include "quadrants/codegen/reductions-inl.hpp"
#endif
