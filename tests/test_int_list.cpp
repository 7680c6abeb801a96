// Command-line integer sequences (--gpus, --sweep-batch).
#include <gtest/gtest.h>

#include "io/int_list.hpp"

namespace sm {
namespace {

const IntListRules kRules{"--opt", "1:256:x2", 1 << 20, 16};

std::vector<int64_t> ok(const char* text) {
    auto r = parse_int_list(text, kRules);
    EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message());
    return r.ok() ? r.value() : std::vector<int64_t>{};
}

TEST(IntList, ValuesListsAndRanges) {
    EXPECT_EQ(ok("4096"), (std::vector<int64_t>{4096}));
    EXPECT_EQ(ok("8,2,16"), (std::vector<int64_t>{8, 2, 16}));
    EXPECT_EQ(ok("1:256:x2"), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256}));
    EXPECT_EQ(ok("1:256"), ok("1:256:x2"));  // doubling is the default step
    EXPECT_EQ(ok("3:100:x4"), (std::vector<int64_t>{3, 12, 48}));  // stops before passing LAST
    EXPECT_EQ(ok("8:30:+8"), (std::vector<int64_t>{8, 16, 24}));
    EXPECT_EQ(ok("5:5"), (std::vector<int64_t>{5}));
}

TEST(IntList, BadInputNamesTheOption) {
    for (const char* bad : {"", "0", "-4", "many", "8,,16", "4:2", "1:8:x1", "1:8:+0", "1:8:*2", "1:8:x2:1",
                            "1:2097152", "1:65536:+1", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "12\r3"}) {
        auto r = parse_int_list(bad, kRules);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().path, "--opt");
        EXPECT_EQ(r.error().message().find('\r'), std::string::npos) << bad;
    }
}

}  // namespace
}  // namespace sm
