-- Craft/LuaTask-v0's default task, written against Craftium's task API: a 15 x 15 stone
-- platform (top face at y = 0.5) with one gold block on its far half. Reward 1 once the agent
-- stands within 1.5 nodes (horizontally) of the block, which ends the episode; 0 otherwise.
local HALF = 7
local gold

local function build()
	for x = -HALF, HALF do
		for z = -HALF, HALF do
			minetest.set_node({x = x, y = 0, z = z}, {name = "default:stone"})
		end
	end
end

local function reset_environment(player)
	if gold then
		minetest.remove_node(gold)
	end
	gold = {x = math.random(-HALF + 1, HALF - 1), y = 1, z = math.random(3, HALF - 1)}
	minetest.set_node(gold, {name = "default:goldblock"})
	player:set_pos({x = 0, y = 1, z = 0})
	player:set_look_horizontal(0)
end

minetest.register_on_joinplayer(function(player)
	minetest.set_timeofday(0.5)
	build()
	reset_environment(player)
end)

minetest.register_globalstep(function()
	local player = minetest.get_connected_players()[1]
	if player == nil then
		return
	end
	if get_soft_reset() == 1 then
		reset_environment(player)
		reset_termination()
	end
	local pos = player:get_pos()
	if (pos.x - gold.x) ^ 2 + (pos.z - gold.z) ^ 2 < 2.25 then
		set_reward_once(1.0, 0.0)
		set_termination()
	end
end)
