// A private directory the host compiler works in, under TMPDIR, removed when done.
// Its owner holds a flock on it, so a process killed mid-compile leaves one that the next process removes.
#pragma once

#include <string>

#include "quadrants/base/api.hpp"

namespace qd::inline v0::backend::cpu {

class scratch_dir {
 public:
  // Creates $TMPDIR/qd-cxx-XXXXXX (mode 0700) and locks it; the first one a process
  // makes also removes those whose owner has died. Throws qd::driver_error.
  QD_FUNC scratch_dir();
  QD_FUNC ~scratch_dir();
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  int lock_fd_ = -1;
};

// The directory scratch directories go in: $TMPDIR if set, else /tmp.
QD_FUNC std::string scratch_root();

// Removes the scratch directories in `root` that belong to this user and that no live
// process holds (unlocked, and older than a minute so that one just being made is safe);
// returns how many were removed.
QD_FUNC int remove_abandoned_scratch_dirs(const std::string& root);

}  // namespace qd::inline v0::backend::cpu

#ifdef QD_HEADER_ONLY
#include "quadrants/backend/cpu/scratch_dir-inl.hpp"
#endif
