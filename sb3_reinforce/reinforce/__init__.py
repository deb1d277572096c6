from sb3_reinforce.reinforce.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from sb3_reinforce.reinforce.reinforce import Reinforce

__all__ = ["CnnPolicy", "MlpPolicy", "MultiInputPolicy", "Reinforce"]
