qd_add_test(analysis constructs)
qd_add_test(analysis task_plan)
qd_add_test(analysis split)
qd_add_test(analysis atomic_demotion LIBS qd_fuzz_support)  # fuzz/kernel_generator.hpp
qd_add_test(analysis graph)
