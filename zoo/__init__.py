"""The zoo: tuned hyperparameters and the commands around them (train, evaluate, benchmark, Hub)."""
