-- What the bridge sends back each step besides the agent's state: the node table (once), the
-- entities near the body, and the voxel region around it read with a VoxelManip.
--
-- The region is a box of conf.region radii around the body's node. It is sent again only when
-- the body has moved more than conf.recenter nodes from its centre or a node has changed: the
-- node-writing functions of the API (set_node and its kin, VoxelManip:write_to_map) are wrapped
-- to mark the region stale, and conf.refresh steps after the last send it is read anyway (for
-- changes no Lua call makes, such as flowing liquids).
local observe = {}
local conf = omnigym.conf
local stale, center, age = true, nil, 0

for _, name in ipairs({"set_node", "add_node", "swap_node", "remove_node", "bulk_set_node",
		"place_node", "dig_node", "punch_node", "spawn_tree", "place_schematic",
		"place_schematic_on_vmanip", "delete_area", "fix_light"}) do
	local original = minetest[name]
	if original then
		minetest[name] = function(...)
			stale = true
			return original(...)
		end
	end
end
-- VoxelManip's methods are reachable only from an instance: patch write_to_map on the first.
local patched = false
local function patch(vm)
	if vm and not patched then
		patched = true
		local methods = getmetatable(vm) -- Luanti hides the metatable behind its methods
		methods = methods.write_to_map and methods or methods.__index
		local write = methods.write_to_map
		methods.write_to_map = function(...)
			stale = true
			return write(...)
		end
	end
	return vm
end
local get_voxel_manip, new_voxel_manip = minetest.get_voxel_manip, VoxelManip
function minetest.get_voxel_manip(...)
	return patch(get_voxel_manip(...))
end
function VoxelManip(...)
	return patch(new_voxel_manip(...))
end

function observe.forget()
	stale = true
end

-- Every registered node: {name = {content id, drawtype, walkable}}.
function observe.node_table()
	local nodes = {}
	for name, def in pairs(minetest.registered_nodes) do
		nodes[name] = {minetest.get_content_id(name), def.drawtype or "normal", def.walkable ~= false}
	end
	return nodes
end

-- Nearby entities other than the body: {x, y, z, half x, half y, half z, name, colour, kind,
-- hp} rows, the centre and half-sizes of their collision boxes. A task chooses how an entity
-- is drawn and observed through its Lua entity's fields: omnigym_color ({r, g, b}) and
-- omnigym_kind (an entity kind of omnigym's mobs.yaml, such as "monster_a"); false where unset.
-- hp is the entity's `hp` field, else the engine's.
function observe.entities(agent)
	local rows = {}
	local pos = agent:get_pos()
	for _, object in ipairs(minetest.get_objects_inside_radius(pos, conf.entity_radius)) do
		if object ~= agent.object then
			local p = object:get_pos()
			local box = object:get_properties().collisionbox or {-0.25, 0, -0.25, 0.25, 0.5, 0.25}
			local entity = object:get_luaentity()
			rows[#rows + 1] = {
				p.x + (box[1] + box[4]) / 2, p.y + (box[2] + box[5]) / 2, p.z + (box[3] + box[6]) / 2,
				(box[4] - box[1]) / 2, (box[5] - box[2]) / 2, (box[6] - box[3]) / 2,
				entity and entity.name or "player",
				entity and entity.omnigym_color or false,
				entity and entity.omnigym_kind or false,
				entity and entity.hp or object:get_hp(),
			}
		end
	end
	return rows
end

local char, concat, unpack = string.char, table.concat, unpack
local CHUNK = 4096

local function pack(bytes, n)
	local parts = {}
	for i = 1, n, CHUNK do
		parts[#parts + 1] = char(unpack(bytes, i, math.min(i + CHUNK - 1, n)))
	end
	return concat(parts)
end

-- The region around pos when it is due: its header and compressed blob, else nil.
function observe.region(pos)
	local node = vector.round(pos)
	age = age + 1
	local moved = center == nil or math.abs(node.x - center.x) > conf.recenter
		or math.abs(node.y - center.y) > conf.recenter or math.abs(node.z - center.z) > conf.recenter
	if not (stale or moved or age > conf.refresh) then
		return nil, nil
	end
	stale, center, age = false, node, 0
	local r = conf.region
	local p1 = vector.new(node.x - r[1], node.y - r[2], node.z - r[3])
	local p2 = vector.new(node.x + r[1], node.y + r[2], node.z + r[3])
	local vm = minetest.get_voxel_manip()
	local emin, emax = vm:read_from_map(p1, p2)
	local area = VoxelArea:new({MinEdge = emin, MaxEdge = emax})
	local data, light, param2 = vm:get_data(), vm:get_light_data(), vm:get_param2_data()
	local sx, sy, sz = p2.x - p1.x + 1, p2.y - p1.y + 1, p2.z - p1.z + 1
	local count = sx * sy * sz
	local ids, rest = {}, {}
	local n = 0
	for z = p1.z, p2.z do
		for y = p1.y, p2.y do
			local i = area:index(p1.x, y, z)
			for _ = 1, sx do
				n = n + 1
				local id = data[i]
				ids[2 * n - 1], ids[2 * n] = id % 256, (id - id % 256) / 256
				rest[n], rest[count + n] = light[i] % 16, param2[i]
				i = i + 1
			end
		end
	end
	local blob = minetest.compress(pack(ids, 2 * count) .. pack(rest, 2 * count), "deflate")
	return {min = {p1.x, p1.y, p1.z}, size = {sx, sy, sz}}, blob
end

return observe
