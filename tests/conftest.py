import os

# Tiny networks are faster on one thread, and results are reproducible across machines.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

torch.set_num_threads(1)
