#include "core/results.hpp"

namespace qd::emulation {
namespace {

struct result_row {
  int code;
  const char* cuda;  // null: CUDA has no such result
  const char* hip;   // null: HIP has none
  const char* text;
};

// The results the emulated APIs return or a program is likely to ask about, as the
// drivers name and describe them (cuda.h, hip_runtime_api.h).
constexpr result_row results[] = {
    {0, "CUDA_SUCCESS", "hipSuccess", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "hipErrorInvalidValue", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "hipErrorOutOfMemory", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "hipErrorNotInitialized", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", nullptr, "driver shutting down"},
    {9, nullptr, "hipErrorInvalidConfiguration", "invalid configuration argument"},
    {17, nullptr, "hipErrorInvalidDevicePointer", "invalid device pointer"},
    {21, nullptr, "hipErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {98, nullptr, "hipErrorInvalidDeviceFunction", "invalid device function"},
    {100, "CUDA_ERROR_NO_DEVICE", nullptr, "no CUDA-capable device is detected"},
    {100, nullptr, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "hipErrorInvalidDevice", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "hipErrorInvalidImage", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "hipErrorInvalidContext", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "hipErrorNoBinaryForGpu",
     "no kernel image is available for execution on the device"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "hipErrorInvalidHandle", "invalid resource handle"},
    {401, "CUDA_ERROR_ILLEGAL_STATE", nullptr, "the operation is not valid in the current state"},
    {401, nullptr, "hipErrorIllegalState", "the operation cannot be performed in the present state"},
    {500, "CUDA_ERROR_NOT_FOUND", "hipErrorNotFound", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "hipErrorNotReady", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "hipErrorIllegalAddress", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "hipErrorLaunchOutOfResources",
     "too many resources requested for launch"},
    {709, nullptr, "hipErrorContextIsDestroyed", "context is destroyed"},
    {710, "CUDA_ERROR_ASSERT", "hipErrorAssert", "device-side assert triggered"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", nullptr, "an illegal instruction was encountered"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "hipErrorLaunchFailure", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "hipErrorNotSupported", "operation not supported"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "hipErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {999, "CUDA_ERROR_UNKNOWN", "hipErrorUnknown", "unknown error"},
};

const result_row* find(gpu_api api, int code) {
  for (const auto& r : results)
    if (r.code == code && (api == gpu_api::cuda ? r.cuda : r.hip)) return &r;
  return nullptr;
}

}  // namespace

int result_code(gpu_api api, gpu_status s) {
#define QD_EMU_STATUS_CODE(name, cuda_code, hip_code) \
  case gpu_status::name: return api == gpu_api::cuda ? (cuda_code) : (hip_code);
  switch (s) { QD_EMU_STATUSES(QD_EMU_STATUS_CODE) }
#undef QD_EMU_STATUS_CODE
  return 999;
}

const char* result_name(gpu_api api, int code) {
  const result_row* r = find(api, code);
  return r ? (api == gpu_api::cuda ? r->cuda : r->hip) : nullptr;
}

const char* result_text(gpu_api api, int code) {
  const result_row* r = find(api, code);
  return r ? r->text : nullptr;
}

}  // namespace qd::emulation
