-- An example task mod, written against Craftium's task API as a Craftium user would, and run by
-- omnigym with
--
--   omnigym.make("Craft/LuaTask-v0", task_mod="docs/craft_task_mod")
--
-- The agent stands on a stone platform facing a pillar of three dirt nodes two nodes ahead and
-- holds a steel shovel. Each dirt node dug gives a reward of 1 (once); digging all three, or
-- dying, ends the episode. A soft reset (get_soft_reset) rebuilds the pillar.
local PILLAR = {{x = 0, y = 1, z = 2}, {x = 0, y = 2, z = 2}, {x = 0, y = 3, z = 2}}
local dug = 0

local function reset_environment(player)
	for x = -4, 4 do
		for z = -4, 4 do
			minetest.set_node({x = x, y = 0, z = z}, {name = "default:stone"})
		end
	end
	for _, pos in ipairs(PILLAR) do
		minetest.set_node(pos, {name = "default:dirt"})
	end
	dug = 0
	player:set_pos({x = 0, y = 0.5, z = 0})
	player:set_look_horizontal(0)
	player:set_look_vertical(0)
	player:get_inventory():set_list("main", {"default:shovel_steel"})
	omnigym.set_info("dug", dug)
end

minetest.register_on_joinplayer(function(player)
	minetest.set_timeofday(0.5)
	reset_environment(player)
end)

minetest.register_on_dignode(function(_, oldnode)
	if oldnode.name == "default:dirt" then
		dug = dug + 1
		omnigym.set_info("dug", dug)
		set_reward_once(1.0, 0.0)
		if dug == #PILLAR then
			set_termination()
		end
	end
end)

minetest.register_on_dieplayer(function()
	set_termination()
end)

minetest.register_globalstep(function()
	local player = minetest.get_connected_players()[1]
	if player ~= nil and get_soft_reset() == 1 then
		reset_environment(player)
		reset_termination()
	end
end)
