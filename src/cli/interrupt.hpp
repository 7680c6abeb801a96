#pragma once
// Ctrl-C for long commands (search, the studies): the first SIGINT sets a flag the work reads
// and stops at the next point or layout; SA_RESETHAND makes a second one kill the program.
#include <atomic>

namespace sm::cli {

inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report it

// While alive, SIGINT sets the flag `sigint_flag()` returns (cleared on construction).
class SigintGuard {
public:
    SigintGuard();
    ~SigintGuard();
    SigintGuard(const SigintGuard&) = delete;
    SigintGuard& operator=(const SigintGuard&) = delete;

private:
    struct Saved;
    Saved* saved_;
};

// The flag: the handler may only touch lock-free static storage, so it is the one piece of
// process-wide state.
const std::atomic<bool>& sigint_flag();

}  // namespace sm::cli
