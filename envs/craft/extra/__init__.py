"""Craftium's ``craftium.extra`` helpers: the dungeon generator's continual-RL sequence."""
