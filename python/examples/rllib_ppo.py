#!/usr/bin/env python
"""PPO through RLlib (Ray 2.7.1, the reference's stack) on MBAG, with mbag_rs's env or
the reference's, on a local Ray cluster of two node processes.

    scripts/ray-example [--iterations 3] [--json F]    (sets up .deps/ray first)

What it does, in one run:

1. starts a local Ray cluster: a head node and one worker node, each its own raylet
   process with one CPU (``ray.cluster_utils.Cluster``), and connects to it;
2. trains a small PPO builder (one player, 11x10x10 world, infinite blocks, the
   reference's ``random`` goals, an MLP with action masking) for a few iterations
   with mbag_rs's vectorised env, showing the episode reward of each iteration;
3. measures RLlib's sampling throughput (env-steps/s of ``RolloutWorker.sample`` on
   the remote worker, the policy's forward pass included) with three envs behind the
   same RLlib env interface, each observation carrying its line-of-sight action mask
   as in the paper's PPO and AssistanceZero set-ups:
   - ``reference``: the reference's ``MbagEnv`` and its C masks, one env per call;
   - ``mbag_rs``: ``mbag_rs.MbagEnv`` (the drop-in) and its masks;
   - ``mbag_rs_vec``: ``mbag_rs.MbagVecEnv``, all of a worker's envs in one call.

The ratio mbag_rs_vec / reference is the speed-up RLlib users get from the package.
"""

import argparse
import json
import os
import random
import sys
import time
from typing import Any, Dict, List, Tuple

import gymnasium
import numpy as np

WORLD = (11, 10, 10)
# The policy's hidden width. Its last layer has one output per flat action (23,111
# here), so the policy's cost per step grows with it; small keeps the env's share of
# sampling visible.
HIDDEN = 16
# Short episodes, so that each PPO iteration ends some and reports their reward.
HORIZON = 60


def env_config(impl: str) -> Dict[str, Any]:
    """The MBAG config of every env of this example."""
    config = {
        "world_size": WORLD,
        "num_players": 1,
        "players": [{}],
        "horizon": HORIZON,
        "random_start_locations": True,
        "goal_generator": "random",
        "goal_generator_config": {},
        "abilities": {"teleportation": False, "flying": True, "inf_blocks": True},
        "rewards": {"place_wrong": -1},
    }
    if impl == "reference":
        # The reference's own transformed generator, as its configs name it.
        from mbag.environment.goals import TransformedGoalGenerator

        config["goal_generator"] = TransformedGoalGenerator
        config["goal_generator_config"] = {
            "goal_generator": "random",
            "goal_generator_config": {},
            "transforms": [],
        }
    return config


def modules(impl: str) -> Tuple[Any, Any]:
    """The env class and the masks of an implementation."""
    if impl == "reference":
        from mbag.agents.action_distributions import MbagActionDistribution
        from mbag.environment.mbag_env import MbagEnv

        return MbagEnv, MbagActionDistribution
    import mbag_rs

    return mbag_rs.MbagEnv, mbag_rs.MbagActionDistribution


def spaces(num_actions: int) -> Tuple[gymnasium.Space, gymnasium.Space]:
    observation = gymnasium.spaces.Dict(
        {
            "world": gymnasium.spaces.Box(0, 255, (6,) + WORLD, np.uint8),
            "action_mask": gymnasium.spaces.Box(0, 1, (num_actions,), np.int8),
        }
    )
    return observation, gymnasium.spaces.Discrete(num_actions)


class MbagGymEnv(gymnasium.Env):
    """One MBAG env as a gymnasium env: flat actions, the world observation and the
    line-of-sight mask of the valid actions."""

    def __init__(self, config: Dict[str, Any]):
        self.impl = config["impl"]
        env_class, self.dist = modules(self.impl)
        self.env = env_class(env_config(self.impl))
        self.mapping = self.dist.get_action_mapping(self.env.config)
        self.observation_space, self.action_space = spaces(len(self.mapping))

    def _observe(self, obs) -> Dict[str, np.ndarray]:
        world, inventory, timestep = obs[0]
        mask = self.dist.get_mask_flat(
            self.env.config, (world[None], inventory[None], timestep[None]), line_of_sight_masking=True
        )[0]
        return {"world": world, "action_mask": mask.astype(np.int8)}

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            random.seed(seed)
            np.random.seed(seed)
        obs, _ = self.env.reset()
        return self._observe(obs), {}

    def step(self, action):
        obs, rewards, dones, _ = self.env.step([tuple(int(v) for v in self.mapping[action])])
        return self._observe(obs), rewards[0], dones[0], False, {}


