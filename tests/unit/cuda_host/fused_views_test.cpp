#include "engine/runner/fused_views.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

TEST(FusedViews, ResolvesRegisteredNamesAndPassesOthersThrough) {
  float q[4]{}, k[4]{}, fused[12]{};
  FusedViews v;
  EXPECT_EQ(v.resolve(q, 4).data, q);
  EXPECT_EQ(v.resolve(q, 4).row_stride, 4);
  v.set(q, {fused, 6});
  v.set(k, {fused + 4, 6});
  EXPECT_EQ(v.resolve(q, 4).data, fused);
  EXPECT_EQ(v.resolve(k, 2).data, fused + 4);
  EXPECT_EQ(v.resolve(k, 2).row_stride, 6);
  v.set(q, {fused + 1, 7});  // re-registering replaces
  EXPECT_EQ(v.resolve(q, 4).data, fused + 1);
  EXPECT_EQ(v.size(), 2u);
  v.erase(q);
  EXPECT_EQ(v.resolve(q, 4).data, q);
  EXPECT_EQ(v.resolve(k, 2).data, fused + 4);
}

}  // namespace
}  // namespace llmserve
