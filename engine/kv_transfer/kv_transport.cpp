#include "engine/kv_transfer/kv_transport.h"

namespace llmserve {

const char* kv_pull_error_name(KvPullError e) {
  switch (e) {
    case KvPullError::kNone:
      return "none";
    case KvPullError::kConnect:
      return "connect";
    case KvPullError::kLayout:
      return "layout";
    case KvPullError::kTransfer:
      return "transfer";
    case KvPullError::kTimeout:
      return "timeout";
    case KvPullError::kLease:
      return "lease";
    case KvPullError::kAuth:
      return "auth";
    case KvPullError::kCancelled:
      break;
  }
  return "cancelled";
}

}  // namespace llmserve
