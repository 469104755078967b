// Trace time (issue 14: source locations cost at most 5 % of it): the median time to
// trace a kernel of 64 constructs of about 30 operations each (bench_support.hpp), run
// the dead-code pass and analyse its structure, as every kernel's first use does; then
// the passes a variant's build adds: the split plan and the lowering of every task.
// Built against two checkouts' include/ side by side, it compares them.
#include <cstdio>

#include "bench_support.hpp"
#include "quadrants/analysis/split.hpp"
#include "quadrants/codegen/lower.hpp"
#include "quadrants/runtime/pipeline/kernel_state.hpp"

namespace {

template <class F>
std::shared_ptr<qd::detail::kernel_state> traced(F body) {
  auto k = qd::detail::make_kernel_state("traced", {}, qd::detail::parameter_descs<F>(),
                                         [body](qd::detail::tracer& t) { qd::detail::trace_kernel(body, t); });
  qd::detail::ensure_traced(*k);
  return k;
}

// Plans `k` split and whole and lowers every task of both plans; returns the task count.
std::size_t plan_and_lower(const qd::detail::kernel_state& k) {
  std::size_t tasks = 0;
  for (const qd::analysis::task_plan& plan :
       {qd::analysis::plan_split(k.ir, k.structure).plan, qd::analysis::plan_whole_kernel(k.ir, k.structure)})
    for (const auto& t : plan.tasks)
      tasks += qd::codegen::lower_task(k.ir, k.structure, t, plan).fn.nodes.empty() ? 0 : 1;
  return tasks;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  const int constructs = 64;
  auto body = [=](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> c,
                  qd::types::ndarray<float, 1> out) {
    for (int k = 0; k < constructs; ++k) qd_bench::construct(a, b, c, out, k);
  };
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) times.push_back(qd_bench::ms([&] { traced(body); }));
  std::printf("trace of a %d-construct kernel: median %.3f ms over %d rounds\n", constructs, qd_bench::median(times),
              rounds);
  // Four reductions read by the later constructs: the split persists them.
  auto reductions = [=](qd::types::ndarray<float, 1> a, qd::types::ndarray<float, 1> b, qd::types::ndarray<float, 1> c,
                        qd::types::ndarray<float, 1> out) {
    qd::var<float> s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    qd::var<float>* sums[4] = {&s0, &s1, &s2, &s3};
    for (int k = 0; k < constructs; ++k) {
      if (k < 4) {
        qd::var<float>& sum = *sums[k];
        qd::range_for(a.shape(0), [&](qd::i32 i) { sum += a[i] + b[i]; });
      } else {
        qd_bench::construct(a, b, c, out, k, sums[k % 4]);
      }
    }
  };
  const auto k = traced(reductions);
  std::size_t tasks = 0;
  times.clear();
  for (int r = 0; r < rounds; ++r) times.push_back(qd_bench::ms([&] { tasks = plan_and_lower(*k); }));
  std::printf("split and whole plans of a %d-construct kernel with reductions, %zu tasks lowered: median %.3f ms\n",
              constructs, tasks, qd_bench::median(times));
  return 0;
}
