#include "inference/serving_benchmark.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <stdexcept>
#include <tuple>

namespace sm {

namespace {

double as_d(int64_t x) { return static_cast<double>(x); }

constexpr int64_t kNever = std::numeric_limits<int64_t>::max() / 4;

// Whole steps until `wait_s` has passed at `dt` seconds a step (at least one), capped.
int64_t steps_until(double wait_s, double dt) {
    const double n = std::ceil(wait_s / dt);
    return n >= as_d(kNever) ? kNever : std::max<int64_t>(1, static_cast<int64_t>(n));
}

// Times this close count as one: a run of n steps ends at t + n dt, a step at a time at a sum of
// n steps, and the two round apart (an arrival at a step's end is there at its end; requests done
// at one time are passed on before any engine acts at it).
double tie(double t) { return 1e-9 * std::max(1.0, std::fabs(t)); }

struct Prompt {
    int64_t id = 0;
    int64_t left = 0;  // prompt tokens not yet prefilled
};
struct Decoding {
    int64_t id = 0;
    int64_t done_at = 0;  // the decode-step count at which its last token is out
};
struct Arrival {
    int64_t id = 0;
    double at_s = 0;
};
// A request's first token (done false) or last token out of an engine at t_s.
struct EngineEvent {
    int64_t id = 0;
    double t_s = 0;
    bool done = false;
};

// One engine's queues and clock. A driver delivers its arrivals (arrive) and runs it (advance)
// whenever it is the engine that acts next, so several engines can pass requests to each other.
class EngineSim {
public:
    explicit EngineSim(const EngineModel& e)
        : e_(e),
          slots_(std::max<int64_t>(1, e.slots)),
          budget_(std::max<int64_t>(1, e.chunk_tokens)),
          decode_steps_(static_cast<int64_t>(std::ceil(as_d(e.output_len - 1) / e.tokens_per_decode_step))) {}

    // The shortest step the engine can run (one prompt token, or one decoding request when it
    // takes no prompts): what next_done_s counts its steps at. Costed once, by the driver.
    void set_step_floor(double s) { step_floor_ = std::max(0.0, s); }
    // No request of this engine's is done before this (without new arrivals: its front prompt's
    // chunk steps or its first decoding request's steps, each at least the step floor; when idle,
    // the next arrival's whole stay).
    double next_done_s() const {
        if (!decoding_.empty()) return t_ + as_d(decoding_.front().done_at - decoded_) * step_floor_;
        const int64_t prompt_steps = e_.input_len > 0 ? (e_.input_len + budget_ - 1) / budget_ : 0;
        if (!prompts_.empty()) return t_ + as_d((prompts_.front().left + budget_ - 1) / budget_) * step_floor_;
        const double at = next_s();  // waiting for a slot, or idle until the next arrival
        return at + as_d(std::max<int64_t>(prompt_steps + decode_steps_, 0)) * step_floor_;
    }

