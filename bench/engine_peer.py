# Python Quadrants' side of engine_bench (issue 30): the same program as bench_support.hpp's
# make_kernel, K kernels of C constructs of about 30 float operations, each construct a
# top-level loop, every kernel distinct, CPU backend with its offline cache under DIR.
# Writes "<seconds from before qd.init to every kernel compiled> <ms of the import> 0" into OUT.
# Usage: python3 engine_peer.py DIR KERNELS CONSTRUCTS OUT
import sys
import time

t_import = time.perf_counter()
import quadrants as qd  # noqa: E402

t0 = time.perf_counter()
cache_dir, kernels, constructs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
qd.init(arch=qd.cpu, offline_cache=True, offline_cache_file_path=cache_dir, log_level="error", unrolling_limit=0)

Array = qd.types.ndarray(dtype=qd.f32, ndim=1)


def make_kernel(kernel_salt):
    salts = [float(kernel_salt * 100 + k + 1) for k in range(constructs)]

    @qd.kernel
    def engine(a: Array, b: Array, c: Array, out: Array):
        for k in qd.static(range(constructs)):
            for i in range(out.shape[0]):
                p = a[i]
                q = b[i]
                s = c[i]
                acc = p * q + s * qd.static(salts[k])
                for _ in qd.static(range(9)):
                    acc = acc * p - q * s + acc * 0.5
                out[i] = acc

    return engine


ks = [make_kernel(k + 1) for k in range(kernels)]
arrays = [qd.ndarray(qd.f32, shape=16) for _ in range(4)]
for k in ks:
    k(*arrays)  # the first call compiles (or loads from the cache)
qd.sync()
seconds = time.perf_counter() - t0
with open(sys.argv[4], "w") as f:
    f.write(f"{seconds:.4f} {round((t0 - t_import) * 1000)} 0\n")
