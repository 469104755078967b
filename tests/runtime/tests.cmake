# Runtime layer: the DSL's statements and expressions run on the CPU backend and
# checked against plain C++, values crossing constructs, and run-time errors.
qd_add_test(runtime statements)
qd_add_test(runtime top_level_values)
qd_add_test(runtime errors)
