"""First-person frames of an MCU world, drawn by the Craft engine's renderer (``pixels=True``).

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) gives its agents 128×128 video frames of
Minecraft. Here :class:`Camera` draws the symbolic world with :class:`omnigym.envs.craft.render.
Renderer` from the player's eye (1.5 nodes above the feet) along its facing and pitch: blocks in
their registry colours with Luanti-style face shading and fog, mobs as coloured boxes. Darkness
follows the visibility radius (night, rain, thunder, blindness): the view distance is that
radius and the frame is dimmed by radius / 24, so the hard level's perturbations show. A frame
is a pure function of the world: the same seed and commands give the same pixels.
"""

from __future__ import annotations

import numpy as np

from omnigym.envs.craft.render import Renderer, RenderOptions
from omnigym.envs.mcu.world import MCUWorld

FRAME_SIZE = 128
EYE_HEIGHT = 1.5
DAYLIGHT = 24
MIN_BRIGHTNESS = 0.15
MOB_COLORS = {
    "zombie": (60, 130, 70),
    "skeleton": (200, 200, 200),
    "spider": (50, 40, 40),
    "wolf": (170, 170, 170),
    "cow": (90, 60, 40),
    "pig": (240, 160, 160),
    "sheep": (235, 235, 235),
    "chicken": (250, 250, 250),
}
"""Box colour of each mob; other mobs are magenta."""
OTHER_MOB = (200, 0, 200)
MOB_HALF = (0.4, 0.9, 0.4)
"""Half extents of a mob's box, nodes (a mob stands two nodes tall on its node)."""


class Camera:
    """Draws ``uint8 (size, size, 3)`` frames of an :class:`~omnigym.envs.mcu.world.MCUWorld`
    (module docstring); one renderer per visibility radius, made on first use."""

    def __init__(self, size: int = FRAME_SIZE):
        self.size = int(size)
        self._renderers: dict[int, Renderer] = {}

    def _renderer(self, world: MCUWorld, radius: int) -> Renderer:
        if radius not in self._renderers:
            materials = world.registry.materials
            options = RenderOptions(width=self.size, height=self.size, view_distance=float(radius))
            self._renderers[radius] = Renderer(materials.colors, materials.visible, options)
        return self._renderers[radius]

    def frame(self, world: MCUWorld) -> np.ndarray:
        radius = world.visibility()
        eye = np.array(world.position, dtype=np.float64) + (0.0, EYE_HEIGHT, 0.0)
        boxes = [
            (x, y + MOB_HALF[1] - 0.5, z, *MOB_HALF, *MOB_COLORS.get(m.kind.name, OTHER_MOB))
            for m in world.mobs
            for x, y, z in [m.position]
        ]
        entities = np.array(boxes, dtype=np.float64).reshape(-1, 9)
        grid = world.grid
        image = self._renderer(world, radius).render(
            grid.content,
            eye,
            float(world.player.yaw),
            float(world.pitch),
            entities=entities,
            origin=tuple(int(v) for v in grid.origin),
        )
        brightness = max(radius / DAYLIGHT, MIN_BRIGHTNESS)
        if brightness < 1.0:
            image = (image * brightness).astype(np.uint8)
        return image
