-- Tables as objects, metatables, closures, strings and sorting: the shape of
-- ordinary Lua programs (bench/real.sh, lua-objects).
local Point = {}
Point.__index = Point
function Point.new(x, y) return setmetatable({x = x, y = y}, Point) end
function Point:add(o) return Point.new(self.x + o.x, self.y + o.y) end
function Point:len2() return self.x * self.x + self.y * self.y end

local acc = Point.new(0, 0)
for i = 1, 600000 do acc = acc:add(Point.new(i % 7, i % 11)) end

local counts, words = {}, {}
for i = 1, 200000 do
  local w = "w" .. (i % 997)
  counts[w] = (counts[w] or 0) + 1
end
for w in pairs(counts) do words[#words + 1] = w end
table.sort(words, function(a, b) return counts[a] > counts[b] or (counts[a] == counts[b] and a < b) end)

local parts = {}
for i = 1, 50000 do parts[#parts + 1] = string.format("%d:%s", i, words[i % #words + 1]) end
local s = table.concat(parts, ",")
local n = 0
for _ in s:gmatch("w(%d+)") do n = n + 1 end

local function counter()
  local c = 0
  return function() c = c + 1; return c end
end
local f = counter()
for _ = 1, 1000000 do f() end
print(acc.x, acc.y, acc:len2(), words[1], #s, n, f())
