#include "cli/interrupt.hpp"

#include <csignal>

namespace sm::cli {

namespace {
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_sigint(int) { g_interrupted.store(true); }
}  // namespace

struct SigintGuard::Saved {
    struct sigaction old {};
};

SigintGuard::SigintGuard() : saved_(new Saved) {
    g_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, &saved_->old);
}

SigintGuard::~SigintGuard() {
    sigaction(SIGINT, &saved_->old, nullptr);
    delete saved_;
}

const std::atomic<bool>& sigint_flag() { return g_interrupted; }

}  // namespace sm::cli