def vector_env_class():
    """``MbagRsVectorEnv``, defined once Ray is importable."""
    from ray.rllib.env.vector_env import VectorEnv

    import mbag_rs

    class MbagRsVectorEnv(VectorEnv):
        """A worker's envs as one mbag_rs.MbagVecEnv: one call steps them all.

        MbagVecEnv starts the next episode inside the step that ends one, so the
        observation returned with ``terminated`` is the new episode's first; PPO does
        not bootstrap from a terminal observation, and ``reset_at`` then returns it.
        """

        def __init__(self, config: Dict[str, Any], num_envs: int):
            self.vec = mbag_rs.MbagVecEnv(
                env_config("mbag_rs"), num_envs, seed=config.get("seed", 0), masks="los"
            )
            self.mapping = mbag_rs.MbagActionDistribution.get_action_mapping(self.vec.config)
            observation_space, action_space = spaces(len(self.mapping))
            super().__init__(observation_space, action_space, num_envs)
            self._take(self.vec.observe())

        def _take(self, out: Dict[str, np.ndarray]) -> None:
            # MbagVecEnv refills its arrays on every call, and RLlib keeps observations
            # until it builds a batch: one copy of each array per step, whose rows are
            # then handed out as views (bool masks reinterpreted as int8, no copy).
            self._world = out["world_obs"][:, 0].copy()
            self._masks = out["masks"][:, 0].copy().view(np.int8)
            self._rewards = out["rewards"][:, 0].tolist()
            self._dones = out["dones"].tolist()

        def _obs(self, i: int) -> Dict[str, np.ndarray]:
            return {"world": self._world[i], "action_mask": self._masks[i]}

        def vector_reset(self, *, seeds=None, options=None):
            return [self._obs(i) for i in range(self.num_envs)], [{} for _ in range(self.num_envs)]

        def reset_at(self, index=None, *, seed=None, options=None):
            return self._obs(index or 0), {}

        def vector_step(self, actions: List[int]):
            tuples = self.mapping[np.asarray(actions, dtype=np.int64)][:, None, :]
            self._take(self.vec.step(tuples))
            rewards, dones = self._rewards, self._dones
            return (
                [self._obs(i) for i in range(self.num_envs)],
                rewards,
                dones,
                [False] * self.num_envs,
                [{} for _ in range(self.num_envs)],
            )

        def get_sub_environments(self):
            return []

    return MbagRsVectorEnv


def masked_model_class():
    """A small MLP whose logits of invalid actions are pushed to -inf."""
    import torch
    from ray.rllib.models.torch.torch_modelv2 import TorchModelV2
    from torch import nn

    class MaskedMlp(TorchModelV2, nn.Module):
        def __init__(self, obs_space, action_space, num_outputs, model_config, name):
            TorchModelV2.__init__(self, obs_space, action_space, num_outputs, model_config, name)
            nn.Module.__init__(self)
            cells = int(np.prod(WORLD))
            # Block ids and player markers of the current world: channels 0 and 4.
            self.body = nn.Sequential(nn.Linear(2 * cells, HIDDEN), nn.ReLU())
            self.logits = nn.Linear(HIDDEN, num_outputs)
            self.value = nn.Linear(HIDDEN, 1)
            self._features = None

        def forward(self, input_dict, state, seq_lens):
            world = input_dict["obs"]["world"].float()
            x = torch.cat([world[:, 0].flatten(1) / 9.0, world[:, 4].flatten(1)], dim=1)
            self._features = self.body(x)
            mask = input_dict["obs"]["action_mask"].float()
            logits = self.logits(self._features) + torch.clamp(torch.log(mask), min=-1e9)
            return logits, state

        def value_function(self):
            return self.value(self._features).squeeze(1)

    return MaskedMlp


