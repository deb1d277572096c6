"""Policy aliases: Reinforce uses SB3's actor-critic policies unchanged (the critic only with baseline="value")."""

from typing import Any

from stable_baselines3.common.policies import ActorCriticCnnPolicy, ActorCriticPolicy, MultiInputActorCriticPolicy

from sb3_reinforce.common.torch_layers import GridCNN

MlpPolicy = ActorCriticPolicy
CnnPolicy = ActorCriticCnnPolicy
MultiInputPolicy = MultiInputActorCriticPolicy


class GridCnnPolicy(ActorCriticPolicy):
    """SB3's actor-critic policy on :class:`~sb3_reinforce.common.torch_layers.GridCNN` features, for small
    channels-last grids such as MinAtar's: the MinAtar paper's network, the action (and value) heads directly on its
    128 features (``net_arch=[]``). Both defaults give way to ``policy_kwargs``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("features_extractor_class", GridCNN)
        kwargs.setdefault("net_arch", [])
        super().__init__(*args, **kwargs)
