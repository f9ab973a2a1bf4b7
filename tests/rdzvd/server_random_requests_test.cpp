// A hostile or broken client over real gRPC: thousands of unary requests of every method, built
// field by field through protobuf reflection from edge values (empty, oversized and foreign ids,
// the valid ticket or a forged one, integers at their types' limits, long repeated fields), plus
// damaged serialisations and bytes that are not protobuf at all, many in flight at once with
// short deadlines (so blocked calls are cancelled mid-wait); and Session streams carrying random
// opens, heartbeats, calls and cancels, from several threads. Every call and stream must end
// with a status; afterwards the daemon still serves its store. Under ASan+UBSan (CI) this also
// holds the wire layer, the session reactor and the core to memory safety on such input.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "input_mutator.hpp"
#include "server_fixture.hpp"

using llmrdzv::server::testing::InProcessServer;
namespace pb = google::protobuf;

namespace {

class RandomRequests {
 public:
  RandomRequests(const InProcessServer& server, std::uint64_t seed) : server_(server), rng_(seed), mutator_(seed) {}

  struct Request {
    std::string bytes;
    bool decodes = true;  // a message of the method's type, as protobuf reads it
  };

  // A request for `method`: a random message, sometimes damaged, sometimes not protobuf at all.
  Request request(const pb::MethodDescriptor& method) {
    const pb::Message* prototype = pb::MessageFactory::generated_factory()->GetPrototype(method.input_type());
    std::unique_ptr<pb::Message> message(prototype->New());
    fill(*message, 0);
    Request request{message->SerializeAsString()};
    switch (pick(10)) {
      case 0: request.bytes = mutator_.mutate(request.bytes); break;
      case 1: request.bytes = std::string(pick(64), static_cast<char>(pick(256))); break;
      default: return request;
    }
    request.decodes = message->ParseFromString(request.bytes);
    return request;
  }

  // One Session stream's message: mostly an open first (often a valid join-and-open of the
  // rendezvous' two members, so rounds form and sessions open), then heartbeats, calls and cancels.
  llmrdzv::v1::SessionRequest session_request(bool first, const std::string& participant) {
    llmrdzv::v1::SessionRequest request;
    if (first && pick(2) == 0) {
      *request.mutable_open()->mutable_join() = server_.join_request(participant, 2);
      return request;
    }
    switch (first && pick(4) != 0 ? 0 : pick(4)) {
      case 0: fill(*request.mutable_open(), 1); break;
      case 1: fill(*request.mutable_heartbeat(), 1); break;
      case 2: fill(*request.mutable_call(), 1); break;
      default: request.set_cancel(pick(4)); break;
    }
    return request;
  }

 private:
  std::uint64_t pick(std::uint64_t n) { return n == 0 ? 0 : std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_); }

  std::string text() {
    switch (pick(8)) {
      case 0: return "";
      case 1: return std::string(pick(2) ? 129 : 70000, 'k');
      case 2: return server_.config().auth.step_rdzv_id;
      case 3: return "p" + std::to_string(pick(4));
      case 4: return std::string("\xff\xfe\x00x", 4);
      case 5: return "rank/" + std::to_string(pick(3));
      default: return std::to_string(pick(100));
    }
  }

  void fill(pb::Message& message, int depth) {
    const pb::Descriptor* type = message.GetDescriptor();
    const pb::Reflection* reflection = message.GetReflection();
    if (type->name() == "Scope" && pick(10) < 8) {  // mostly a valid scope, so requests reach the core
      llmrdzv::v1::Scope scope;
      server_.scope(&scope);
      if (pick(10) == 0) scope.set_ticket("t2.forged");
      message.CopyFrom(scope);
      return;
    }
    for (int i = 0; i < type->field_count(); ++i) {
      const pb::FieldDescriptor* field = type->field(i);
      if (pick(5) == 0) continue;  // left at its default
      const int count = field->is_repeated() ? static_cast<int>(pick(4) == 0 ? 300 + pick(1000) : pick(5)) : 1;
      for (int n = 0; n < count; ++n) set_one(message, reflection, field, depth);
    }
  }

