-- Lua entities (a task's monsters, dropped items) stepped by the bridge with the fixed frame
-- time, so that an episode with mobs replays bit for bit under the same seed and actions.
--
-- After all mods have loaded, every entity's on_step is taken out of its definition: the engine,
-- which steps on its wall clock between the bridge's batches of frames, finds none to call. Each
-- frame the bridge runs them itself, in the order the entities were added (their object ids),
-- and then moves each entity by its velocity and acceleration over the frame with the body's
-- sweep (physics.lua: unit-cube nodes, the entity's stepheight). Between frames an entity's
-- velocity and acceleration are kept here and zero in the engine, so that the engine's own
-- steps leave it where it is; its on_step sees them as usual (a velocity or acceleration set
-- between frames, by on_activate or on_punch, is taken over at the next frame).
local physics = omnigym.physics
local entities = {}
local on_steps = {}
local motion = setmetatable({}, {__mode = "k"}) -- luaentity -> {velocity, acceleration}
local ZERO = {x = 0, y = 0, z = 0}
-- The moveresult of a frame without collisions (and of an entity's first frame).
local FREE = {touching_ground = false, collides = false, standing_on_object = false, collisions = {}}

minetest.register_on_mods_loaded(function()
	for name, def in pairs(minetest.registered_entities) do
		if name ~= "omnigym_bridge:agent" then
			on_steps[name] = def.on_step or false
			def.on_step = nil
		end
	end
end)

local function moving(v)
	return v.x ~= 0 or v.y ~= 0 or v.z ~= 0
end

-- Takes an entity's velocity and acceleration into its kept motion where something set them
-- since it was last parked, and zeroes the engine's.
local function park(entity)
	local object = entity.object
	local kept = motion[entity] or {velocity = ZERO, acceleration = ZERO}
	motion[entity] = kept
	local v, a = object:get_velocity(), object:get_acceleration()
	if moving(v) then
		kept.velocity = v
	end
	if moving(a) then
		kept.acceleration = a
	end
	object:set_velocity(ZERO)
	object:set_acceleration(ZERO)
	return kept
end

-- One frame's move of an entity by its velocity and acceleration: the moveresult on_step gets.
local function move(entity, kept, dt)
	local object = entity.object
	local v, a = kept.velocity, kept.acceleration
	local vx, vy, vz = v.x + a.x * dt, v.y + a.y * dt, v.z + a.z * dt
	local props = object:get_properties()
	local pos = object:get_pos()
	if object:get_attach() or not props.physical then
		object:set_pos({x = pos.x + vx * dt, y = pos.y + vy * dt, z = pos.z + vz * dt})
		kept.velocity = {x = vx, y = vy, z = vz}
		return FREE
	end
	local b = props.collisionbox
	local cx, cz = (b[1] + b[4]) / 2, (b[3] + b[6]) / 2
	local box = {hx = (b[4] - b[1]) / 2, hz = (b[6] - b[3]) / 2, h = b[5] - b[2], dt = dt}
	local s = {p = {pos.x + cx, pos.y + b[2], pos.z + cz}, vx = vx, vy = vy, vz = vz}
	local free = {vx, vy, vz}
	physics.sweep(s, box, props.stepheight or 0, 0)
	object:set_pos({x = s.p[1] - cx, y = s.p[2] - b[2], z = s.p[3] - cz})
	kept.velocity = {x = s.vx, y = s.vy, z = s.vz}
	local collisions = {}
	if s.on_ground then -- the node under the box's centre, as the ground collision
		local under = vector.round({x = s.p[1], y = s.p[2] - 0.5, z = s.p[3]})
		collisions[1] = {type = "node", axis = "y", node_pos = under}
	end
	return {
		touching_ground = s.on_ground,
		collides = s.vx ~= free[1] or s.vy ~= free[2] or s.vz ~= free[3],
		standing_on_object = false,
		collisions = collisions,
	}
end

-- The entities alive now, in the order they were added.
local function alive()
	local ids = {}
	for id, entity in pairs(minetest.luaentities) do
		if on_steps[entity.name] ~= nil and entity.object:get_pos() then
			ids[#ids + 1] = id
		end
	end
	table.sort(ids)
	return ids
end

-- Runs an entity's on_step with dt, seeing its kept motion; false when it removed itself.
local function run_on_step(entity, kept, dt)
	local on_step, object = on_steps[entity.name], entity.object
	if on_step then
		object:set_velocity(kept.velocity)
		object:set_acceleration(kept.acceleration)
		on_step(entity, dt, entity.omnigym_moveresult or FREE)
		if not object:get_pos() then
			return false
		end
		kept.velocity, kept.acceleration = object:get_velocity(), object:get_acceleration()
		object:set_velocity(ZERO)
		object:set_acceleration(ZERO)
	end
	return true
end

-- One frame of every entity: its on_step, then its move.
function entities.frame(dt)
	for _, id in ipairs(alive()) do
		local entity = minetest.luaentities[id]
		if entity and entity.object:get_pos() then
			local kept = park(entity)
			if run_on_step(entity, kept, dt) then
				entity.omnigym_moveresult = move(entity, kept, dt)
			end
		end
	end
end

-- Parks every entity before the engine takes a step of its own.
function entities.park()
	for _, id in ipairs(alive()) do
		park(minetest.luaentities[id])
	end
end

return entities
