#pragma once
// The RPC methods the roles and the driver-hosted services serve, declared once so that a caller
// and the role it calls cannot drift apart (a misspelt name only fails at run time, as "unknown
// method"). Pipelines, the router and the env workers call them; the roles' bind() registers
// them. Each line says what goes in -> what comes out: {json fields}, Batch[tensors], or nothing.
// runtime/ serves two built-ins of its own (__ping, __shutdown: runtime/rpc_message.h).
//
// RpcServer::on and Cluster/RpcClient::call take std::string: these convert implicitly.
namespace roll::workers::rpc {

// ---- trainers: actor_train, critic, sft_train (DP_MP_COMPUTE unless noted)
// Batch (the step's rows, meta global_step) -> Batch with no rows, meta "metrics" (metrics_json.h).
inline constexpr char kTrainStep[] = "train_step";
// ONE_TO_ALL. {output_dir, step} -> {dir}: writes <output_dir>/<cluster>/checkpoint-<step>.
inline constexpr char kDoCheckpoint[] = "do_checkpoint";
// ONE_TO_ALL. {output_dir, step} -> nothing: restores <output_dir>/<cluster>/checkpoint-<step>.
inline constexpr char kLoadCheckpoint[] = "load_checkpoint";

// ---- actor_train and reference
// Batch[input_ids, attention_mask, position_ids, response_mask] -> Batch[log_probs], meta "metrics".
inline constexpr char kComputeLogProbs[] = "compute_log_probs";

// ---- critic
// Batch[input_ids, attention_mask, position_ids, response_mask] -> Batch[values], meta "metrics".
inline constexpr char kComputeValues[] = "compute_values";

// ---- sft_train
// Batch (validation rows) -> Batch with no rows, meta "metrics" (the loss, no optimizer step).
inline constexpr char kValStep[] = "val_step";

// ---- teacher (distillation)
// Batch[input_ids, attention_mask, position_ids, labels] -> Batch[teacher_log_probs [B, T, K] (fp32),
// teacher_indices [B, T, K] (int64; absent when logits_topk is 0, K = vocab), teacher_inf_mask
// [B, T, K] (uint8)]: the teacher's top-k at every position whose label is trained, zeros elsewhere.
inline constexpr char kTeacherForward[] = "teacher_forward";

// ---- weight sync: actor_train sends, actor_infer receives (weight_sync.h)
// Both sides. {group, rank, world_size} -> nothing: joins the model-update process group
// (actor_train: only rank 0 joins, as rank 0).
inline constexpr char kSetupModelUpdate[] = "setup_model_update";
// actor_train, ONE_TO_ALL (every rank gathers, rank 0 sends). {bucket_bytes, version, group?, shm_file?}
// -> rank 0: {seconds, bytes?, buckets? (group), file? (shm_file, rewritten in place: shared_weights.h)}.
inline constexpr char kBroadcastWeights[] = "broadcast_weights";
// actor_infer. {group, bucket_bytes, version} -> {tensors, bytes, buckets, receive_s}: received straight
// into the engine's weights.
inline constexpr char kReceiveWeights[] = "receive_weights";
// actor_infer. {file, version, share?} (the shared weights file broadcast_weights wrote) -> {bytes,
// apply_s}. share: the engine computes from the mapping itself instead of copying it out.
inline constexpr char kLoadSharedWeights[] = "load_shared_weights";
// actor_infer. nothing -> weights_digest() of the engine's weights (weight_sync.h).
inline constexpr char kWeightsDigest[] = "weights_digest";
// actor_infer. {dir} (a safetensors model directory) -> nothing.
inline constexpr char kLoadWeights[] = "load_weights";

// ---- generation: actor_infer, and the driver's router service (router_service.h) in front of it
// Inline. {rid, affinity_key? (router only), input_ids, sampling_params} -> the output
// (generate_protocol.h), answered when the request ends.
inline constexpr char kGenerateRequest[] = "generate_request";
// Inline. {rid} -> nothing: the request ends with finish reason "abort".
inline constexpr char kAbort[] = "abort";
// nothing -> nothing: aborts every request in flight (inline on the router, serial on actor_infer).
inline constexpr char kAbortAll[] = "abort_all";
// Inline. nothing -> nothing: new requests wait until resume.
inline constexpr char kSuspend[] = "suspend";
inline constexpr char kResume[] = "resume";
// nothing -> the server's counters as JSON (actor_infer: requests_done, tokens_generated, ...;
// router: load, requests, held, in_flight, suspended; env_manager: envs, running, rollouts, ...).
// Inline on the router and env_manager, serial on actor_infer.
inline constexpr char kStats[] = "stats";
// actor_infer. nothing -> nothing: frees the KV cache / takes it back.
inline constexpr char kSleep[] = "sleep";
inline constexpr char kWake[] = "wake";
// Router. nothing -> nothing, once no request is in flight.
inline constexpr char kWaitComplete[] = "wait_complete";

// ---- reward-<domain>
// Batch (non-tensor response_text, prompt_text, ground_truth / test_cases, ...) -> Batch[scores],
// column reward_info, meta "metrics".
inline constexpr char kComputeRewards[] = "compute_rewards";

// ---- env_manager (train_env, val_env)
// {router_endpoint, queue_endpoint, seed, mode?} -> {envs, env_ids}: starts the env threads.
inline constexpr char kStartRollout[] = "start_rollout";
// nothing -> {stopped, rollouts}: stops and joins the env threads.
inline constexpr char kStopRollout[] = "stop_rollout";

// ---- the driver's GroupQueueManager service (group_queue_service.h)
// Inline. {group_id, env_id} -> {episode_id, start_step, slot}, or {episode_id: null} at the end.
inline constexpr char kGetEpisode[] = "get_episode";
// {group_id, episode_id, env_id, start_step, slot} + the rollout's Batch -> nothing.
inline constexpr char kPutRollout[] = "put";
// {group_id, env_id} -> nothing: the env plays no more episodes.
inline constexpr char kEnvExit[] = "env_exit";

}  // namespace roll::workers::rpc