    // Request `id` reaches the engine at `at_s` (kept in time order; ties in order of delivery).
    void arrive(int64_t id, double at_s) {
        const auto later = std::upper_bound(future_.begin(), future_.end(), at_s,
                                            [](double x, const Arrival& a) { return x < a.at_s; });
        future_.insert(later, {id, at_s});
    }
    // When the engine next acts: its clock while it holds requests, else the next arrival
    // (infinity: nothing to do).
    double next_s() const {
        if (!prompts_.empty() || !decoding_.empty() || !waiting_.empty()) return t_;
        return future_.empty() ? kInf : std::max(t_, future_.front().at_s);
    }
    // Admits what has arrived, then runs one step, or a run of steps alike (no prompt finishes,
    // no request ends, no arrival reaches a free slot before the last) that starts none at or
    // after `horizon` (when another engine may deliver a request) while a slot is free. Appends
    // each first token and last token, in the order they happen.
    void advance(double horizon, std::vector<EngineEvent>& events) {
        for (;;) {
            while (!future_.empty() && future_.front().at_s <= t_ + tie(t_)) {
                waiting_.push_back(future_.front().id);
                future_.pop_front();
            }
            while (!waiting_.empty() && has_slot()) admit(events);
            if (!prompts_.empty() || !decoding_.empty()) break;
            if (future_.empty()) return;
            t_ = future_.front().at_s;  // idle until the next request
        }
        // The step's mix: prompt tokens up to the budget; decodes beside them, or held back while
        // a separate prefill step runs.
        const bool prefill_only = e_.schedule == PrefillSchedule::separate && pending_ > 0;
        const int64_t q = std::min(budget_, pending_);
        const double d = prefill_only ? 0.0 : as_d(decoding_.size());
        const double dt = e_.step_s(d, as_d(q));
        int64_t alike = pending_ == 0 ? kNever : pending_ > budget_ ? (prompts_.front().left - 1) / budget_ : 0;
        if (!prefill_only && !decoding_.empty()) alike = std::min(alike, decoding_.front().done_at - decoded_);
        if (has_slot()) {
            if (!future_.empty()) alike = std::min(alike, steps_until(future_.front().at_s - tie(t_) - t_, dt));
            alike = std::min(alike, steps_until(horizon - tie(t_) - t_, dt));
        }
        const int64_t n = std::max<int64_t>(alike, 1);
        t_ += as_d(n) * dt;
        if (!prefill_only) decoded_ += n;
        int64_t take = n * q;  // n steps of q tokens (alike steps: full chunks of the front prompt)
        pending_ -= take;
        while (take > 0) {
            Prompt& front = prompts_.front();
            const int64_t used = std::min(take, front.left);
            front.left -= used;
            take -= used;
            if (front.left > 0) break;
            start_decoding(front.id, events);
            prompts_.pop_front();
        }
        while (!decoding_.empty() && decoding_.front().done_at <= decoded_) {
            events.push_back({decoding_.front().id, t_, true});
            decoding_.pop_front();
        }
    }

private:
    bool has_slot() const { return as_d(prompts_.size() + decoding_.size()) < as_d(slots_); }
    // A request takes a slot: its prompt queues for prefill, or (input_len 0: its cache came
    // with it) it decodes from the next step.
    void admit(std::vector<EngineEvent>& events) {
        const int64_t id = waiting_.front();
        waiting_.pop_front();
        if (e_.input_len > 0) {
            prompts_.push_back({id, e_.input_len});
            pending_ += e_.input_len;
        } else {
            start_decoding(id, events);
        }
    }
    // The first token is out: decode the rest, or done.
    void start_decoding(int64_t id, std::vector<EngineEvent>& events) {
        events.push_back({id, t_, false});
        if (decode_steps_ > 0)
            decoding_.push_back({id, decoded_ + decode_steps_});
        else
            events.push_back({id, t_, true});
    }

