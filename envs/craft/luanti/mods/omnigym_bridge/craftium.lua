-- The globals Craftium's patched engine gives task mods (Malagón et al., ICML 2025), over the
-- bridge's step state: a task mod written for Craftium calls these unchanged.
local state = omnigym.state

function set_reward(value)
	state.reward = tonumber(value) or 0
	state.reward_reset = nil
end

-- The reward is `value` for this step, then `reset_value` from the next step on.
function set_reward_once(value, reset_value)
	state.reward = tonumber(value) or 0
	state.reward_reset = tonumber(reset_value) or 0
end

function get_reward()
	return state.reward
end

function set_termination()
	state.terminated = true
end

function reset_termination()
	state.terminated = false
	state.soft_reset = false
end

function get_termination()
	return state.terminated and 1 or 0
end

function get_soft_reset()
	return state.soft_reset and 1 or 0
end

-- Craftium's engine copies these into its voxel observation; here the bridge reads the voxels
-- itself with a VoxelManip, so the tables are accepted and dropped.
function set_voxel_data(_) end
function set_voxel_light_data(_) end
function set_voxel_param2_data(_) end

-- omnigym's additions, for tasks that want them: counters shown in info["task"], and the
-- episode's success (default: terminated while alive).
function omnigym.set_info(key, value)
	state.info[key] = value
end

function omnigym.set_success(value)
	state.success = value and true or false
end

-- The reset pattern of Craftium's task mods in one call, for tasks that want it: `reset(player)`
-- runs when the agent first joins (at midday, time frozen by the server's time_speed = 0) and
-- again on every soft reset, which it then acknowledges with reset_termination.
function omnigym.on_reset(reset)
	minetest.register_on_joinplayer(function(player)
		minetest.set_timeofday(0.5)
		reset(player)
	end)
	minetest.register_globalstep(function()
		local player = minetest.get_connected_players()[1]
		if player ~= nil and get_soft_reset() == 1 then
			reset(player)
			reset_termination()
		end
	end)
end

-- Ends the episode when the agent dies.
function omnigym.end_on_death()
	minetest.register_on_dieplayer(function()
		set_termination()
	end)
end
