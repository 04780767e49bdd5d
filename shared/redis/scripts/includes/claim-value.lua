-- The value of an auction request's claim key (auctionClaimKey; the protocol: services/auction/request-claims.ts),
-- written and read only through these functions:
--   c|<token>|<leaseUntilMs>                                          claimed: the owner is working on it;
--   r|<token>|<leaseUntilMs>|<amountReceived>|<bidExpiry>|<gasFee>    reserved: the bid's promise is recorded.
-- Anything else (a value no script writes) reads as settled: taking over a claim no script can read could answer
-- a request twice. Times come from Redis (TIME), so instances on hosts with skewed clocks agree on when a lease ran
-- out.

local function claimNowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The claim in `v` (a GET reply): nil when there is none; else its state ('c', 'r', or nil when settled), its
-- token, when its lease runs out (ms), and its bid as an opaque tail (kept as it is when the lease moves on).
local function claimDecode(v)
  if not v then return nil end
  local state, token, leaseUntil, bid = string.match(v, '^([cr])|([^|]*)|(%d+)(.*)$')
  if not state then return {} end
  return {state = state, token = token, leaseUntil = tonumber(leaseUntil), bid = bid}
end

-- A claim value; `bid` is '' for state c, else claimBid(...) or a decoded claim's bid.
local function claimEncode(state, token, leaseUntilMs, bid)
  return state .. '|' .. token .. '|' .. string.format('%.0f', leaseUntilMs) .. bid
end

-- The bid stored with a reserved claim: a taker re-sends exactly this one.
local function claimBid(amountReceived, bidExpiry, gasFee)
  return '|' .. amountReceived .. '|' .. bidExpiry .. '|' .. gasFee
end

-- A decoded claim's bid as {amountReceived, bidExpiry, gasFee}.
local function claimBidFields(bid)
  local amountReceived, bidExpiry, gasFee = string.match(bid, '^|([^|]*)|([^|]*)|([^|]*)$')
  return {amountReceived or '', bidExpiry or '', gasFee or ''}
end