def ppo_config(impl: str, envs_per_worker: int):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.models import ModelCatalog
    from ray.tune.registry import register_env

    register_env("mbag_gym", lambda config: MbagGymEnv(config))
    vector_env = vector_env_class()
    register_env("mbag_rs_vec", lambda config: vector_env(config, envs_per_worker))
    ModelCatalog.register_custom_model("masked_mlp", masked_model_class())
    env = "mbag_rs_vec" if impl == "mbag_rs_vec" else "mbag_gym"
    return (
        PPOConfig()
        .environment(env, env_config={"impl": impl}, disable_env_checking=True)
        .framework("torch")
        .rollouts(
            num_rollout_workers=1,
            num_envs_per_worker=1 if impl == "mbag_rs_vec" else envs_per_worker,
            rollout_fragment_length=64,
            create_env_on_local_worker=False,
        )
        .training(
            train_batch_size=64 * envs_per_worker,
            sgd_minibatch_size=128,
            num_sgd_iter=2,
            model={"custom_model": "masked_mlp"},
            _enable_learner_api=False,
        )
        .rl_module(_enable_rl_module_api=False)
        .resources(num_cpus_for_local_worker=0, num_cpus_per_worker=1)
        # The model reads the dict observation as it is: flattening 30,000 values
        # per step into one float vector would cost more than the env.
        .experimental(_disable_preprocessor_api=True)
        .debugging(log_level="ERROR")
    )


def sampling_throughput(algo, rounds: int) -> float:
    """Env-steps/s of the remote worker's ``sample`` calls, timed on the worker (the
    driver's round trips to it are not the env's cost)."""

    def timed_sample(worker):
        start = time.perf_counter()
        steps = worker.sample().env_steps()
        return steps, time.perf_counter() - start

    algo.workers.foreach_worker(timed_sample, local_worker=False)  # warm up
    steps = seconds = 0.0
    for _ in range(rounds):
        for n, t in algo.workers.foreach_worker(timed_sample, local_worker=False):
            steps += n
            seconds += t
    return steps / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=3, help="PPO iterations to train")
    parser.add_argument("--envs-per-worker", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="sample calls per throughput figure")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    import ray
    from ray.cluster_utils import Cluster

    os.environ.setdefault("PYTHONHASHSEED", "0")
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    nodes = [n for n in ray.nodes() if n["Alive"]]
    print(f"local Ray cluster: {len(nodes)} nodes ({', '.join(n['NodeManagerAddress'] + ':' + str(n['NodeManagerPort']) for n in nodes)})")
    results: Dict[str, Any] = {"nodes": len(nodes), "ray": ray.__version__}
    try:
        algo = ppo_config("mbag_rs_vec", args.envs_per_worker).build()
        rewards = []
        for i in range(args.iterations):
            result = algo.train()
            rewards.append(result["episode_reward_mean"])
            print(
                f"PPO iteration {i + 1}: {result['num_env_steps_sampled']} env steps, "
                f"episode reward mean {result['episode_reward_mean']:.2f}"
            )
        results["training"] = {"iterations": args.iterations, "episode_reward_mean": rewards}
        throughput = {"mbag_rs_vec": sampling_throughput(algo, args.rounds)}
        algo.stop()
        for impl in ("mbag_rs", "reference"):
            algo = ppo_config(impl, args.envs_per_worker).build()
            throughput[impl] = sampling_throughput(algo, args.rounds)
            algo.stop()
        results["sampling_env_steps_per_s"] = throughput
        results["ratio_vs_reference"] = {k: v / throughput["reference"] for k, v in throughput.items()}
        print("RLlib sampling throughput (env-steps/s, one remote worker, LOS masks in every observation):")
        for impl, rate in throughput.items():
            print(f"  {impl:<12} {rate:>10,.0f}  ({rate / throughput['reference']:.1f}x the reference)")
    finally:
        ray.shutdown()
        cluster.shutdown()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
