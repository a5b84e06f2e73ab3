#include "roll/workers/remote_llm_client.h"

#include "roll/core/error.h"
#include "roll/runtime/rpc_client.h"
#include "roll/workers/generate_protocol.h"
#include "roll/workers/rpc_methods.h"

namespace roll::workers {

RemoteLlmClient::RemoteLlmClient(const std::string& router_endpoint)
    : client_(std::make_unique<runtime::RpcClient>(router_endpoint, "router service at " + router_endpoint)) {}

RemoteLlmClient::~RemoteLlmClient() = default;

std::future<agentic::GenerateResult> RemoteLlmClient::generate(agentic::GenerateRequest request) {
  RoutedRequest r;
  r.request.request_id = request.rid;
  r.request.prompt_token_ids = std::move(request.input_ids);
  r.request.params = std::move(request.params);
  r.request.params.n = 1;
  r.affinity_key = std::to_string(request.src_rank);
  nlohmann::json args = routed_request_to_json(r);
  auto promise = std::make_shared<std::promise<agentic::GenerateResult>>();
  auto answer = promise->get_future();
  client_->call_async(rpc::kGenerateRequest, runtime::Payload(std::move(args)),
                      [promise, rid = request.rid](runtime::Payload* result, const std::string& error) {
                        try {
                          if (!result) throw Error(error);
                          RequestOutput out = output_from_json(result->args);
                          if (out.samples.size() != 1)
                            throw Error("generate_request " + rid + ": " + std::to_string(out.samples.size()) +
                                        " samples in the answer, expected 1");
                          agentic::GenerateResult g;
                          g.output_token_ids = std::move(out.samples[0].token_ids);
                          g.output_logprobs = std::move(out.samples[0].logprobs);
                          g.finish_reason = roll::to_string(out.samples[0].finish_reason);
                          promise->set_value(std::move(g));
                        } catch (const std::exception&) {
                          promise->set_exception(std::current_exception());
                        }
                      });
  return answer;
}

void RemoteLlmClient::abort(const std::string& rid) {
  client_->call_async(rpc::kAbort, runtime::Payload(abort_to_json(rid)),
                      [](runtime::Payload*, const std::string&) {});
}

void RemoteLlmClient::disconnect(const std::string& reason) { client_->fail_all(reason); }

}  // namespace roll::workers
