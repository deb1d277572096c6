"""Hugging Face Hub: publish a trained agent (``zoo push``, ``zoo push-all``) and load one back (``zoo enjoy``).

A push evaluates the agent, records a replay, renders the model card from ``zoo/model_card_template.md`` and uploads
one folder (:mod:`zoo.hub.layout`) with its ``manifest.json`` in ONE commit; the files an earlier push listed in
its manifest that this one no longer has are deleted in the same commit, and nothing else.
:func:`load_from_hub` downloads through the Hugging Face cache, checks every file it reads against the manifest
and rebuilds the model without unpickling anything unless asked to; :func:`load_from_folder` does the same for a
local folder of those files (``hub_cards/<env id>/``).

Data flows one way: :mod:`~zoo.hub.card` and :mod:`~zoo.hub.video` render files, :mod:`~zoo.hub.package` builds
the folder, :mod:`~zoo.hub.client` (the only user of the Hub's API) uploads and downloads, :mod:`~zoo.hub.push`
and :mod:`~zoo.hub.pull` are the entry points. This package exports the library only; the commands (``push``,
``enjoy``, ``push-all``) live in :mod:`zoo.hub.cli`, which ``python -m zoo`` runs.

Errors a user can cause (unknown repo, revision or file, no or rejected token, the Hub out of reach or silent
after a few retries, a corrupt, modified or invalid file, an env that does not fit the agent) raise
:class:`zoo.errors.ZooError` with one line. Local folders are written into a temporary folder first and moved
into place when complete.
"""

from zoo.errors import ZooError
from zoo.hub.card import TEMPLATE_PATH, format_metric, render_card
from zoo.hub.package import verify_package
from zoo.hub.pull import HubAgent, choose_env_kwargs, load_from_folder, load_from_hub
from zoo.hub.push import PushOptions, PushResult, package_agent, push_folder, push_run, push_to_hub
from zoo.hub.video import record_replay

__all__ = [
    "TEMPLATE_PATH",
    "HubAgent",
    "PushOptions",
    "PushResult",
    "ZooError",
    "choose_env_kwargs",
    "format_metric",
    "load_from_folder",
    "load_from_hub",
    "package_agent",
    "push_folder",
    "push_run",
    "push_to_hub",
    "record_replay",
    "render_card",
    "verify_package",
]
