-- Numbers: recursion, loops over arrays, floating point (bench/real.sh,
-- lua-numeric).
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local function sieve(n)
  local is = {}
  for i = 2, n do is[i] = true end
  for i = 2, math.floor(math.sqrt(n)) do
    if is[i] then for j = i * i, n, i do is[j] = false end end
  end
  local c = 0
  for i = 2, n do if is[i] then c = c + 1 end end
  return c
end

local function matmul(n)
  local a, b, c = {}, {}, {}
  for i = 1, n do
    a[i], b[i], c[i] = {}, {}, {}
    for j = 1, n do a[i][j] = (i + j) % 7; b[i][j] = (i * j) % 5; c[i][j] = 0 end
  end
  for i = 1, n do
    local ai, ci = a[i], c[i]
    for k = 1, n do
      local aik, bk = ai[k], b[k]
      for j = 1, n do ci[j] = ci[j] + aik * bk[j] end
    end
  end
  return c[n - 1][n - 1]
end

local function mandelbrot(w)
  local inside = 0
  for y = 0, w - 1 do
    local ci = 2.0 * y / w - 1.0
    for x = 0, w - 1 do
      local cr = 2.5 * x / w - 2.0
      local zr, zi, i = 0.0, 0.0, 0
      while i < 50 and zr * zr + zi * zi < 4.0 do
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        i = i + 1
      end
      if i == 50 then inside = inside + 1 end
    end
  end
  return inside
end

print(fib(29), sieve(2000000), matmul(150), mandelbrot(300))
