qd_add_test(backend thread_pool)
qd_add_test(backend cpu_compiler)
qd_add_test(backend reference)
