"""Ensemble engine: shards of paths, seeds, online reductions, checkpoints. No Hydra, no h5py.

It computes in float64: its callers set that (``core.jax_setup``), its import does not."""
