-- Digit-string arithmetic for non-negative integers without leading zeros ("0" is zero). Amounts are uint256
-- decimal strings and Lua numbers are doubles, so they are compared, added and subtracted as digit strings,
-- 14 digits at a time (exact in a double).
local CHUNK = 14
local BASE = 1e14
local function dnorm(a)
  a = string.gsub(a, '^0+', '')
  if a == '' then return '0' end
  return a
end
local function dcmp(a, b)
  if #a ~= #b then
    if #a < #b then return -1 end
    return 1
  end
  if a == b then return 0 end
  if a < b then return -1 end
  return 1
end
local function dchunks(a)
  local out = {}
  local i = #a
  while i > 0 do
    local from = i - CHUNK + 1
    if from < 1 then from = 1 end
    out[#out + 1] = tonumber(string.sub(a, from, i))
    i = from - 1
  end
  return out
end
local function djoin(parts)
  local out = {}
  for k = #parts, 1, -1 do
    if k == #parts then
      out[#out + 1] = string.format('%.0f', parts[k])
    else
      out[#out + 1] = string.format('%014.0f', parts[k])
    end
  end
  return dnorm(table.concat(out))
end
-- acc (chunks, least significant first) += a, kept normalised so every chunk stays exact in a double.
local function dsumInto(acc, a)
  local x = dchunks(a)
  local n = math.max(#acc, #x)
  local carry = 0
  for k = 1, n do
    local s = (acc[k] or 0) + (x[k] or 0) + carry
    if s >= BASE then carry = 1; s = s - BASE else carry = 0 end
    acc[k] = s
  end
  if carry > 0 then acc[n + 1] = carry end
end
local function dadd(a, b)
  if b == '0' then return a end
  if a == '0' then return b end
  local acc = dchunks(a)
  dsumInto(acc, b)
  return djoin(acc)
end
-- a - b, floored at zero (a reservation total never goes negative, even after a foreign write).
local function dsub(a, b)
  if b == '0' then return a end
  if dcmp(a, b) <= 0 then return '0' end
  local x, y = dchunks(a), dchunks(b)
  local parts, borrow = {}, 0
  for k = 1, #x do
    local s = x[k] - (y[k] or 0) - borrow
    if s < 0 then s = s + BASE; borrow = 1 else borrow = 0 end
    parts[k] = s
  end
  return djoin(parts)
end
-- floor(a / d) for a small integer d (at most 64: the remainder times BASE stays exact in a double).
local function ddiv(a, d)
  local x = dchunks(a)
  local parts, rem = {}, 0
  for k = #x, 1, -1 do
    local cur = rem * BASE + x[k]
    parts[k] = math.floor(cur / d)
    rem = cur - parts[k] * d
  end
  return djoin(parts)
end
local function dvalid(a)
  return type(a) == 'string' and string.find(a, '^[0-9]+$') ~= nil
end
