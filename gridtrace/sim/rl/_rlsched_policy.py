"""RLScheduler's kernel policy as a stable-baselines3 policy (the ``ppo`` extra; issue 15).

Written from RLScheduler's ``rl_kernel`` and ``critic_mlp`` (``ppo-pick-jobs.py`` of
``DIR-LAB/deep-batch-scheduler``):

* actor: one small MLP 8 → 32 → 16 → 8 → 1 (ReLU between, linear output) applied to every row
  of the 128 × 8 window with shared weights; the 128 scores are the logits of a categorical
  distribution over the slots, padded slots masked out (sb3-contrib's masked categorical;
  RLScheduler adds −10⁶ to their logits, the same in effect). The actor is
  permutation-equivariant: permuting the rows permutes the scores.
* critic: RLScheduler's ``critic_mlp``: its own per-row MLP 8 → 32 → 16 → 8 → 1, then an MLP
  over the 128 row values 128 → 64 → 32 → 8 → 1 (ReLU between). (The critic does read the
  flattened window, through a per-row layer first, as RLScheduler's does.)

Weights start at torch's default initialisation (``ortho_init=False``; sb3's orthogonal
initialisation is not RLScheduler's).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from gridtrace.sim.rl._rlsched_ppo import JOB_FEATURES, MAX_QUEUE_SIZE

__all__ = ["RLSchedulerKernelPolicy", "RLSchedulerNets", "row_kernel"]


def row_kernel() -> nn.Sequential:
    """Return RLScheduler's per-row MLP 8 → 32 → 16 → 8 → 1 (ReLU)."""
    return nn.Sequential(
        nn.Linear(JOB_FEATURES, 32),
        nn.ReLU(),
        nn.Linear(32, 16),
        nn.ReLU(),
        nn.Linear(16, 8),
        nn.ReLU(),
        nn.Linear(8, 1),
    )


class RLSchedulerNets(nn.Module):
    """The actor's row scores and the critic's last hidden layer (sb3's ``mlp_extractor``).

    ``forward_actor`` returns the 128 slot scores (sb3's ``latent_pi``, used as logits as is);
    ``forward_critic`` the critic's 8-unit layer, to which sb3's ``value_net`` adds the output.
    """

    latent_dim_pi = MAX_QUEUE_SIZE
    latent_dim_vf = 8

    def __init__(self) -> None:
        super().__init__()
        self.actor_kernel = row_kernel()
        self.critic_kernel = row_kernel()
        self.critic_mlp = nn.Sequential(
            nn.Linear(MAX_QUEUE_SIZE, 64),
            nn.ReLU(),
            nn.Linear(64, 32),
            nn.ReLU(),
            nn.Linear(32, 8),
            nn.ReLU(),
        )

    @staticmethod
    def _rows(features: torch.Tensor) -> torch.Tensor:
        return features.reshape(-1, MAX_QUEUE_SIZE, JOB_FEATURES)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        """Return the slot scores, shape (batch, 128)."""
        scores: torch.Tensor = self.actor_kernel(self._rows(features)).squeeze(-1)
        return scores

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        """Return the critic's last hidden layer, shape (batch, 8)."""
        rows = self.critic_kernel(self._rows(features)).squeeze(-1)
        hidden: torch.Tensor = self.critic_mlp(rows)
        return hidden

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (actor scores, critic hidden layer)."""
        return self.forward_actor(features), self.forward_critic(features)


class RLSchedulerKernelPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy with RLScheduler's kernel actor and critic (module docstring).

    Takes :class:`~sb3_contrib.common.maskable.policies.MaskableActorCriticPolicy`'s arguments;
    ``net_arch`` and ``activation_fn`` are ignored (the networks are fixed), ``ortho_init``
    defaults to False.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("ortho_init", False)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = RLSchedulerNets()  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        self._build_mlp_extractor()
        self.action_net = nn.Identity()  # the row scores are the logits
        self.value_net = nn.Linear(RLSchedulerNets.latent_dim_vf, 1)
        if self.ortho_init:  # sb3's gains, when asked for
            self.mlp_extractor.apply(partial(self.init_weights, gain=2**0.5))
            self.value_net.apply(partial(self.init_weights, gain=1.0))
        self.optimizer = self.optimizer_class(
            self.parameters(),
            lr=lr_schedule(1),  # type: ignore[call-arg]
            **self.optimizer_kwargs,
        )
