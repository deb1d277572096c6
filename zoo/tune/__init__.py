"""``python -m zoo tune``: hyperparameter search on Optuna, one job per module.

- :mod:`zoo.tune.space`: the search space as data (``hyperparams/search_space.yml``), sampled and applied;
- :mod:`zoo.tune.storage`: where a study lives (an embedded journal, or a database shared by many machines);
- :mod:`zoo.tune.orphans`: the trials of dead workers found and handed on;
- :mod:`zoo.tune.objective`: one trial, trained and scored as ``zoo benchmark`` scores a run, fed to the pruner;
- :mod:`zoo.tune.workers`: the worker loop, worker processes, and the progress bar;
- :mod:`zoo.tune.report`: the best trials as a table, the plots, and the best trial as a zoo entry;
- :mod:`zoo.tune.cli`: the command.
"""