  void set_one(pb::Message& message, const pb::Reflection* reflection, const pb::FieldDescriptor* field, int depth) {
    static const std::vector<std::int64_t> kSigned = {0, 1, -1, 2, 3, 7, 1000, 30000, 2147483647, -2147483648LL,
                                                      9223372036854775807LL, -9223372036854775807LL - 1};
    const std::int64_t value = kSigned[pick(kSigned.size())];
    const bool repeated = field->is_repeated();
    switch (field->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_INT32:
        repeated ? reflection->AddInt32(&message, field, static_cast<std::int32_t>(value))
                 : reflection->SetInt32(&message, field, static_cast<std::int32_t>(value));
        break;
      case pb::FieldDescriptor::CPPTYPE_INT64:
        repeated ? reflection->AddInt64(&message, field, value) : reflection->SetInt64(&message, field, value);
        break;
      case pb::FieldDescriptor::CPPTYPE_UINT32:
        repeated ? reflection->AddUInt32(&message, field, static_cast<std::uint32_t>(value))
                 : reflection->SetUInt32(&message, field, static_cast<std::uint32_t>(value));
        break;
      case pb::FieldDescriptor::CPPTYPE_UINT64:
        repeated ? reflection->AddUInt64(&message, field, static_cast<std::uint64_t>(value))
                 : reflection->SetUInt64(&message, field, static_cast<std::uint64_t>(value));
        break;
      case pb::FieldDescriptor::CPPTYPE_BOOL:
        repeated ? reflection->AddBool(&message, field, pick(2) == 0) : reflection->SetBool(&message, field, pick(2) == 0);
        break;
      case pb::FieldDescriptor::CPPTYPE_ENUM: {
        const pb::EnumDescriptor* type = field->enum_type();
        const int number = pick(4) == 0 ? static_cast<int>(value) : type->value(static_cast<int>(pick(type->value_count())))->number();
        repeated ? reflection->AddEnumValue(&message, field, number) : reflection->SetEnumValue(&message, field, number);
        break;
      }
      case pb::FieldDescriptor::CPPTYPE_STRING: {
        std::string s = text();
        // proto3 strings must be UTF-8: the sender's library refuses others, bytes fields take any.
        if (field->type() == pb::FieldDescriptor::TYPE_STRING && !s.empty() && static_cast<unsigned char>(s[0]) == 0xff) s = "x";
        repeated ? reflection->AddString(&message, field, std::move(s)) : reflection->SetString(&message, field, std::move(s));
        break;
      }
      case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      case pb::FieldDescriptor::CPPTYPE_FLOAT:
        break;  // the protocol has none
      case pb::FieldDescriptor::CPPTYPE_MESSAGE:
        if (depth < 3) fill(repeated ? *reflection->AddMessage(&message, field) : *reflection->MutableMessage(&message, field), depth + 1);
        break;
    }
  }

  const InProcessServer& server_;
  std::mt19937_64 rng_;
  llmrdzv::testing::InputMutator mutator_;
};

// The daemon still answers a Status, and its store a Set and a Get (random Joins may have fixed
// the rendezvous' range or left members waiting, so no new round is asked for).
void expect_serving(InProcessServer& server) {
  llmrdzv::v1::StatusRequest status_request;
  llmrdzv::v1::StatusResponse status_response;
  grpc::ClientContext status_context;
  CHECK(server.stub().Status(&status_context, status_request, &status_response).ok());
  llmrdzv::v1::SetRequest set;
  server.scope(set.mutable_scope());
  set.set_key("after-fuzz");
  set.set_value("still here");
  llmrdzv::v1::SetResponse set_response;
  grpc::ClientContext set_context;
  const grpc::Status set_status = server.stub().Set(&set_context, set, &set_response);
  INFO(set_status.error_message());
  CHECK(set_status.ok());
  llmrdzv::v1::GetRequest get;
  server.scope(get.mutable_scope());
  get.set_key("after-fuzz");
  get.set_timeout_ms(1000);
  llmrdzv::v1::GetResponse get_response;
  grpc::ClientContext get_context;
  CHECK(server.stub().Get(&get_context, get, &get_response).ok());
  CHECK(get_response.value() == "still here");
}

// The rendezvous exists from a first Join on (which waits for a second member in vain).
void create_rendezvous(InProcessServer& server) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  llmrdzv::v1::JoinResponse response;
  CHECK(server.stub().Join(&context, server.join_request("first", 2), &response).error_code() ==
        grpc::StatusCode::DEADLINE_EXCEEDED);
}

}  // namespace

