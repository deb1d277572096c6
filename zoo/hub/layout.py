"""The files of a packaged agent, as a push uploads them and a pull downloads them.

==========================  ==========================================================================
``<algo>-<env>.zip``        the Stable-Baselines3 model (``model.save``): a pickle, for trusted use only
``model.safetensors``       the policy's state_dict
``config.json``             everything needed to rebuild the model around those weights without pickle
``vec_normalize.json``      VecNormalize statistics, when the agent normalizes (also without pickle)
``results.json``            the evaluation: mean/std reward, episodes, every episode's return and length
``config.yml``              the run's resolved configuration (``RunConfig.to_data``)
``replay.mp4``              one deterministic episode (left out, with a warning, if recording fails)
``README.md``               the model card
==========================  ==========================================================================
"""

from __future__ import annotations

from zoo.agent_format import CONFIG_JSON, VEC_NORMALIZE_JSON, WEIGHTS_FILE
from zoo.runs import CONFIG_YML, env_slug

RESULTS_FILE = "results.json"
VIDEO_FILE = "replay.mp4"
CARD_FILE = "README.md"
# Files a push owns: those of an earlier push that the new one lacks are deleted in its commit. Anything else in
# the repository (.gitattributes, a user's notes, subfolders) is left alone.
MANAGED_PATTERNS = (
    CARD_FILE,
    CONFIG_JSON,
    CONFIG_YML,
    RESULTS_FILE,
    WEIGHTS_FILE,
    VEC_NORMALIZE_JSON,
    VIDEO_FILE,
    "*.zip",
)
# What a pull downloads without allow_pickle: everything but the zip (and the replay and card, which it does not use).
DOWNLOAD_PATTERNS = [CONFIG_JSON, WEIGHTS_FILE, VEC_NORMALIZE_JSON, RESULTS_FILE, CONFIG_YML]


def repo_name(algo: str, env_id: str) -> str:
    """The repository name, and the SB3 zip's stem, of an agent: ``reinforce-CartPole-v1``."""
    return f"{algo}-{env_slug(env_id)}"
