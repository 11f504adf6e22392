"""Craft: an embedded voxel engine re-creating the Craftium task suite (in progress)."""
