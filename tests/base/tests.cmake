qd_add_test(base half)
