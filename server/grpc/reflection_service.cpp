#include "server/grpc/reflection_service.h"

#include <string_view>
#include <unordered_set>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include "server/grpc/grpc_status.h"

namespace llmserve {

namespace {

namespace rpb = grpc::reflection::v1alpha;
namespace gp = google::protobuf;

using Reactor =
    grpc::ServerBidiReactor<rpb::ServerReflectionRequest, rpb::ServerReflectionResponse>;

// One request, one response, in turn, until the client half-closes.
class ReflectionReactor : public Reactor {
 public:
  explicit ReflectionReactor(const ReflectionService& svc) : svc_(svc) { StartRead(&req_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    resp_.Clear();
    svc_.answer(req_, &resp_);
    StartWrite(&resp_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    StartRead(&req_);
  }
  void OnDone() override { delete this; }

 private:
  const ReflectionService& svc_;
  rpb::ServerReflectionRequest req_;
  rpb::ServerReflectionResponse resp_;
};

class Refused : public Reactor {
 public:
  explicit Refused(const grpc::Status& s) { Finish(s); }
  void OnDone() override { delete this; }
};

void set_error(rpb::ServerReflectionResponse* resp, grpc::StatusCode code, std::string message) {
  rpb::ErrorResponse* e = resp->mutable_error_response();
  e->set_error_code(static_cast<int32_t>(code));
  e->set_error_message(std::move(message));
}

// The file and every file it depends on, each once.
void add_file_and_deps(const gp::FileDescriptor* file, std::unordered_set<std::string>& seen,
                       rpb::FileDescriptorResponse* out) {
  if (file == nullptr || !seen.insert(file->name()).second) return;
  gp::FileDescriptorProto proto;
  file->CopyTo(&proto);
  out->add_file_descriptor_proto(proto.SerializeAsString());
  for (int i = 0; i < file->dependency_count(); ++i)
    add_file_and_deps(file->dependency(i), seen, out);
}

}  // namespace

ReflectionService::ReflectionService(std::vector<std::string> api_keys,
                                     std::vector<std::string> services)
    : keys_(std::move(api_keys)), services_(std::move(services)) {}

Reactor* ReflectionService::ServerReflectionInfo(grpc::CallbackServerContext* ctx) {
  if (keys_.enabled()) {
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    if (it == md.end() ||
        !keys_.authorize(std::string_view(it->second.data(), it->second.size()))) {
      return new Refused(unauthenticated_status());
    }
  }
  return new ReflectionReactor(*this);
}

void ReflectionService::answer(const rpb::ServerReflectionRequest& req,
                               rpb::ServerReflectionResponse* resp) const {
  const gp::DescriptorPool* pool = gp::DescriptorPool::generated_pool();
  resp->set_valid_host(req.host());
  *resp->mutable_original_request() = req;
  std::unordered_set<std::string> seen;
  switch (req.message_request_case()) {
    case rpb::ServerReflectionRequest::kListServices:
      for (const std::string& name : services_) {
        resp->mutable_list_services_response()->add_service()->set_name(name);
      }
      return;
    case rpb::ServerReflectionRequest::kFileByFilename: {
      const gp::FileDescriptor* f = pool->FindFileByName(req.file_by_filename());
      if (f == nullptr) return set_error(resp, grpc::StatusCode::NOT_FOUND, "File not found.");
      return add_file_and_deps(f, seen, resp->mutable_file_descriptor_response());
    }
    case rpb::ServerReflectionRequest::kFileContainingSymbol: {
      const gp::FileDescriptor* f = pool->FindFileContainingSymbol(req.file_containing_symbol());
      if (f == nullptr) return set_error(resp, grpc::StatusCode::NOT_FOUND, "Symbol not found.");
      return add_file_and_deps(f, seen, resp->mutable_file_descriptor_response());
    }
    case rpb::ServerReflectionRequest::kFileContainingExtension: {
      const auto& ext = req.file_containing_extension();
      const gp::Descriptor* type = pool->FindMessageTypeByName(ext.containing_type());
      const gp::FieldDescriptor* field =
          type == nullptr ? nullptr : pool->FindExtensionByNumber(type, ext.extension_number());
      if (field == nullptr) {
        return set_error(resp, grpc::StatusCode::NOT_FOUND, "Extension not found.");
      }
      return add_file_and_deps(field->file(), seen, resp->mutable_file_descriptor_response());
    }
    case rpb::ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const gp::Descriptor* type = pool->FindMessageTypeByName(req.all_extension_numbers_of_type());
      if (type == nullptr) return set_error(resp, grpc::StatusCode::NOT_FOUND, "Type not found.");
      std::vector<const gp::FieldDescriptor*> exts;
      pool->FindAllExtensions(type, &exts);
      rpb::ExtensionNumberResponse* out = resp->mutable_all_extension_numbers_response();
      out->set_base_type_name(type->full_name());
      for (const gp::FieldDescriptor* f : exts) out->add_extension_number(f->number());
      return;
    }
    default:
      return set_error(resp, grpc::StatusCode::UNIMPLEMENTED,
                       "The provided request is not supported.");
  }
}

}  // namespace llmserve
