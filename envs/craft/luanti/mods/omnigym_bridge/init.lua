-- omnigym's bridge between a headless Luanti server and a Python environment (docs/craft.md).
--
-- The Python side listens on 127.0.0.1 and writes omnigym.json into the world folder; this mod
-- connects to it (LuaSocket, so the mod must be listed in secure.trusted_mods), emerges and
-- force-loads the task's area, and then serves one command per server step, lock-step:
--
--   reset <seed>                                  new body, task reset, observation
--   step <frames> <dyaw> <dpitch> <first> <held>  frames of fixed dtime, observation
--   close                                         shut the server down
--
-- <first> and <held> are 0/1 strings over KEYS: the keys of the step's first frame and of the
-- later frames. An observation is a line "<json bytes> <blob bytes>", the JSON, then the blob:
-- the voxel region around the body (content ids as little-endian uint16, then light, then
-- param2, one byte each, laid out z, y, x), deflate-compressed, present when the region moved
-- or a node changed since the last one sent. A Lua error while serving a command is answered
-- with {"error": traceback}, and the server shuts down.
--
-- The callbacks a task mod registers (globalsteps, join and die callbacks) are taken over after
-- all mods have loaded and run by this mod with the fixed frame time, once per frame; so are
-- the Lua entities' on_step and movement (entities.lua). With the task's math.random seeded by
-- reset, an episode replays bit for bit under the same seed and actions.
local insecure = minetest.request_insecure_environment()
assert(insecure, "omnigym_bridge must be listed in secure.trusted_mods")
local socket = insecure.require("socket.core")

local function read_conf()
	local path = minetest.get_worldpath() .. "/omnigym.json"
	local file = assert(io.open(path, "r"), "omnigym_bridge: no " .. path)
	local text = file:read("*a")
	file:close()
	return assert(minetest.parse_json(text), "omnigym_bridge: bad " .. path)
end

omnigym = {conf = read_conf(), callbacks = {globalstep = {}, joinplayer = {}, dieplayer = {}}}
omnigym.state = {reward = 0, terminated = false, soft_reset = false, info = {}}
local conf, state, callbacks = omnigym.conf, omnigym.state, omnigym.callbacks
local modpath = minetest.get_modpath("omnigym_bridge")
dofile(modpath .. "/craftium.lua")
omnigym.physics = dofile(modpath .. "/physics.lua")
local agent = dofile(modpath .. "/agent.lua")
local entities = dofile(modpath .. "/entities.lua")
local observe = dofile(modpath .. "/observe.lua")

-- Writes the world Python exported from the embedded engine (conf.world: origin, size, palette;
-- the file: palette indices as little-endian uint16, then param2 bytes, z, y, x order, zlib),
-- so that a task runs on the very map its embedded twin builds. Lit as Luanti lights it.
function omnigym.load_world()
	local meta = assert(conf.world, "omnigym.load_world: this task exported no world")
	local file = assert(io.open(minetest.get_worldpath() .. "/" .. meta.file, "rb"))
	local raw = minetest.decompress(file:read("*a"), "deflate")
	file:close()
	local ids = {}
	for i, name in ipairs(meta.palette) do
		ids[i - 1] = minetest.get_content_id(name)
	end
	local o, n = meta.origin, meta.size
	local p1 = vector.new(o[1], o[2], o[3])
	local p2 = vector.new(o[1] + n[1] - 1, o[2] + n[2] - 1, o[3] + n[3] - 1)
	local vm = minetest.get_voxel_manip()
	local emin, emax = vm:read_from_map(p1, p2)
	local area = VoxelArea:new({MinEdge = emin, MaxEdge = emax})
	local data, param2 = vm:get_data(), vm:get_param2_data()
	local count = n[1] * n[2] * n[3]
	local byte = string.byte
	local k = 0
	for z = p1.z, p2.z do
		for y = p1.y, p2.y do
			local i = area:index(p1.x, y, z)
			for _ = 1, n[1] do
				local lo, hi = byte(raw, 2 * k + 1, 2 * k + 2)
				data[i] = ids[lo + 256 * hi]
				param2[i] = byte(raw, 2 * count + k + 1)
				k = k + 1
				i = i + 1
			end
		end
	end
	vm:set_data(data)
	vm:set_param2_data(param2)
	vm:write_to_map(true)
end

-- Craftium's key order (omnigym's actions.KEY_ACTIONS).
local KEYS = {"forward", "backward", "left", "right", "jump", "aux1", "sneak", "zoom", "dig",
	"place", "drop", "inventory", "slot_1", "slot_2", "slot_3", "slot_4", "slot_5", "slot_6",
	"slot_7", "slot_8", "slot_9"}

local link = assert(socket.tcp())
link:settimeout(conf.connect_timeout)
assert(link:connect("127.0.0.1", conf.port))
link:setoption("tcp-nodelay", true)
link:settimeout(nil)

local spawned = false
local real_players = minetest.get_connected_players
function minetest.get_connected_players()
	if spawned then
		return {agent}
	end
	return real_players()
end
local real_by_name = minetest.get_player_by_name
function minetest.get_player_by_name(name)
	if spawned and name == agent.name then
		return agent
	end
	return real_by_name(name)
end

-- Moves the task mod's callbacks out of the engine's lists into the bridge's.
local function take_over(list, into)
	for i = #list, 1, -1 do
		if minetest.callback_origins[list[i]].mod == conf.task_mod then
			table.insert(into, 1, table.remove(list, i))
		end
	end
end

