// Mesh benchmark (issue 14): a Laplacian over v.verts() of a large tetrahedral mesh,
// qd::mesh_for / qd::for_each against the same loop written by hand over the CSR
// arrays (compiled by the same compiler, run on the same thread pool), and the
// host's mesh and relation building times. Usage: mesh_bench [cubes per side] [rounds].
#include <quadrants/quadrants.hpp>

#include "bench_support.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "quadrants/backend/cpu/prelude.hpp"
#include "quadrants/runtime/pipeline/program.hpp"
#include "support/tet_mesh.hpp"  // tests/support: the generated meshes the tests use

namespace {

using namespace qd_bench;  // bench_support.hpp

// The hand-written loop, with the generated code's ABI: arrays offsets, indices, u, out.
constexpr const char* hand_source = R"(
struct lap_frame { const qd_i32* off; const qd_i32* idx; const qd_f32* u; qd_f32* out; };
static void lap_chunk(const void* fp, const qd_ctx*, qd_i64 lo, qd_i64 hi) {
  const lap_frame f = *(const lap_frame*)fp;
  for (qd_i64 v = lo; v < hi; ++v) {
    qd_f32 acc = 0.0f;
    for (qd_i32 k = f.off[v]; k < f.off[v + 1]; ++k) acc += f.u[f.idx[k]] - f.u[v];
    f.out[v] = acc;
  }
}
extern "C" __attribute__((visibility("default"))) void hand_laplacian(const qd_ctx* ctx) {
  lap_frame f{(const qd_i32*)ctx->arrays[0].data, (const qd_i32*)ctx->arrays[1].data,
              (const qd_f32*)ctx->arrays[2].data, (qd_f32*)ctx->arrays[3].data};
  ((const qd_cpu_runtime*)ctx->runtime)->parallel_for(ctx, 0, ctx->arrays[0].shape[0] - 1, &lap_chunk, &f);
}
)";

template <class T>
qd::backend::array_abi array_of(const qd::ndarray<T, 1>& a) {
  return {a.storage().data(), nullptr, {a.shape(0), 0, 0, 0}};
}

void compare(int n, int threads, int rounds) {
  qd::init({.arch = qd::arch::cpu, .offline_cache = false, .cpu_max_num_threads = threads});
  const std::int32_t nv = (n + 1) * (n + 1) * (n + 1);
  const auto tets = qd_test::cube_tets(n);
  qd::mesh m;
  const double build = seconds([&] { m = qd::mesh::tetrahedral(nv, tets); });
  const double relation = seconds([&] { (void)m.relation(qd::mesh_kind::verts, qd::mesh_kind::verts); });

  auto smooth = qd_test::smooth_kernel();  // the SPEC §11.7 example
  qd::ndarray<float, 1> u(nv), out(nv), hand_out(nv);
  std::vector<float> values(static_cast<std::size_t>(nv));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 37) % 101) * 0.01f;
  u.from_host(values);

  const qd::mesh_csr& vv = m.relation(qd::mesh_kind::verts, qd::mesh_kind::verts);
  qd::ndarray<std::int32_t, 1> offsets(static_cast<std::int64_t>(vv.offsets.size()));
  qd::ndarray<std::int32_t, 1> indices(static_cast<std::int64_t>(vv.indices.size()));
  offsets.from_host(vv.offsets);
  indices.from_host(vv.indices);
  auto& dev = qd::detail::current_program("mesh_bench").device();
  auto module =
      dev.load(dev.compile(qd::backend::cpu::translation_unit_prelude() + hand_source, "mesh_bench"), "mesh_bench");
  void* hand = module->entry("hand_laplacian");
  std::vector<qd::backend::array_abi> arrays{array_of(offsets), array_of(indices), array_of(u), array_of(hand_out)};
  std::vector<std::uint64_t> scalars(arrays.size() + 1);
  std::int64_t error[5] = {};
  auto run_hand = [&] {
    qd::backend::launch_context ctx{arrays.data(), scalars.data(), arrays.size(), nullptr, 0, error};
    dev.launch(hand, true, ctx);
  };

  const double first = seconds([&] { smooth(m, u, out); });  // trace, compile, upload
  std::vector<double> gen, handwritten;
  for (int r = 0; r < rounds + 1; ++r) {
    const double g = seconds([&] { smooth(m, u, out); });
    const double h = seconds(run_hand);
    if (r == 0) continue;
    gen.push_back(g);
    handwritten.push_back(h);
  }
  if (out.to_host() != hand_out.to_host()) fmt::print("  WARNING: the generated and hand-written results differ\n");
  fmt::print(
      "  {} thread{}: {} tets, {} verts, {} v.verts entries: mesh build {:.0f} ms, v.verts relation {:.0f} ms, "
      "first launch {:.0f} ms\n",
      threads, threads == 1 ? " " : "s", tets.size(), nv, vv.indices.size(), build * 1e3, relation * 1e3, first * 1e3);
  fmt::print(
      "  {} thread{}: Laplacian generated {:7.2f} ms  hand-written CSR {:7.2f} ms  ratio {:.3f} (target <= 1.2)\n",
      threads, threads == 1 ? " " : "s", median(gen) * 1e3, median(handwritten) * 1e3,
      median(gen) / median(handwritten));
  qd::reset();
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 56;  // 56^3 * 6 = 1,053,696 tetrahedra
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  fmt::print("mesh Laplacian, qd::mesh_for against the loop written by hand over CSR arrays\n");
  for (int threads : {1, 2}) compare(n, threads, rounds);
}
