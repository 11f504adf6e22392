-- Craftium's voxel_api (Malagón et al., ICML 2025): content ids, light and param2 of the box of
-- nodes around a position, as three flat tables laid out z, then y, then x (x fastest).
voxel_api = {}

function voxel_api:get_voxel_data(pos, radius)
	local c = vector.round(pos)
	local rx, ry, rz = tonumber(radius.x) or 0, tonumber(radius.y) or 0, tonumber(radius.z) or 0
	local p1 = {x = c.x - rx, y = c.y - ry, z = c.z - rz}
	local p2 = {x = c.x + rx, y = c.y + ry, z = c.z + rz}
	local vm = minetest.get_voxel_manip()
	local emin, emax = vm:read_from_map(p1, p2)
	local area = VoxelArea:new({MinEdge = emin, MaxEdge = emax})
	local data, light, param2 = vm:get_data(), vm:get_light_data(), vm:get_param2_data()
	local ids, lights, params = {}, {}, {}
	local n = 0
	for z = p1.z, p2.z do
		for y = p1.y, p2.y do
			local i = area:index(p1.x, y, z)
			for _ = p1.x, p2.x do
				n = n + 1
				ids[n], lights[n], params[n] = data[i], light[i] % 16, param2[i]
				i = i + 1
			end
		end
	end
	return ids, lights, params
end
