"""Ensemble engine: shards of paths, seeds, online reductions, checkpoints. No Hydra, no h5py."""
import sgi_run.core  # noqa: F401  (float64 before anything is traced)
