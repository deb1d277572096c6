"""Hugging Face Hub: publish a trained agent (``zoo push``, ``zoo push-all``) and load one back (``zoo enjoy``).

A push evaluates the agent, records a replay, renders the model card from ``hub_cards/template.md`` and uploads
one folder (:mod:`zoo.hub.layout`) with its ``manifest.json`` in ONE commit; the files an earlier push listed in
its manifest that this one no longer has are deleted in the same commit, and nothing else.
:func:`load_from_hub` downloads through the Hugging Face cache, checks every file it reads against the manifest
and rebuilds the model without unpickling anything unless asked to.

Data flows one way: :mod:`~zoo.hub.card` and :mod:`~zoo.hub.video` render files, :mod:`~zoo.hub.package` builds
the folder, :mod:`~zoo.hub.client` (the only user of the Hub's API) uploads and downloads, :mod:`~zoo.hub.push`
and :mod:`~zoo.hub.pull` are the entry points, :mod:`~zoo.hub.cli` the commands.

Errors a user can cause (unknown repo, revision or file, no or rejected token, the Hub out of reach or silent
after a few retries, a corrupt, modified or invalid file, an env that does not fit the agent) raise
:class:`zoo.errors.ZooError` with one line. Local folders are written into a temporary folder first and moved
into place when complete.
"""

from zoo.hub.card import TEMPLATE_PATH, format_metric, render_card
from zoo.hub.cli import enjoy_main, packaged_folders, push_all_main, push_main
from zoo.hub.package import verify_package
from zoo.hub.pull import HubAgent, choose_env_kwargs, load_from_hub
from zoo.hub.push import PushResult, package_agent, push_folder, push_run, push_to_hub
from zoo.hub.video import record_replay

__all__ = [
    "TEMPLATE_PATH",
    "HubAgent",
    "PushResult",
    "choose_env_kwargs",
    "enjoy_main",
    "format_metric",
    "load_from_hub",
    "package_agent",
    "packaged_folders",
    "push_all_main",
    "push_folder",
    "push_main",
    "push_run",
    "push_to_hub",
    "record_replay",
    "render_card",
    "verify_package",
]
