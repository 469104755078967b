qd_add_test(ir serialize)
qd_add_test(ir dce)
qd_add_test(ir printer)
qd_add_test(ir nesting)
