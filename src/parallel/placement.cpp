#include "parallel/placement.hpp"

namespace sm {

CommSpans place_groups(const ParallelConfig& p, const SystemSpec& s) {
    CommSpans c;
    const int64_t d = s.scale_up_domain;
    c.span[idx(CommGroup::tp)] = place_group(1, p.tp, d);
    c.span[idx(CommGroup::cp)] = place_group(p.tp, p.cp, d);
    c.span[idx(CommGroup::ep)] = place_group(p.tp * p.cp, p.ep, d);
    c.span[idx(CommGroup::dp)] = place_group(p.tp, p.dp * p.cp, d);  // gradients reduce over dp x cp
    c.span[idx(CommGroup::pp)] = place_group(p.tp * p.cp * p.dp, p.pp, d);
    return c;
}

}  // namespace sm
