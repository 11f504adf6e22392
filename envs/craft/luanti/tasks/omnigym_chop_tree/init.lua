-- Craftium's ChopTree (Malagón et al., ICML 2025) on the forest omnigym's embedded engine
-- generates for the same seed (exported by the Python side, loaded with omnigym.load_world):
-- the agent starts on the centre column facing a random yaw with a steel axe; every dug node
-- whose name contains "tree" gives a reward of 1; dying ends the episode. A soft reset loads
-- the pristine forest again.
local data = omnigym.conf.task
local dug = 0

local function reset_environment(player)
	omnigym.load_world()
	player:set_pos(vector.new(data.spawn[1], data.spawn[2], data.spawn[3]))
	player:set_look_horizontal(math.random() * 2 * math.pi)
	player:set_look_vertical(0)
	player:get_inventory():set_list("main", {data.tool})
	dug = 0
	omnigym.set_info("trunks_dug", dug)
end

omnigym.on_reset(reset_environment)
omnigym.end_on_death()

minetest.register_on_dignode(function(_, oldnode)
	if string.find(oldnode.name, "tree") then
		dug = dug + 1
		omnigym.set_info("trunks_dug", dug)
		omnigym.set_success(true)
		-- several trunks in one step add up; the reward falls back to 0 after the step
		set_reward_once(get_reward() + 1.0, 0.0)
	end
end)
