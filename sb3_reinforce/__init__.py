"""REINFORCE for Stable-Baselines3, and an exact vectorized GAE rollout buffer."""

from sb3_reinforce.common.buffers import GAEDictRolloutBuffer, GAERolloutBuffer
from sb3_reinforce.common.torch_layers import GridCNN
from sb3_reinforce.reinforce import CnnPolicy, GridCnnPolicy, MlpPolicy, MultiInputPolicy, Reinforce
from sb3_reinforce.version import __version__

__all__ = [
    "CnnPolicy",
    "GAEDictRolloutBuffer",
    "GAERolloutBuffer",
    "GridCNN",
    "GridCnnPolicy",
    "MlpPolicy",
    "MultiInputPolicy",
    "Reinforce",
    "__version__",
]
