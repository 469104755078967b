// Fits the stiffness of a damped spring to a target trajectory by gradient descent,
// with reverse-mode autodiff: each time step is one launch recorded on a qd::ad::tape,
// and tape.backward() gives d(loss)/d(stiffness) (docs/autodiff.md).
#include <quadrants/quadrants.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int steps = 200;
constexpr double dt = 0.02, damping = 0.3;

using state_array = qd::types::ndarray<double, 2, qd::needs_grad>;  // [steps + 1, 2]: position, velocity
using scalar_array = qd::types::ndarray<double, 0, qd::needs_grad>;

// One semi-implicit Euler step: reads row t, writes row t + 1 (never what it read).
auto step =
    qd::kernel("spring_step", {"state", "stiffness", "t"}, [](state_array state, scalar_array stiffness, qd::i32 t) {
      qd::f64 x = state(t, 0), v = state(t, 1);
      qd::f64 a = -stiffness() * x - damping * v;
      qd::f64 v1 = v + dt * a;
      state(t + 1, 1) = v1;
      state(t + 1, 0) = x + dt * v1;
    });

// Mean squared distance between the positions and the target trajectory.
auto distance = qd::kernel("spring_distance", {"state", "target", "loss"},
                           [](state_array state, qd::types::ndarray<double, 1> target, scalar_array loss) {
                             qd::range_for(target.shape(0), [&](qd::i32 t) {
                               qd::f64 d = state(t, 0) - target[t];
                               loss() += d * d / static_cast<double>(steps + 1);
                             });
                           });

// Runs the simulation from x = 1, v = 0 with the stiffness held in `stiffness`.
void simulate(qd::ndarray<double, 2>& state, qd::ndarray<double, 0>& stiffness) {
  std::vector<double> initial(2 * (steps + 1), 0.0);
  initial[0] = 1.0;
  state.from_host(initial);
  for (int t = 0; t < steps; ++t) step(state, stiffness, t);
}

}  // namespace

int main() {
  qd::init();  // QD_ARCH chooses the backend; the CPU by default
  const double true_stiffness = 4.0;
  qd::ndarray<double, 2> state({steps + 1, 2}, qd::needs_grad);
  qd::ndarray<double, 0> stiffness(qd::needs_grad), loss(qd::needs_grad);
  qd::ndarray<double, 1> target(steps + 1);

  // The target: the trajectory of the true spring.
  stiffness.fill(true_stiffness);
  simulate(state, stiffness);
  std::vector<double> rows = state.to_host(), target_host;
  for (int t = 0; t <= steps; ++t) target_host.push_back(rows[static_cast<std::size_t>(2 * t)]);
  target.from_host(target_host);

  double k = 1.5;
  const double rate = 2.0;
  double last_loss = 0.0;
  int iteration = 0;
  for (; iteration < 300; ++iteration) {
    stiffness.fill(k);
    stiffness.grad().fill(0.0);
    state.grad().fill(0.0);
    loss.fill(0.0);
    {
      qd::ad::tape tape(loss);
      simulate(state, stiffness);
      distance(state, target, loss);
      tape.backward();
    }
    last_loss = loss.to_host()[0];
    const double gradient = stiffness.grad().to_host()[0];
    if (iteration % 50 == 0)
      std::printf("iteration %3d: stiffness %.6f  loss %.3e  gradient %+.3e\n", iteration, k, last_loss, gradient);
    if (last_loss < 1e-14) break;
    k -= rate * gradient;
  }
  std::printf("fitted stiffness %.6f (true %.6f) after %d iterations on %s, loss %.3e\n", k, true_stiffness, iteration,
              std::string(qd::name(qd::current_settings().arch)).c_str(), last_loss);
  return std::abs(k - true_stiffness) < 1e-4 ? 0 : 1;
}
