# shellcheck shell=bash
# write_agentic_gigpo_config ROOT DIR: DIR/agentic_gigpo.yaml, the CPU FrozenLake config played by
# StepEnvManager (one sample per turn, a short history in each prompt) with adv_estimator gigpo,
# for the agentic e2e tests.
write_agentic_gigpo_config() {
  mkdir -p "$2"
  cat > "$2/agentic_gigpo.yaml" <<YAML
defaults:
  - $1/examples/cpu/agentic_frozen_lake@_here_
adv_estimator: gigpo
env_manager_cls: roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager
custom_env:
  FrozenLake:
    history_length: 2
agent_template: |
  ## Env Instruction:
  {env_instruction}
  ## State: you have completed {step_count} steps. Recent history ({history_length}): [{history}]
  You are at step {current_step}. Current observation: [{current_observation}]
  Answer as <answer>Left</answer>, Down, Right or Up; at most {max_response_length} tokens:
YAML
}
