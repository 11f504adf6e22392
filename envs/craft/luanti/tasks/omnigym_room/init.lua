-- Craftium's Room and SmallRoom (Malagón et al., ICML 2025): walk to the orange block in a
-- closed room. The setting omnigym_room picks the room; the rooms are built from the same
-- coordinates as omnigym's embedded tasks (envs/craft/tasks/room.py): walls of stonebrick, a
-- stone floor whose top face is at y = 5.5, roofless and lit by the sun. Reward -1 per step; the
-- episode ends when the horizontal squared distance from the agent to the target node's centre
-- is below the room's threshold. The settings omnigym_room_spawn ("x,y,z") and
-- omnigym_room_target ("x,z") fix the spawn point and the target instead of drawing them (the
-- backend equivalence test places both engines' episodes alike with them).
local ROOMS = {
	Room = {
		x = {-13, 4}, z = {-24, -1}, floor = 5, height = 5, threshold = 5.0,
		spawn = function()
			return {x = rand(-13.2, 4.2), y = 6, z = rand(-15.2, -10.0)}
		end,
		target_x = {-13.2, 4.2}, target_z = {-9.0, -0.8},
	},
	SmallRoom = {
		x = {0, 9}, z = {0, 9}, floor = 5, height = 5, threshold = 3.0,
		spawn = function()
			return {x = 5, y = 5.5, z = 1}
		end,
		target_x = {1.0, 9.0}, target_z = {5.0, 9.0},
	},
}
local room = assert(ROOMS[minetest.settings:get("omnigym_room") or "Room"], "unknown room")
local target, built

local function fixed(setting)
	local text = minetest.settings:get(setting)
	if not text then
		return nil
	end
	local values = {}
	for word in text:gmatch("[^,]+") do
		values[#values + 1] = assert(tonumber(word), setting .. " must be numbers: " .. text)
	end
	return values
end
local fixed_spawn, fixed_target = fixed("omnigym_room_spawn"), fixed("omnigym_room_target")

function rand(lower, greater)
	return lower + math.random() * (greater - lower)
end

local function build()
	local lo = {x = room.x[1] - 1, y = room.floor, z = room.z[1] - 1}
	local hi = {x = room.x[2] + 1, y = room.floor + room.height, z = room.z[2] + 1}
	local vm = minetest.get_voxel_manip()
	local emin, emax = vm:read_from_map(lo, hi)
	local area = VoxelArea:new({MinEdge = emin, MaxEdge = emax})
	local data = vm:get_data()
	local wall = minetest.get_content_id("default:stonebrick")
	local floor = minetest.get_content_id("default:stone")
	for x = lo.x, hi.x do
		for z = lo.z, hi.z do
			local inside = x >= room.x[1] and x <= room.x[2] and z >= room.z[1] and z <= room.z[2]
			for y = lo.y, hi.y do
				if not inside then
					data[area:index(x, y, z)] = wall
				elseif y == room.floor then
					data[area:index(x, y, z)] = floor
				end
			end
		end
	end
	vm:set_data(data)
	vm:write_to_map(true)
	built = true
end

local function reset_environment(player)
	if not built then
		build()
	end
	local spawn = room.spawn()
	if fixed_spawn then
		spawn = {x = fixed_spawn[1], y = fixed_spawn[2], z = fixed_spawn[3]}
	end
	player:set_pos(spawn)
	player:set_look_horizontal(0)
	player:set_look_vertical(0)
	if target then
		minetest.remove_node(target)
	end
	target = vector.round({x = rand(unpack(room.target_x)), y = room.floor + 1,
		z = rand(unpack(room.target_z))})
	if fixed_target then
		target = vector.round({x = fixed_target[1], y = room.floor + 1, z = fixed_target[2]})
	end
	minetest.set_node(target, {name = "default:coral_orange"})
	omnigym.set_info("target", {target.x, target.y, target.z})
end

omnigym.on_reset(reset_environment)

minetest.register_globalstep(function()
	local player = minetest.get_connected_players()[1]
	if player == nil then
		return
	end
	local pos = player:get_pos()
	local distance2 = (target.x - pos.x) ^ 2 + (target.z - pos.z) ^ 2
	omnigym.set_info("distance2", distance2)
	set_reward(-1.0)
	if distance2 < room.threshold then
		omnigym.set_success(true)
		set_termination()
	end
end)
