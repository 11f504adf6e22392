-- The agent: a physical entity with the player's collision box, moved by the mod (no client),
-- and a player-like object over it that task mods get from minetest.get_connected_players().
--
-- Task mods written for Craftium call player methods (get_pos, set_pos, hud_set_flags, ...);
-- the agent answers the usual ones itself, forwards the rest to the entity's ObjectRef when it
-- has them, and treats methods only a client can honour (HUD, sky, formspecs) as no-ops.
local physics = omnigym.physics
local conf = omnigym.conf
local agent = {name = "agent", object = false, meta = false}
omnigym.agent = agent

local BODY = "omnigym_bridge:agent"
-- Tolerance of time comparisons: the engine keeps tool times as float32 (0.8 is 0.80000001).
local TIME_EPS = 1e-6
local INVENTORY = "omnigym_agent"
local hx, h, hz = conf.hx, conf.h, conf.hz

minetest.register_entity(BODY, {
	initial_properties = {
		physical = true,
		collide_with_objects = false,
		collisionbox = {-hx, 0, -hz, hx, h, hz},
		selectionbox = {-hx, 0, -hz, hx, h, hz},
		visual = "cube",
		visual_size = {x = 2 * hx, y = h},
		static_save = false,
		hp_max = conf.hp_max,
	},
	-- Hits on the body hurt the agent (the entity itself is never removed by damage).
	on_punch = function(_, puncher, time_from_last_punch, tool_capabilities, _)
		if puncher == agent.object then
			return true
		end
		local armor = {fleshy = 100}
		local damage = minetest.get_hit_params(armor, tool_capabilities or {},
			time_from_last_punch or 1).hp or 0
		agent:hurt(damage)
		return true
	end,
})

local inventory = minetest.create_detached_inventory(INVENTORY, {})
inventory:set_size("main", 32)

local methods = {}
local noop = function() end
for _, name in ipairs({
	"hud_set_flags", "hud_add", "hud_remove", "hud_change", "hud_set_hotbar_itemcount",
	"set_sky", "set_sun", "set_moon", "set_stars", "set_clouds", "override_day_night_ratio",
	"set_inventory_formspec", "set_formspec_prepend", "set_physics_override", "set_eye_offset",
	"set_local_animation", "set_fov", "set_lighting", "send_mapblock", "set_minimap_modes",
}) do
	methods[name] = noop
end

function methods:get_player_name() return self.name end
function methods:is_player() return true end
function methods:get_pos() return vector.new(self.state.p[1], self.state.p[2], self.state.p[3]) end
function methods:set_pos(pos)
	self.state.p = {pos.x, pos.y, pos.z}
	self.state.on_ground = false
	if self.object then
		self.object:set_pos(pos)
	end
end
methods.move_to = methods.set_pos
function methods:get_velocity() return vector.new(self.state.vx, self.state.vy, self.state.vz) end
function methods:set_velocity(v) self.state.vx, self.state.vy, self.state.vz = v.x, v.y, v.z end
function methods:add_velocity(v)
	self.state.vx, self.state.vy, self.state.vz =
		self.state.vx + v.x, self.state.vy + v.y, self.state.vz + v.z
end
function methods:get_look_horizontal() return math.rad(self.yaw) end
function methods:get_look_vertical() return math.rad(self.pitch) end
function methods:set_look_horizontal(r) self.yaw = math.deg(r) % 360 end
function methods:set_look_vertical(r) self.pitch = math.max(-90, math.min(90, math.deg(r))) end
function methods:get_look_dir()
	local y, p = math.rad(self.yaw), math.rad(self.pitch)
	return vector.new(-math.sin(y) * math.cos(p), -math.sin(p), math.cos(y) * math.cos(p))
end
function methods:get_hp() return self.hp end
function methods:set_hp(hp)
	local damage = self.hp - math.max(0, math.floor(hp))
	if damage > 0 then
		self:hurt(damage)
	else
		self.hp = math.min(conf.hp_max, -damage + self.hp)
	end
end
function methods:get_properties() return {eye_height = conf.eye, collisionbox = {-hx, 0, -hz, hx, h, hz}} end
function methods:get_inventory() return inventory end
function methods:get_wield_list() return "main" end
function methods:get_wield_index() return self.slot end
function methods:get_wielded_item() return inventory:get_stack("main", self.slot) end
function methods:set_wielded_item(stack) inventory:set_stack("main", self.slot, stack) return true end
function methods:get_player_control() return self.keys end
function methods:get_breath() return 10 end
function methods:get_meta() return self.meta end
function methods:get_armor_groups() return {fleshy = 100} end

setmetatable(agent, {__index = function(_, key)
	local method = methods[key]
	if method then
		return method
	end
	local object = rawget(agent, "object")
	if object and object[key] then
		return function(_, ...) return object[key](object, ...) end
	end
	return noop
end})

