// The per-thread decompositions refuse at compile time what they cannot take: misuse n
// (-DQD_MISUSE=n) must fail with the n-th expected diagnostic; the file as written compiles.
// expect: qd::svd and qd::polar_decompose are unrolled for 2x2 and 3x3 matrices
// expect: take float or double matrices; convert an integer matrix first
// expect: qd::svd and qd::polar_decompose need a square matrix
// expect: qd::sym_eig and qd::make_spd are unrolled for 2x2, 3x3 and 4x4 matrices
// expect: b needs one component per row of A
#include <quadrants/quadrants.hpp>
#ifndef QD_MISUSE
#define QD_MISUSE 0
#endif
auto k = qd::kernel(
    "k", [](qd::types::ndarray<qd::mat4f, 1> m, qd::types::ndarray<qd::mat3f, 1> m3, qd::types::ndarray<float, 1> out) {
      qd::range_for(out.shape(0), [&](qd::i32 i) {
#if QD_MISUSE == 1  // svd of a 4x4
        auto [R, P] = qd::polar_decompose(m[i]);
        out[i] = R(0, 0) + P(0, 0);
#else
    auto [w, Q] = qd::sym_eig(m[i]);
    out[i] = w[0] + Q(0, 0);
#endif
#if QD_MISUSE == 2  // svd of an integer matrix
        const qd::mat2i a(1, 2, 3, 4);
#else
    const qd::mat2f a(qd::mat2i(1, 2, 3, 4));
#endif
        auto [U, S, V] = qd::svd(a);
        out[i] += S(1, 1) + U(0, 0) + V(0, 0);
#if QD_MISUSE == 3  // svd of a non-square matrix
        qd::mat<float, 2, 3> b(1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f);
#else
    qd::mat<float, 2, 2> b(1.0f, 2.0f, 3.0f, 4.0f);
#endif
        auto [U2, S2, V2] = qd::svd(b);
        out[i] += S2(0, 0) + U2(0, 0) + V2(0, 0);
#if QD_MISUSE == 4  // sym_eig of a 5x5
        const auto c = qd::mat<float, 5, 5>::identity();
#else
    const auto c = qd::mat<float, 4, 4>::identity();
#endif
        out[i] += qd::make_spd(c)(0, 0);
#if QD_MISUSE == 5  // solve with a right-hand side of another size
        out[i] += qd::solve(m3[i], qd::vec2f(1.0f, 2.0f)).x();
#else
    out[i] += qd::solve(m3[i], qd::vec3f(1.0f, 2.0f, 3.0f)).x();
#endif
      });
    });
