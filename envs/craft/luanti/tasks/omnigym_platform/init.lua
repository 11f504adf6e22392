-- Craft/LuaTask-v0's default task, written against Craftium's task API (and omnigym.on_reset):
-- a 15 x 15 stone platform (top face at y = 0.5) with one gold block on its far half. Reward 1
-- once the agent's body (its position, at the feet) is within 1.5 nodes of the block's centre,
-- which ends the episode; 0 otherwise.
local HALF = 7
local REACH = 1.5
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
	else
		build()
	end
	gold = {x = math.random(-HALF + 1, HALF - 1), y = 1, z = math.random(3, HALF - 1)}
	minetest.set_node(gold, {name = "default:goldblock"})
	omnigym.set_info("target", {gold.x, gold.y, gold.z})
	player:set_pos({x = 0, y = 1, z = 0})
	player:set_look_horizontal(0)
end

omnigym.on_reset(reset_environment)

-- The episode ends once the agent's body is within reach of the block's centre.
minetest.register_globalstep(function()
	for _, object in ipairs(minetest.get_objects_inside_radius(gold, REACH)) do
		if object == omnigym.agent.object then
			set_reward_once(1.0, 0.0)
			set_termination()
		end
	end
end)