    static constexpr double kInf = std::numeric_limits<double>::infinity();
    EngineModel e_;
    int64_t slots_, budget_, decode_steps_;
    double step_floor_ = 0;
    std::deque<Arrival> future_;    // delivered, not yet at the engine, by arrival time
    std::deque<int64_t> waiting_;   // at the engine, no slot yet
    std::deque<Prompt> prompts_;    // admitted, prompt being prefilled first come first served
    std::deque<Decoding> decoding_; // joined in order, all decode alike: they finish in order
    int64_t pending_ = 0, decoded_ = 0;
    double t_ = 0;
};

// Every pass of a driver runs an engine's step or a run of them, and ends with an event (a prompt
// or a request finishing, an arrival, an admission) or at another engine's next action: at most
// a few per request and engine, or one per step of a request. More passes than that is a bug,
// not a long benchmark.
int64_t pass_limit(const EngineModel& e, int64_t requests, size_t engines) {
    const double steps = as_d(e.input_len / std::max<int64_t>(1, e.chunk_tokens) + e.output_len + 16);
    return static_cast<int64_t>(std::min(steps * as_d(requests) * static_cast<double>(engines) + 64.0, 1e18));  // no overflow
}

}  // namespace

std::vector<RequestTimes> simulate_engine(const EngineModel& e, const Load& load) {
    const int64_t total = load.clients > 0 ? load.requests : std::min<int64_t>(load.requests, static_cast<int64_t>(load.arrivals_s.size()));
    std::vector<RequestTimes> out(static_cast<size_t>(std::max<int64_t>(total, 0)));
    if (total <= 0) return out;
    EngineSim engine(e);
    int64_t sent = 0;
    auto send = [&](double at) {
        out[static_cast<size_t>(sent)].sent_s = at;
        engine.arrive(sent++, at + e.host_s);
    };
    if (load.clients > 0)
        for (int64_t k = 0; k < std::min(load.clients, total); ++k) send(0.0);
    else
        for (int64_t k = 0; k < total; ++k) send(load.arrivals_s[static_cast<size_t>(k)]);
    std::vector<EngineEvent> events;
    const int64_t passes = pass_limit(e, total, 1);
    for (int64_t pass = 0; std::isfinite(engine.next_s()); ++pass) {
        if (pass > passes) throw std::logic_error("serving benchmark: the engine stopped making progress");
        events.clear();
        engine.advance(std::numeric_limits<double>::infinity(), events);
        for (const EngineEvent& ev : events) {
            RequestTimes& r = out[static_cast<size_t>(ev.id)];
            (ev.done ? r.done_s : r.first_token_s) = ev.t_s;
            // A request's last token: its client sends the next (closed loop).
            if (ev.done && load.clients > 0 && sent < total) send(ev.t_s);
        }
    }
    return out;
}

std::vector<RequestTimes> simulate_disaggregated(const EngineModel& prefill, int64_t prefill_engines, const EngineModel& decode,
                                                 int64_t decode_engines, double transfer_s, const Load& load, bool coalesce) {
    const int64_t total = load.clients > 0 ? load.requests : std::min<int64_t>(load.requests, static_cast<int64_t>(load.arrivals_s.size()));
    std::vector<RequestTimes> out(static_cast<size_t>(std::max<int64_t>(total, 0)));
    if (total <= 0) return out;
    const auto np = static_cast<size_t>(std::max<int64_t>(1, prefill_engines));
    const auto nd = static_cast<size_t>(std::max<int64_t>(1, decode_engines));
    std::vector<EngineSim> engines(np, EngineSim(prefill));  // prefill engines, then decode engines
    engines.insert(engines.end(), nd, EngineSim(decode));
    // The shortest step of each pool (a prompt token's; one decoding request's), where its
    // engines count their steps to their next request done.
    const double prefill_floor = prefill.step_s(0, 1), decode_floor = decode.step_s(1, 0);
    for (size_t k = 0; k < engines.size(); ++k) engines[k].set_step_floor(k < np ? prefill_floor : decode_floor);
    // Each pool's engines by when they next act and by when they can next be done with a request
    // (then by index), kept current as they change.
    using Order = std::set<std::pair<double, size_t>>;
    std::array<Order, 2> acts, dones;
    std::vector<double> act_at(engines.size()), done_at(engines.size());
    auto pool_of = [np](size_t k) { return k < np ? size_t{0} : size_t{1}; };
    for (size_t k = 0; k < engines.size(); ++k) {
        acts[pool_of(k)].insert({act_at[k] = engines[k].next_s(), k});
        dones[pool_of(k)].insert({done_at[k] = engines[k].next_done_s(), k});
    }
    auto refresh = [&](size_t k) {
        Order &a = acts[pool_of(k)], &d = dones[pool_of(k)];
        a.erase({act_at[k], k});
        a.insert({act_at[k] = engines[k].next_s(), k});
        d.erase({done_at[k], k});
        d.insert({done_at[k] = engines[k].next_done_s(), k});
    };
    auto deliver = [&](size_t k, int64_t id, double at) {
        engines[k].arrive(id, at);
        refresh(k);
    };
    int64_t sent = 0, transferred = 0;
    auto send = [&](double at) {
        out[static_cast<size_t>(sent)].sent_s = at;
        deliver(static_cast<size_t>(sent) % np, sent, at + prefill.host_s);
        ++sent;
    };
    if (load.clients > 0)
        for (int64_t k = 0; k < std::min(load.clients, total); ++k) send(0.0);
    else
        for (int64_t k = 0; k < total; ++k) send(load.arrivals_s[static_cast<size_t>(k)]);
    // A request done on an engine is passed on (its cache to a decode engine, or its client's next
    // request to a prefill engine, each dealt in turn) in time order, once no engine can still
    // finish one earlier: ties by engine, then by the order that engine finished them.
    struct Done {
        double t_s = 0;
        size_t engine = 0;
        int64_t seq = 0, id = 0;
    };
    auto later = [](const Done& a, const Done& b) { return std::tie(a.t_s, a.engine, a.seq) > std::tie(b.t_s, b.engine, b.seq); };
    std::priority_queue<Done, std::vector<Done>, decltype(later)> done(later);
    std::vector<int64_t> finished(engines.size(), 0);
    auto pass_on = [&](const Done& d) {
        if (d.engine < np) {  // a prompt done: its cache moves to a decode engine
            deliver(np + static_cast<size_t>(transferred++) % nd, d.id, d.t_s + transfer_s);
            return;
        }
        out[static_cast<size_t>(d.id)].done_s = d.t_s;
        if (load.clients > 0 && sent < total) send(d.t_s);
    };
    // The way into each pool (the host before a prompt, the cache's move after it), and the
    // least a pool takes to pass a request on (a prompt's step; a decode step, or none when the
    // first token is the last).
    const std::array<double, 2> into{prefill.host_s, transfer_s};
    const std::array<double, 2> through{std::max(0.0, prefill_floor), decode.output_len > 1 ? std::max(0.0, decode_floor) : 0.0};
    constexpr double kInf = std::numeric_limits<double>::infinity();
    auto earliest = [&](size_t pool) { return acts[pool].empty() ? kInf : acts[pool].begin()->first; };
    // The earliest a pool can be done with a request, engine `aside` left out.
    auto next_done = [&](size_t pool, size_t aside) {
        for (const auto& [at, k] : dones[pool])
            if (k != aside) return at;
        return kInf;
    };
    std::vector<EngineEvent> events;
    const int64_t passes = std::max(pass_limit(prefill, total, engines.size()), pass_limit(decode, total, engines.size())) + 2 * total;
    for (int64_t pass = 0;; ++pass) {
        if (pass > passes) throw std::logic_error("serving benchmark: the engines stopped making progress");
        // The engine that acts first (a prefill engine on a tie).
        const size_t own = earliest(0) <= earliest(1) ? 0 : 1;
        const double next = earliest(own);
        if (!done.empty() && done.top().t_s <= next + tie(next)) {
            pass_on(done.top());
            done.pop();
            continue;
        }
        if (!std::isfinite(next)) break;
        const size_t first = acts[own].begin()->second;
        // It runs up to when a request may next reach it: one done but not passed on, or the
        // other pool's next request done, each plus the way into its pool; one of another engine
        // of its own pool only through the other pool.
        double after = std::min(next_done(1 - own, first) + into[own],
                                next_done(own, first) + into[1 - own] + through[1 - own] + into[own]);
        if (!done.empty()) after = std::min(after, done.top().t_s + into[own]);
        events.clear();
        engines[first].advance(coalesce ? after : next, events);
        refresh(first);
        for (const EngineEvent& ev : events) {
            if (ev.done)
                done.push({ev.t_s, first, finished[first]++, ev.id});
            else if (first >= np)  // the client's first token: its decode engine admits it
                out[static_cast<size_t>(ev.id)].first_token_s = ev.t_s;
        }
    }
    return out;
}

std::vector<double> poisson_arrivals(double rate_per_s, int64_t n, uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::vector<double> out;
    out.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
    double t = 0;
    for (int64_t k = 0; k < n; ++k) {
        // u uniform in [0, 1) from the top 53 bits; the gap -ln(1 - u) / rate is exponential.
        const double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;
        t += -std::log1p(-u) / rate_per_s;
        out.push_back(t);
    }
    return out;
}

Summary summarise(std::vector<std::pair<double, double>> vw) {
    Summary s;
    double weight = 0, sum = 0;
    for (const auto& [v, w] : vw) {
        weight += w;
        sum += v * w;
    }
    if (weight <= 0) return s;
    s.mean = sum / weight;
    std::sort(vw.begin(), vw.end());
    // Order statistic at rank r (0-based, fractional) of the weighted sample, each sample a run
    // of `w` equal values: the value holding rank r, or between two runs linearly.
    auto at_rank = [&](double r) {
        double below = 0;  // ranks before the current run
        for (size_t i = 0; i < vw.size(); ++i) {
            const double last = below + vw[i].second - 1;  // the run's last rank
            if (r <= last || i + 1 == vw.size()) return vw[i].first;
            if (r < last + 1) return vw[i].first + (r - last) * (vw[i + 1].first - vw[i].first);
            below += vw[i].second;
        }
        return vw.back().first;
    };
    s.p50 = at_rank(0.50 * (weight - 1));
    s.p90 = at_rank(0.90 * (weight - 1));
    s.p99 = at_rank(0.99 * (weight - 1));
    return s;
}

std::vector<double> step_ladder(int64_t top, std::initializer_list<int64_t> extra) {
    std::vector<double> v{0.0};
    for (int64_t x = 1; x < top; x *= 2) v.push_back(as_d(x));
    v.push_back(as_d(top));
    for (const int64_t x : extra) v.push_back(as_d(std::clamp<int64_t>(x, 0, top)));
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

StepGrid::StepGrid(std::function<double(double, double)> exact, std::vector<double> decoding, std::vector<double> prompt)
    : exact_(std::move(exact)), d_(std::move(decoding)), q_(std::move(prompt)), s_(d_.size() * q_.size(), -1.0) {}

double StepGrid::operator()(double d, double q) {
    const Bracket bd = bracket(d_, d), bq = bracket(q_, q);
    // A corner of weight 0 is never costed (the other side of an exact grid point).
    auto row = [&](size_t i) { return (1 - bq.u) * at(i, bq.lo) + (bq.u > 0 ? bq.u * at(i, bq.hi) : 0.0); };
    return (1 - bd.u) * row(bd.lo) + (bd.u > 0 ? bd.u * row(bd.hi) : 0.0);
}

StepGrid::Bracket StepGrid::bracket(const std::vector<double>& g, double x) {
    x = std::clamp(x, g.front(), g.back());
    const auto hi = static_cast<size_t>(std::lower_bound(g.begin(), g.end(), x) - g.begin());
    if (g[hi] == x) return {hi, hi, 0.0};
    return {hi - 1, hi, (x - g[hi - 1]) / (g[hi] - g[hi - 1])};  // hi > 0: x > g.front()
}

double StepGrid::at(size_t i, size_t j) {
    double& s = s_[i * q_.size() + j];
    // An empty step is never run.
    if (s < 0) s = d_[i] == 0 && q_[j] == 0 ? 0.0 : exact_(d_[i], q_[j]);
    return s;
}

EngineModel engine_model(const InferContext& c, const ParallelConfig& p, int64_t slots, std::vector<double> decoding,
                         std::vector<double> prompt) {
    const InferenceSpec& s = c.inference;
    // A step's prompts finish q / I of a prompt each; the requests in flight split over the stages.
    const double mb = as_d(std::min(p.pp, slots)), in = as_d(s.input_len);
    auto grid = std::make_shared<StepGrid>(
        [&c, &p, mb, in](double d, double q) { return engine_step_cost(c, p, d, q, q / in, mb).total_s(); }, std::move(decoding),
        std::move(prompt));
    EngineModel e;
    e.slots = slots;
    e.chunk_tokens = s.prefill_chunk_tokens;
    e.input_len = s.input_len;
    e.output_len = s.output_len;
    e.tokens_per_decode_step = tokens_per_decode_step(s);
    e.step_s = [grid](double d, double q) { return (*grid)(d, q); };
    return e;
}

int64_t benchmark_requests(const InferenceSpec& s, int64_t clients) {
    if (s.num_requests > 0) return s.num_requests;
    return clients > 0 ? std::min<int64_t>(10 * clients, int64_t{1} << 20) : 1000;
}

namespace {

// The latencies and throughput of runs of requests, each run counted `weight` times.
BenchmarkResult summarise_runs(const std::vector<std::pair<std::vector<RequestTimes>, double>>& runs, int64_t output_len) {
    BenchmarkResult r;
    std::vector<std::pair<double, double>> ttft, tpot, e2e;
    double tokens = 0, start = std::numeric_limits<double>::infinity();
    for (const auto& [times, weight] : runs) {
        for (const RequestTimes& q : times) {
            ttft.emplace_back(q.first_token_s - q.sent_s, weight);
            e2e.emplace_back(q.done_s - q.sent_s, weight);
            if (output_len > 1) tpot.emplace_back((q.done_s - q.first_token_s) / as_d(output_len - 1), weight);
            r.duration_s = std::max(r.duration_s, q.done_s);
            start = std::min(start, q.sent_s);
            tokens += weight * as_d(output_len);
            r.requests += static_cast<int64_t>(weight);
        }
    }
    r.ttft_s = summarise(std::move(ttft));
    r.tpot_s = summarise(std::move(tpot));
    r.e2e_s = summarise(std::move(e2e));
    if (r.requests > 0) r.duration_s -= start;
    if (r.duration_s > 0) {
        r.output_tokens_per_s = tokens / r.duration_s;
        r.requests_per_s = as_d(r.requests) / r.duration_s;
    }
    return r;
}

}  // namespace

BenchmarkResult run_benchmark(const InferContext& c, const ParallelConfig& p, int64_t slots, PrefillSchedule schedule,
                              int64_t clients, double rate_per_s, int64_t requests, uint64_t seed) {
    const InferenceSpec& s = c.inference;
    slots = std::max<int64_t>(1, slots);
    // Steps costed at 0, 1, 2, 4, ... decoding requests up to the slots and at 0, 1, 2, 4, ...
    // prompt tokens up to the budget with the sizes a fixed-length benchmark steps through
    // exactly (one prompt, a prompt's last chunk), so a lone prompt's step is its exact cost.
    EngineModel e = engine_model(c, p, slots, step_ladder(slots, {}),
                                 step_ladder(s.prefill_chunk_tokens, {s.input_len, s.input_len % s.prefill_chunk_tokens}));
    e.host_s = c.system.eff.host_request_overhead_s;
    e.schedule = schedule;

    // Replicas alike are simulated once and counted `weight` times.
    struct Share {
        Load load;
        double weight;
    };
    std::vector<Share> shares;
    if (clients > 0) {
        const int64_t base = clients / p.dp, extra = clients % p.dp;
        for (const auto& [k, count] : {std::pair{base + 1, extra}, std::pair{base, p.dp - extra}})
            if (k > 0 && count > 0)
                shares.push_back({{k, (requests * k + clients - 1) / clients, {}}, as_d(count)});
    } else {
        const int64_t n = (requests + p.dp - 1) / p.dp;
        shares.push_back({{0, n, poisson_arrivals(rate_per_s / as_d(p.dp), n, seed)}, as_d(p.dp)});
    }
    std::vector<std::pair<std::vector<RequestTimes>, double>> runs;
    for (const Share& sh : shares) runs.emplace_back(simulate_engine(e, sh.load), sh.weight);
    BenchmarkResult r = summarise_runs(runs, s.output_len);
    r.slots = slots;
    return r;
}

std::vector<const char*> roles_without_room(const InferContext& c, const DisaggDeployment& d) {
    std::vector<const char*> out;
    if (max_concurrency_that_fits(c, d.prefill.layout, ServeRole::prefill) == 0) out.push_back("prefill");
    if (max_concurrency_that_fits(c, d.decode.layout, ServeRole::decode) == 0) out.push_back("decode");
    return out;
}

DisaggBenchmark run_disaggregated_benchmark(const InferContext& c, const DisaggDeployment& d, int64_t clients, double rate_per_s,
                                            int64_t requests, uint64_t seed) {
    const InferenceSpec& s = c.inference;
    const ParallelConfig& pp = d.prefill.layout;
    const ParallelConfig& dp = d.decode.layout;
    const int64_t prefill_slots = std::max<int64_t>(1, max_concurrency_that_fits(c, pp, ServeRole::prefill));
    const int64_t decode_slots = std::max<int64_t>(1, max_concurrency_that_fits(c, dp, ServeRole::decode));
    EngineModel prefill = engine_model(c, pp, prefill_slots, {0.0},
                                       step_ladder(s.prefill_chunk_tokens, {s.input_len, s.input_len % s.prefill_chunk_tokens}));
    prefill.output_len = 1;
    prefill.host_s = c.system.eff.host_request_overhead_s;
    prefill.schedule = PrefillSchedule::separate;  // nothing decodes beside its prompts
    EngineModel decode = engine_model(c, dp, decode_slots, step_ladder(decode_slots, {}), {0.0});
    decode.input_len = 0;
    const bool within = c.system.fits_one_domain(d.gpus());
    const double transfer = kv_transfer_s(c, pp, dp, within);
    Load load{clients, requests, {}};
    if (clients == 0) load.arrivals_s = poisson_arrivals(rate_per_s, requests, seed);
    const std::vector<std::pair<std::vector<RequestTimes>, double>> runs{
        {simulate_disaggregated(prefill, d.prefill.workers * pp.dp, decode, d.decode.workers * dp.dp, transfer, load), 1.0}};
    DisaggBenchmark r{summarise_runs(runs, s.output_len), prefill_slots, transfer, within};
    r.result.slots = decode_slots;
    return r;
}

}  // namespace sm
