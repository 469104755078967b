# Device algorithms and the hash grid (SPEC §13.8) against the C++ standard library and
# brute force, on the CPU (1 and 2 threads), the reference backend and the GPUs.
qd_add_test(algorithms algorithms)
qd_add_test(algorithms hash_grid)
