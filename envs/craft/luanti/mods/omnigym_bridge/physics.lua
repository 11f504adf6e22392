-- The agent body's movement: one physics frame of omnigym's embedded engine (its physics.py),
-- run by the mod against the engine's own nodes with a fixed frame time, so that a step moves
-- the body the same way whatever the server's wall clock does.
--
-- Per frame: the horizontal velocity moves toward the velocity the held keys wish (relative to
-- yaw, at the walk, crouch or fast speed) by at most the ground or air acceleration times dt; a
-- jump on the ground sets the vertical speed; gravity pulls; then the box is swept against
-- walkable nodes axis by axis (y, then x, then z), stepping up ledges of at most the step
-- height. Nodes are unit cubes here (node boxes are not read), as in the embedded engine.
local physics = {}
local EPS = 1e-9
local floor, ceil, abs, sqrt, sin, cos = math.floor, math.ceil, math.abs, math.sqrt, math.sin,
	math.cos

local walkable_by_name = {}
minetest.register_on_mods_loaded(function()
	for name, def in pairs(minetest.registered_nodes) do
		walkable_by_name[name] = def.walkable ~= false
	end
	walkable_by_name["ignore"] = true
end)

local probe = {x = 0, y = 0, z = 0}
local function walkable(x, y, z)
	probe.x, probe.y, probe.z = x, y, z
	local w = walkable_by_name[minetest.get_node(probe).name]
	return w == nil or w
end

local function cell_span(lo, hi)
	return floor(lo + EPS + 0.5), ceil(hi - EPS + 0.5) - 1
end

-- How far the box with feet at p can move along axis (1 x, 2 y, 3 z) by `move` (signed); only
-- faces ahead of the box stop it.
local function axis_limit(p, c, axis, move)
	local lo = {p[1] - c.hx, p[2], p[3] - c.hz}
	local hi = {p[1] + c.hx, p[2] + c.h, p[3] + c.hz}
	local span = {}
	for a = 1, 3 do
		span[a] = {cell_span(lo[a], hi[a])}
	end
	local alo, ahi = lo[axis], hi[axis]
	if move > 0 then
		span[axis] = {floor(ahi + 0.5) - 1, floor(ahi + move + 0.5) + 1}
	else
		span[axis] = {floor(alo + move + 0.5) - 1, floor(alo + 0.5) + 1}
	end
	local allowed = move
	for x = span[1][1], span[1][2] do
		for y = span[2][1], span[2][2] do
			for z = span[3][1], span[3][2] do
				local k = (axis == 1 and x) or (axis == 2 and y) or z
				local face, skip
				if move > 0 then
					face = k - 0.5
					skip = face < ahi - EPS or face >= ahi + allowed
				else
					face = k + 0.5
					skip = face > alo + EPS or face <= alo + allowed
				end
				if not skip and walkable(x, y, z) then
					allowed = move > 0 and face - ahi or face - alo
				end
			end
		end
	end
	return allowed
end

local function move_horizontal(s, c, axis, move, step)
	local vel = axis == 1 and "vx" or "vz"
	local allowed = axis_limit(s.p, c, axis, move)
	local rise = 0
	if abs(allowed - move) > EPS and step > 0 then
		local up = axis_limit(s.p, c, 2, step)
		local q = {s.p[1], s.p[2] + up, s.p[3]}
		local stepped = axis_limit(q, c, axis, move)
		if abs(stepped) > abs(allowed) + EPS then
			q[axis] = q[axis] + stepped
			local down = axis_limit(q, c, 2, -up)
			if up + down > EPS then
				allowed, rise = stepped, up + down
			end
		end
	end
	if abs(allowed - move) > EPS then
		s[vel] = 0
	end
	s.p[axis] = s.p[axis] + allowed
	s.p[2] = s.p[2] + rise
end

-- One frame for body state s = {p = {x, y, z}, vx, vy, vz, on_ground} with the held keys;
-- returns the landing speed (0 when the body did not land).
function physics.frame(s, keys, yaw, c)
	local forward = (keys.forward and 1 or 0) - (keys.backward and 1 or 0)
	local side = (keys.right and 1 or 0) - (keys.left and 1 or 0)
	local speed = c.walk
	if keys.sneak then
		speed = c.crouch
	elseif keys.aux1 and c.fast_move then
		speed = c.fast
	end
	local wx = -forward * sin(yaw) + side * cos(yaw)
	local wz = forward * cos(yaw) + side * sin(yaw)
	local norm = sqrt(wx * wx + wz * wz)
	if norm > 0 then
		wx, wz = wx / norm * speed, wz / norm * speed
	end
	local max_change = (s.on_ground and c.accel_ground or c.accel_air) * c.dt
	local dvx, dvz = wx - s.vx, wz - s.vz
	local change = sqrt(dvx * dvx + dvz * dvz)
	if change > max_change then
		dvx, dvz = dvx * max_change / change, dvz * max_change / change
	end
	s.vx, s.vz = s.vx + dvx, s.vz + dvz
	if keys.jump and s.on_ground then
		s.vy = c.jump
	end
	s.vy = s.vy - c.gravity * c.dt
	return physics.sweep(s, c, c.step, c.air_step)
end

-- Moves box c (half-widths hx, hz, height h, feet at s.p) by its velocity for c.dt: y first, then
-- x and z, stepping up ledges of at most `step` (`air_step` off the ground); a blocked axis
-- zeroes its velocity. Returns the landing speed (0 when the box did not land).
function physics.sweep(s, c, step, air_step)
	local move = s.vy * c.dt
	local allowed = axis_limit(s.p, c, 2, move)
	s.p[2] = s.p[2] + allowed
	local landing = 0
	s.on_ground = false
	if abs(allowed - move) > EPS then
		if move < 0 then
			landing = -s.vy
			s.on_ground = true
		end
		s.vy = 0
	end
	step = s.on_ground and step or air_step
	if s.vx ~= 0 then
		move_horizontal(s, c, 1, s.vx * c.dt, step)
	end
	if s.vz ~= 0 then
		move_horizontal(s, c, 3, s.vz * c.dt, step)
	end
	return landing
end

return physics
