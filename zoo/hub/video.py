"""The replay of a packaged agent: one deterministic episode, or its first steps, as an H.264 MP4."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from zoo.factories import make_eval_env
from zoo.normalization import VecNormalizeStats
from zoo.parsers import DEFAULT_EVAL_SEED, DEFAULT_VIDEO_LENGTH, MUJOCO_VIDEO_LENGTH

MUJOCO_FRAME_SIZE = {"width": 240, "height": 240}
# The locomotion tasks: their default camera does not keep up with a good agent, which runs out of the picture.
# They film from the model's own "track" camera, which follows the body's centre of mass.
MUJOCO_TRACKING_CAMERA = dict.fromkeys(("HalfCheetah", "Hopper", "Walker2d", "Swimmer", "Ant"), "track")


def is_mujoco(env_id: str) -> bool:
    """Whether ``env_id`` is one of gymnasium's MuJoCo envs (found from its registered entry point)."""
    spec = gym.registry.get(env_id)
    return spec is not None and str(spec.entry_point).startswith("gymnasium.envs.mujoco")


def default_video_length(env_id: str) -> int:
    """The most frames a replay of ``env_id`` records unless told otherwise."""
    return MUJOCO_VIDEO_LENGTH if is_mujoco(env_id) else DEFAULT_VIDEO_LENGTH


def write_video(frames: Iterable[np.ndarray], path: Path, fps: float) -> int:
    """Encode ``frames`` (consumed one at a time, never all in memory) as H.264 MP4; return how many."""
    import imageio.v2 as imageio

    writer: Any = None
    count = 0
    try:
        for frame in frames:
            if writer is None:
                # H.264 in yuv420p wants even sizes and ffmpeg would rescale to a multiple of 16: repeat the edge
                # pixels instead.
                height, width = frame.shape[:2]
                pad = ((0, -height % 16), (0, -width % 16), (0, 0))
                writer = imageio.get_writer(
                    str(path),
                    format="FFMPEG",
                    mode="I",
                    fps=fps,
                    codec="libx264",
                    pixelformat="yuv420p",
                    macro_block_size=16,
                    ffmpeg_log_level="error",
                )
            writer.append_data(np.pad(np.asarray(frame, dtype=np.uint8)[..., :3], pad, mode="edge"))
            count += 1
    finally:
        if writer is not None:
            writer.close()
    if count == 0:
        raise RuntimeError("the episode produced no frame")
    return count


class _Episode:
    """One deterministic episode of ``model`` in ``env`` (one env), stepped from its reset to its end."""

    def __init__(self, model: BaseAlgorithm, env: VecEnv, env_id: str) -> None:
        self.model, self.env, self.env_id = model, env, env_id
        self.observation = env.reset()
        self.steps = 0
        self.done = False

    def step(self) -> None:
        action, _ = self.model.predict(self.observation, deterministic=True)  # type: ignore[arg-type]
        self.observation, _, dones, _ = self.env.step(action)
        self.steps += 1
        self.done = bool(dones[0])

    def frames(self, max_frames: int) -> Iterator[np.ndarray]:
        """The frame before each step, for the first ``max_frames`` steps or, if shorter, the whole episode."""
        while not self.done and self.steps < max_frames:
            frame = self.env.get_images()[0]
            if frame is None or np.asarray(frame).ndim != 3:
                raise RuntimeError(f"{self.env_id} rendered {type(frame).__name__} instead of an RGB frame")
            yield np.asarray(frame, dtype=np.uint8)
            self.step()

    def length(self) -> int:
        """The episode's length in steps, after playing the rest of it unfilmed."""
        while not self.done:
            self.step()
        return self.steps


class Replay(NamedTuple):
    """What ``replay.mp4`` shows: its first ``frames`` steps of an episode of ``episode_length`` steps."""

    frames: int
    episode_length: int


def record_replay(
    model: BaseAlgorithm,
    env_id: str,
    env_kwargs: dict[str, Any],
    stats: VecNormalizeStats | None,
    path: Path,
    *,
    max_frames: int | None = None,
    seed: int = DEFAULT_EVAL_SEED,
) -> Replay:
    """Write one deterministic episode (at most ``max_frames`` frames, one a step; None:
    :func:`default_video_length`) to ``path`` as H.264 MP4; return how many frames it holds and how many steps the
    whole episode took (the rest is played unfilmed). Raises on any failure, leaving no file at ``path``."""
    partial = path.with_name(f".{path.name}.partial.mp4")
    # Off-screen frames need no display; without this, pygame-based envs probe for one and print an "error" line.
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    if max_frames is None:
        max_frames = default_video_length(env_id)
    if is_mujoco(env_id):
        # Unset, MuJoCo looks for a display and fails; EGL renders off-screen (with Mesa's software renderer where
        # there is no GPU). gymnasium reads the variable when the renderer is made, so setting it here is enough.
        os.environ.setdefault("MUJOCO_GL", "egl")
        camera = MUJOCO_TRACKING_CAMERA.get(env_id.split("-")[0].split("/")[-1])
        env_kwargs = {**MUJOCO_FRAME_SIZE, **({"camera_name": camera} if camera else {}), **env_kwargs}
    env = make_eval_env(model, env_id, env_kwargs, stats, seed=seed, render_mode="rgb_array")
    try:
        metadata: dict[str, Any] = dict(env.metadata)
        episode = _Episode(model, env, env_id)
        count = write_video(episode.frames(max_frames), partial, float(metadata.get("render_fps") or 30))
        length = episode.length()
        with partial.open("rb") as file:
            header = file.read(12)
        if header[4:8] != b"ftyp":
            raise RuntimeError(f"the encoder wrote no MP4 (header {header!r})")
        partial.rename(path)
    finally:
        env.close()
        partial.unlink(missing_ok=True)
    return Replay(count, length)