TEST_CASE("random and damaged requests of every method come back with a status and leave the daemon serving", "[server][random]") {
  InProcessServer server;
  const pb::ServiceDescriptor* service = pb::DescriptorPool::generated_pool()->FindServiceByName(llmrdzv::v1::Rendezvous::service_full_name());
  REQUIRE(service != nullptr);
  std::vector<const pb::MethodDescriptor*> methods;
  for (int i = 0; i < service->method_count(); ++i)
    if (!service->method(i)->client_streaming() && !service->method(i)->server_streaming()) methods.push_back(service->method(i));
  REQUIRE(methods.size() > 15);

  create_rendezvous(server);
  auto channel = grpc::CreateChannel(server.endpoint(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue queue;
  RandomRequests requests(server, 11);
  std::map<grpc::StatusCode, int> codes;  // of the requests that decode (the rest under DATA_LOSS)
  int undecodable = 0;
  const pb::LogSilencer quiet;  // protobuf logs each string field that is not UTF-8
  std::mt19937_64 rng(5);
  constexpr int kBatches = 60;
  constexpr int kInFlight = 40;
  for (int batch = 0; batch < kBatches; ++batch) {
    struct Call {
      grpc::ClientContext context;
      grpc::ByteBuffer response;
      grpc::Status status;
      std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader;
      bool decodes = true;
    };
    std::vector<std::unique_ptr<Call>> calls;
    for (int i = 0; i < kInFlight; ++i) {
      const pb::MethodDescriptor* method = methods[rng() % methods.size()];
      auto call = std::make_unique<Call>();
      call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(5 + rng() % 150));
      auto request = requests.request(*method);
      call->decodes = request.decodes;
      undecodable += request.decodes ? 0 : 1;
      grpc::Slice slice(request.bytes);
      grpc::ByteBuffer buffer(&slice, 1);
      const std::string path = "/" + std::string(service->full_name()) + "/" + std::string(method->name());
      call->reader = stub.PrepareUnaryCall(&call->context, path, buffer, &queue);
      call->reader->StartCall();
      call->reader->Finish(&call->response, &call->status, call.get());
      calls.push_back(std::move(call));
    }
    for (int i = 0; i < kInFlight; ++i) {
      void* tag = nullptr;
      bool ok = false;
      // Each call ends by its deadline at the latest; 30 s means the daemon stopped answering.
      const auto next = queue.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(30));
      REQUIRE(next == grpc::CompletionQueue::GOT_EVENT);
      const Call& call = *static_cast<Call*>(tag);
      // gRPC's callback API answers a request it cannot decode itself, before any handler:
      // UNIMPLEMENTED with no message. Every request that decodes reaches the service.
      ++codes[call.decodes ? call.status.error_code() : grpc::StatusCode::DATA_LOSS];
    }
  }
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
  for (const auto& [code, count] : codes) UNSCOPED_INFO("status " << code << ": " << count << " calls");
  CHECK(codes[grpc::StatusCode::DATA_LOSS] == undecodable);
  CHECK(undecodable > 0);  // The input reached the daemon's checks, and some of it the store.
  CHECK(codes[grpc::StatusCode::INVALID_ARGUMENT] > 0);
  CHECK(codes[grpc::StatusCode::OK] > 0);
  CHECK(codes[grpc::StatusCode::PERMISSION_DENIED] > 0);
  CHECK(codes[grpc::StatusCode::UNIMPLEMENTED] == 0);
  CHECK(codes[grpc::StatusCode::INTERNAL] == 0);
  CHECK(codes[grpc::StatusCode::UNKNOWN] == 0);

  expect_serving(server);
}

TEST_CASE("Session streams of random opens, heartbeats, calls and cancels end with a status and leave the daemon serving", "[server][random]") {
  InProcessServer server;
  create_rendezvous(server);
  const pb::LogSilencer quiet;
  std::mutex mutex;
  std::map<grpc::StatusCode, int> codes;
  int events = 0;
  std::vector<std::thread> clients;
  for (int t = 0; t < 6; ++t) {
    clients.emplace_back([&, t] {
      RandomRequests requests(server, 100 + t);
      auto stub = server.new_stub();
      for (int s = 0; s < 25; ++s) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(50 + 50 * (s % 6)));
        auto stream = stub->Session(&context);
        const int messages = 1 + s % 6;
        const std::string participant = "s" + std::to_string(t) + "-" + std::to_string(s);
        for (int m = 0; m < messages; ++m)
          if (!stream->Write(requests.session_request(m == 0, participant))) break;
        stream->WritesDone();
        llmrdzv::v1::SessionEvent event;
        int read = 0;
        while (stream->Read(&event)) ++read;
        const grpc::Status status = stream->Finish();
        std::lock_guard lock(mutex);
        ++codes[status.error_code()];
        events += read;
      }
    });
  }
  for (auto& client : clients) client.join();
  for (const auto& [code, count] : codes) UNSCOPED_INFO("status " << code << ": " << count << " streams");
  CHECK(codes[grpc::StatusCode::INTERNAL] == 0);
  CHECK(codes[grpc::StatusCode::UNKNOWN] == 0);
  CHECK(codes[grpc::StatusCode::UNIMPLEMENTED] == 0);
  CHECK(codes[grpc::StatusCode::INVALID_ARGUMENT] > 0);
  CHECK(events > 0);  // some streams opened and got events
  expect_serving(server);
}
