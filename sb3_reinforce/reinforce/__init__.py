from sb3_reinforce.reinforce.policies import CnnPolicy, GridCnnPolicy, MlpPolicy, MultiInputPolicy
from sb3_reinforce.reinforce.reinforce import Reinforce

__all__ = ["CnnPolicy", "GridCnnPolicy", "MlpPolicy", "MultiInputPolicy", "Reinforce"]