-- A new body for a new episode: full hp, empty hands, standing still at the world origin
-- (the task's join or reset callback places it).
function agent:spawn(pos)
	if self.object then
		self.object:remove()
	end
	self.state = {p = {pos.x, pos.y, pos.z}, vx = 0, vy = 0, vz = 0, on_ground = false}
	self.object = minetest.add_entity(pos, BODY)
	self.yaw, self.pitch, self.hp, self.slot = 0, 0, conf.hp_max, 1
	self.alive = true
	self.keys = {}
	self.meta = self.meta or minetest.get_mod_storage()
	self.dig = {pos = nil, elapsed = 0}
	self.last_punch = -math.huge
	self.time = 0
	inventory:set_list("main", {})
end

function agent:hurt(damage)
	if not self.alive or damage <= 0 or not conf.enable_damage then
		return
	end
	self.hp = math.max(0, self.hp - damage)
	omnigym.state.damage_taken = omnigym.state.damage_taken + damage
	if self.hp == 0 then
		self.alive = false
		for _, callback in ipairs(omnigym.callbacks.dieplayer) do
			callback(self, {type = "set_hp"})
		end
	end
end

local function tool_capabilities(stack)
	local caps = stack:get_tool_capabilities()
	if caps and next(caps) then
		return caps
	end
	return minetest.registered_items[""].tool_capabilities
end

-- Digs the node under the crosshair over as many frames as its dig time, or punches the entity
-- in front of it (at most once per full punch interval).
function agent:dig_frame(dt)
	local eye = self:get_pos()
	eye.y = eye.y + conf.eye
	local tip = vector.add(eye, vector.multiply(self:get_look_dir(), conf.range))
	local pointed
	for thing in minetest.raycast(eye, tip, true, false) do
		if thing.type == "node" or (thing.type == "object" and thing.ref ~= self.object) then
			pointed = thing
			break
		end
	end
	local stack = self:get_wielded_item()
	local caps = tool_capabilities(stack)
	if pointed and pointed.type == "object" then
		self.dig.pos = nil
		local interval = caps.full_punch_interval or 1
		if self.time - self.last_punch + TIME_EPS >= interval then
			pointed.ref:punch(self.object, self.time - self.last_punch, caps, self:get_look_dir())
			self.last_punch = self.time
		end
		return
	end
	if not pointed then
		self.dig.pos = nil
		return
	end
	local pos = pointed.under
	if not (self.dig.pos and vector.equals(pos, self.dig.pos)) then
		self.dig = {pos = pos, elapsed = 0}
	end
	local node = minetest.get_node(pos)
	local def = minetest.registered_nodes[node.name]
	local params = minetest.get_dig_params(def and def.groups or {}, caps)
	if not params.diggable then
		return
	end
	self.dig.elapsed = self.dig.elapsed + dt
	if self.dig.elapsed + TIME_EPS < params.time then
		return
	end
	self.dig = {pos = nil, elapsed = 0}
	for _, item in ipairs(minetest.get_node_drops(node, stack:get_name())) do
		inventory:add_item("main", item)
	end
	minetest.remove_node(pos)
	for _, callback in ipairs(minetest.registered_on_dignodes) do
		callback(pos, node, self)
	end
end

-- Places the wielded node against the pointed face; drops the wielded item ahead.
function agent:place()
	local stack = self:get_wielded_item()
	local def = minetest.registered_nodes[stack:get_name()]
	if not def then
		return
	end
	local eye = self:get_pos()
	eye.y = eye.y + conf.eye
	local tip = vector.add(eye, vector.multiply(self:get_look_dir(), conf.range))
	for thing in minetest.raycast(eye, tip, false, false) do
		if thing.type == "node" then
			local target = thing.above
			local here = minetest.registered_nodes[minetest.get_node(target).name]
			if here and here.buildable_to then
				minetest.set_node(target, {name = stack:get_name()})
				stack:take_item(1)
				self:set_wielded_item(stack)
			end
			return
		end
	end
end

function agent:drop()
	local stack = self:get_wielded_item()
	if stack:is_empty() then
		return
	end
	local one = stack:take_item(1)
	self:set_wielded_item(stack)
	local ahead = vector.add(self:get_pos(), vector.multiply(self:get_look_dir(), 1))
	ahead.y = self.state.p[2] + 0.5
	minetest.add_item(ahead, one)
end

-- One frame of a step: look, move, dig, and on the first frame place, drop and hotbar keys.
function agent:frame(keys, dyaw, dpitch, first, dt)
	if not self.alive then
		return
	end
	self.keys = keys
	self.yaw = (self.yaw + dyaw) % 360
	self.pitch = math.max(-conf.pitch_limit, math.min(conf.pitch_limit, self.pitch + dpitch))
	local x0, z0 = self.state.p[1], self.state.p[3]
	local landing = physics.frame(self.state, keys, math.rad(self.yaw), conf)
	local st = omnigym.state
	st.distance = st.distance + math.sqrt((self.state.p[1] - x0) ^ 2 + (self.state.p[3] - z0) ^ 2)
	st.min_y = math.min(st.min_y, self.state.p[2])
	if landing > conf.fall_tolerance then
		self:hurt(math.floor((landing - conf.fall_tolerance) * conf.fall_per_speed + 0.5))
	end
	self.object:set_pos(self:get_pos())
	self.object:set_yaw(math.rad(self.yaw))
	if keys.dig then
		self:dig_frame(dt)
	else
		self.dig = {pos = nil, elapsed = 0}
	end
	if first then
		for slot = 1, 9 do
			if keys["slot_" .. slot] then
				self.slot = slot
			end
		end
		if keys.place then
			self:place()
		end
		if keys.drop then
			self:drop()
		end
	end
	self.time = self.time + dt
end

return agent
