# Language layer: the kernel lambda's reflected signature and how C++ arguments
# bind to its parameters (run on the CPU backend).
qd_add_test(lang kernel_signature)