minetest.register_on_mods_loaded(function()
	take_over(minetest.registered_globalsteps, callbacks.globalstep)
	take_over(minetest.registered_on_joinplayers, callbacks.joinplayer)
	take_over(minetest.registered_on_dieplayers, callbacks.dieplayer)
end)

local function run_globalsteps(dtime)
	for _, callback in ipairs(callbacks.globalstep) do
		callback(dtime)
	end
end

local function send(reply, blob)
	local json = minetest.write_json(reply)
	blob = blob or ""
	assert(link:send(#json .. " " .. #blob .. "\n" .. json .. blob))
end

local function reply()
	local st = agent.state
	local info = {}
	for key, value in pairs(state.info) do
		info[key] = value
	end
	local out = {
		reward = state.reward,
		terminated = state.terminated or not agent.alive,
		success = state.success,
		alive = agent.alive,
		pos = st.p,
		vel = {st.vx, st.vy, st.vz},
		yaw = agent.yaw,
		pitch = agent.pitch,
		hp = agent.hp,
		slot = agent.slot - 1,
		on_ground = st.on_ground,
		time_of_day = minetest.get_timeofday(),
		distance = state.distance,
		min_y = state.min_y,
		damage_taken = state.damage_taken,
		info = info,
		entities = observe.entities(agent),
	}
	local blob
	out.region, blob = observe.region(agent:get_pos())
	if state.reward_reset then
		state.reward, state.reward_reset = state.reward_reset, nil
	end
	send(out, blob)
end

local function reset(seed)
	math.randomseed(seed)
	state.terminated, state.success, state.info = false, nil, {}
	state.reward, state.reward_reset = 0, nil
	state.distance, state.damage_taken = 0, 0
	agent:spawn(vector.new(conf.spawn[1], conf.spawn[2], conf.spawn[3]))
	if spawned then
		state.soft_reset = true
	else
		spawned = true
		for _, callback in ipairs(callbacks.joinplayer) do
			callback(agent, nil)
		end
	end
	run_globalsteps(0)
	state.reward, state.reward_reset = 0, nil
	state.min_y = agent.state.p[2]
	observe.forget()
	reply()
end

local function step(frames, dyaw, dpitch, first, held)
	local keys_first, keys_held = {}, {}
	for i, key in ipairs(KEYS) do
		keys_first[key] = first:sub(i, i) == "1"
		keys_held[key] = held:sub(i, i) == "1"
	end
	for frame = 1, frames do
		agent:frame(frame == 1 and keys_first or keys_held, dyaw, dpitch, frame == 1, conf.dt)
		run_globalsteps(conf.dt)
		entities.frame(conf.dt)
		if state.terminated or not agent.alive then
			break
		end
	end
	reply()
end

-- Serves commands (at least one) until conf.engine_step seconds of frames have run (or a
-- reset), then lets the engine take its own step: the engine waits tens of milliseconds for
-- network packets between its steps, so one engine step per frame would cap a run at about 30
-- steps per second.
local function serve()
	local elapsed = 0
	repeat
		local line, err = link:receive("*l")
		if not line then
			minetest.log("action", "omnigym_bridge: link closed (" .. tostring(err) .. "), shutting down")
			link:close()
			minetest.request_shutdown("omnigym: link closed")
			return false
		end
		local words = line:split(" ")
		if words[1] == "step" or words[1] == "reset" then
			local ok, failure = xpcall(function()
				if words[1] == "reset" then
					reset(tonumber(words[2]))
				else
					step(tonumber(words[2]), tonumber(words[3]), tonumber(words[4]), words[5], words[6])
				end
			end, debug.traceback)
			if not ok then
				-- A task (or bridge) error: tell Python, log it, and end the server.
				minetest.log("error", "omnigym_bridge: " .. failure)
				send({error = failure})
				link:close()
				minetest.request_shutdown("omnigym: Lua error")
				return false
			end
			if words[1] == "reset" then
				entities.park()
				return true
			end
			elapsed = elapsed + tonumber(words[2]) * conf.dt
		elseif words[1] == "close" then
			link:close()
			minetest.request_shutdown("omnigym: closed")
			return false
		else
			error("omnigym_bridge: unknown command " .. line)
		end
	until elapsed >= conf.engine_step
	entities.park()
	return true
end

-- Startup: emerge the area, force-load its blocks, wait until they are active, say hello.
local phase = "start"
local blocks = {}
local serving = true
minetest.register_globalstep(function()
	if not serving then
		return
	end
	if phase == "start" then
		local a = conf.area
		local p1, p2 = vector.new(a[1], a[2], a[3]), vector.new(a[4], a[5], a[6])
		phase = "emerging"
		minetest.emerge_area(p1, p2, function(_, _, remaining)
			if remaining == 0 then
				for x = p1.x, p2.x + 15, 16 do
					for y = p1.y, p2.y + 15, 16 do
						for z = p1.z, p2.z + 15, 16 do
							local pos = vector.new(math.min(x, p2.x), math.min(y, p2.y),
								math.min(z, p2.z))
							minetest.forceload_block(pos, true)
							blocks[#blocks + 1] = pos
						end
					end
				end
				phase = "activating"
			end
		end)
	elseif phase == "activating" then
		for _, pos in ipairs(blocks) do
			if not minetest.compare_block_status(pos, "active") then
				return
			end
		end
		minetest.set_timeofday(conf.time_of_day)
		phase = "serving"
		send({hello = true, nodes = observe.node_table()})
	elseif phase == "serving" then
		serving = serve()
	end
end)
