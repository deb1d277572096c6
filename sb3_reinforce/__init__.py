"""REINFORCE for Stable-Baselines3, and an exact vectorized GAE rollout buffer."""

from sb3_reinforce.common.buffers import GAEDictRolloutBuffer, GAERolloutBuffer
from sb3_reinforce.reinforce import CnnPolicy, MlpPolicy, MultiInputPolicy, Reinforce
from sb3_reinforce.version import __version__

__all__ = [
    "CnnPolicy",
    "GAEDictRolloutBuffer",
    "GAERolloutBuffer",
    "MlpPolicy",
    "MultiInputPolicy",
    "Reinforce",
    "__version__",
]
