"""Feature extractors for small grid observations, where SB3's own ``NatureCNN`` does not fit.

MinAtar's games (Young & Tian 2019) observe a ``10 x 10 x C`` grid of 0/1 object channels, channels last, as a
``Box(0, 1, (10, 10, C), bool)``. SB3 does not take that for an image (``is_image_space`` wants uint8 in [0, 255]),
so it neither transposes it nor divides it, and ``NatureCNN``'s 8x8 stride-4 first layer needs at least 36x36.
:class:`GridCNN` is the MinAtar paper's network for such grids: one 3x3 convolution of 16 filters, stride 1, no
padding, a ReLU, then a linear layer of 128 units and a ReLU. It reads the observations channels last, in any
dtype (bool, uint8 or float: SB3's preprocessing has made them float), and puts channels first itself.

It serves SB3's A2C and PPO as well as Reinforce, through ``policy_kwargs``::

    PPO("MlpPolicy", env, policy_kwargs={"features_extractor_class": GridCNN})

and Reinforce names it as a policy: ``Reinforce("GridCnnPolicy", env)``.
"""

from __future__ import annotations

import gymnasium as gym
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn


class GridCNN(BaseFeaturesExtractor):
    """The MinAtar paper's trunk for a channels-last grid ``(H, W, C)``: Conv2d(C, ``filters``, 3) and a ReLU, then
    Linear(``filters * (H - 2) * (W - 2)``, ``features_dim``) and a ReLU.

    :param observation_space: a ``Box`` of shape ``(H, W, C)`` with ``H, W >= 3``, of any dtype.
    :param features_dim: units of the linear layer (the paper's 128).
    :param filters: filters of the convolution (the paper's 16).
    """

    def __init__(self, observation_space: gym.Space, features_dim: int = 128, filters: int = 16) -> None:
        if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 3:
            raise ValueError(f"GridCNN needs a Box observation space of shape (H, W, C), got {observation_space}")
        height, width, channels = observation_space.shape
        if height < 3 or width < 3:
            raise ValueError(f"GridCNN's 3x3 convolution needs a grid of at least 3x3, got {height}x{width}")
        super().__init__(observation_space, features_dim)
        self.conv = nn.Sequential(nn.Conv2d(channels, filters, kernel_size=3, stride=1), nn.ReLU(), nn.Flatten())
        self.linear = nn.Sequential(nn.Linear(filters * (height - 2) * (width - 2), features_dim), nn.ReLU())

    def forward(self, observations: th.Tensor) -> th.Tensor:
        # (batch, H, W, C) -> (batch, C, H, W): the grid arrives channels last, Conv2d wants channels first.
        return self.linear(self.conv(observations.float().permute(0, 3, 1, 2)))
