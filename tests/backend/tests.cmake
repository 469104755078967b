qd_add_test(backend thread_pool)
qd_add_test(backend cpu_compiler)
qd_add_test(backend reference)
# GPU backends: the NVRTC and hipRTC wrappers, choosing a GPU backend, every suite
# kernel compiled in compile-only mode (all run wherever the compilers are
# installed, GPU or not; each case once per compiler), and the per-backend suite
# (GPU instances skip without one).
qd_add_test(backend gpu_compiler)
qd_add_test(backend gpu_device)
qd_add_test(backend gpu_compile_only)
qd_add_test(backend gpu_suite)
