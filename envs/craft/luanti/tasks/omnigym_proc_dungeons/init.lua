-- Craftium's ProcDungeons (Malagón et al., ICML 2025) on the dungeon omnigym builds from the
-- same ASCII map (exported by the Python side, loaded with omnigym.load_world). The agent starts
-- on '@' facing +z with a steel sword; an objective entity stands on each 'O' and a monster of
-- the cell's tier on each of 'a'-'d', with the stats of omnigym's mobs.yaml. Killing a monster
-- gives rwd_kill_monster, punching the objective rwd_objective and ends the episode, as does
-- dying.
--
-- Monsters are Luanti entities, stepped and moved by the bridge with the fixed frame time: they
-- walk at their speed toward an agent in view range and sight, and hit it every attack interval once within reach. Punches hurt them
-- by the tool's fleshy damage scaled by the time since the last punch (Luanti's rule).
local data = omnigym.conf.task
local MONSTER = "omnigym_proc_dungeons:monster"
local OBJECTIVE = "omnigym_proc_dungeons:objective"
local GRAVITY = 19.62
local kills, collected = 0, false
local spawned = {}

local function publish()
	omnigym.set_info("kills", kills)
	omnigym.set_info("monsters_left", #data.monsters - kills)
	omnigym.set_info("collected", collected)
end

local function add_reward(value)
	set_reward_once(get_reward() + value, 0.0)
end

minetest.register_entity(MONSTER, {
	initial_properties = {
		physical = true, collide_with_objects = false, visual = "cube", static_save = false,
		collisionbox = {-0.3, 0, -0.3, 0.3, 1.8, 0.3},
	},
	on_activate = function(self, staticdata)
		self.stats = minetest.parse_json(staticdata)
		local hw, h = self.stats.size[1] / 2, self.stats.size[2]
		self.object:set_properties({collisionbox = {-hw, 0, -hw, hw, h, hw}})
		self.object:set_acceleration({x = 0, y = -GRAVITY, z = 0})
		self.hp, self.cooldown = self.stats.hp, 0
		self.omnigym_color, self.omnigym_kind = self.stats.color, self.stats.kind
	end,
	on_step = function(self, dtime)
		local agent = minetest.get_connected_players()[1]
		local velocity = self.object:get_velocity()
		velocity.x, velocity.z = 0, 0
		self.cooldown = math.max(0, self.cooldown - dtime)
		if agent and agent:get_hp() > 0 then
			local pos, target = self.object:get_pos(), agent:get_pos()
			local dx, dz = target.x - pos.x, target.z - pos.z
			local flat = math.sqrt(dx * dx + dz * dz)
			local eye = vector.add(pos, {x = 0, y = 1.5, z = 0})
			local seen = vector.distance(pos, target) <= self.stats.view_range
				and minetest.line_of_sight(eye, vector.add(target, {x = 0, y = 1.5, z = 0}))
			if seen then
				self.object:set_yaw(math.atan2(-dx, dz))
				if flat > self.stats.reach / 2 then
					velocity.x = dx / flat * self.stats.speed
					velocity.z = dz / flat * self.stats.speed
				end
				if vector.distance(pos, target) <= self.stats.reach and self.cooldown == 0 then
					agent:set_hp(agent:get_hp() - self.stats.damage)
					self.cooldown = self.stats.attack_interval
				end
			end
		end
		self.object:set_velocity(velocity)
	end,
	on_punch = function(self, _, time_from_last_punch, tool_capabilities)
		local caps = tool_capabilities or {}
		local full = caps.full_punch_interval or 1
		local fleshy = (caps.damage_groups or {}).fleshy or 1
		self.hp = self.hp - fleshy * math.min(1, (time_from_last_punch or full) / full)
		if self.hp <= 0 then
			kills = kills + 1
			add_reward(data.rwd_kill_monster)
			publish()
			self.object:remove()
		end
		return true
	end,
})

minetest.register_entity(OBJECTIVE, {
	initial_properties = {
		physical = true, collide_with_objects = false, visual = "cube", static_save = false,
		collisionbox = {-0.3, 0, -0.3, 0.3, 0.6, 0.3},
	},
	on_activate = function(self)
		self.omnigym_color, self.omnigym_kind, self.hp = data.objective_color, "item", 1
	end,
	on_punch = function(self)
		if not collected then
			collected = true
			add_reward(data.rwd_objective)
			omnigym.set_success(true)
			publish()
			set_termination()
		end
		self.object:remove()
		return true
	end,
})

local function at(position)
	return vector.new(position[1], position[2], position[3])
end

local function reset_environment(player)
	for _, object in ipairs(spawned) do
		object:remove()
	end
	spawned = {}
	omnigym.load_world()
	for _, position in ipairs(data.objectives) do
		spawned[#spawned + 1] = minetest.add_entity(at(position), OBJECTIVE)
	end
	for _, monster in ipairs(data.monsters) do
		spawned[#spawned + 1] = minetest.add_entity(at(monster.pos), MONSTER,
			minetest.write_json(monster))
	end
	player:set_pos(at(data.spawn))
	player:set_look_horizontal(0)
	player:set_look_vertical(0)
	player:get_inventory():set_list("main", {data.sword})
	kills, collected = 0, false
	publish()
end

omnigym.on_reset(reset_environment)
omnigym.end_on_death()
