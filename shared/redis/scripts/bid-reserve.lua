--[[
  Checks one bid against the router's shared bookkeeping and, when asked, records its promise: the auction's
  reservation step (shared/transfers/bid-reservations.ts reserve; the policy: docs/auction.md, "Promises").

  KEYS[1]  rate           the transfer's requestLimit stamp (auctionRateKey)
  KEYS[2]  balance        the receiving (chain, asset) balance hash {amount, updatedAtMs} (routerBalanceKey)
  KEYS[3]  sendingGas     the signer's gas balance hash on the sending chain (gasBalanceKey)
  KEYS[4]  receivingGas   the signer's gas balance hash on the receiving chain (gasBalanceKey)
  KEYS[5]  promises       the receiving (chain, asset) promise records (bidReservationsKey; includes/promises.lua)
  KEYS[6]  transfers      zset of transfers by their last lapse time (bidReservationExpiryKey)
  KEYS[7]  lapseTimes     zset of lapse times with a sum (bidReservationLapseKey)
  KEYS[8]  cleanUp        the clean-up switch (cleanUpModeKey): while it exists every request is refused
  KEYS[9]  claim          optional: the request's claim (auctionClaimKey; includes/claim-value.lua)

  ARGV[1]  nowMs          the caller's clock (ms): freshness and lapses are judged at it
  ARGV[2]  maxAgeMs       balances older than this are stale
  ARGV[3]  amount         the bid's amountReceived (decimal string)
  ARGV[4]  member         the transfer (transferKey, lowercase)
  ARGV[5]  untilMs        when the bid's promise lapses unless pinned
  ARGV[6]  rateLimitMs    requestLimit; 0 disables the rate limit
  ARGV[7]  minGasSending  the least gas balance on the sending chain (decimal string)
  ARGV[8]  minGasReceiving  the least gas balance on the receiving chain
  ARGV[9]  commit         '1' records the promise and the stamp, '0' only checks (dry run)
  ARGV[10] shareDivisor   unprepared promises of other transfers block at most free liquidity / this
  ARGV[11] maxBids        open bids one transfer may hold
  ARGV[12] keep           the inventory rule: what must stay after the bid net of hard holds; '' = no rule
  ARGV[13] claimToken     optional (with ARGV[14..17] and KEYS[9]): this owner's fencing token
  ARGV[14] bidExpiry      stored with the reserved claim
  ARGV[15] gasFee         stored with the reserved claim
  ARGV[16] leaseMs        the claim's lease from this step on (state r)
  ARGV[17] keepMs         how long the claim key stays when this step creates it

  Returns name/value pairs: `code` (ok or the refusal's code) and, by code: `what` (StaleBalance: which value is
  missing or stale); `balance`, `hard`, `others` (the unprepared promises of other transfers) and `why` (the
  liquidity codes and ok: '' for the liquidity rule itself, else the rule); `balance`, `hard`, `keep`
  (InventoryBelowMinimum); `gasSending`, `gasReceiving` (NotEnoughGas); `why` (AuctionRateExceeded).

  Atomic because the checks and the record must see the same state: two auction instances must never both
  promise the last liquidity, a bid must not be recorded after the clean-up switch's SET returned, and with a
  claim the step is fenced (an owner whose token was taken over records nothing: ClaimLost), while on ok the
  claim becomes `r` with the bid's fields in the same step, so a taker after this owner's death re-sends this
  bid instead of a new one.
]]
--- @include "promises"
--- @include "claim-value"

local rateKey, balanceKey, sendingGasKey, receivingGasKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local h, tz, lz, cleanUpKey, claimKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local nowMs = tonumber(ARGV[1])
local maxAgeMs = tonumber(ARGV[2])
local amount = ARGV[3]
local member = ARGV[4]
local untilMs = roundUp(tonumber(ARGV[5]))
local rateLimitMs = tonumber(ARGV[6])
local minGasSending, minGasReceiving = ARGV[7], ARGV[8]
local commit = ARGV[9] == '1'
local shareDivisor = tonumber(ARGV[10])
local maxBids = tonumber(ARGV[11])
local keep = ARGV[12]
local claimToken, bidExpiry, gasFee, leaseMs, keepMs = ARGV[13], ARGV[14], ARGV[15], ARGV[16], ARGV[17]

if redis.call('EXISTS', cleanUpKey) == 1 then
  return {'code', 'RouterInCleanUpMode'}
end
local claimed = nil
if claimKey then
  claimed = redis.call('GET', claimKey)
  local claim = claimDecode(claimed)
  if claim and not (claim.state == 'c' and claim.token == claimToken) then
    return {'code', 'ClaimLost'}
  end
end
if rateLimitMs > 0 and redis.call('EXISTS', rateKey) == 1 then
  return {'code', 'AuctionRateExceeded', 'why', ''}
end
local function fresh(key)
  local v = redis.call('HMGET', key, 'amount', 'updatedAtMs')
  if not v[1] or not v[2] or not dvalid(v[1]) then return nil, 'missing' end
  if nowMs - tonumber(v[2]) > maxAgeMs then return nil, 'stale' end
  return dnorm(v[1]), nil
end
local balance, why = fresh(balanceKey)
if not balance then return {'code', 'StaleBalance', 'what', 'balance-' .. why} end
local gasSending, whyS = fresh(sendingGasKey)
if not gasSending then return {'code', 'StaleBalance', 'what', 'sending-gas-' .. whyS} end
local gasReceiving, whyR = fresh(receivingGasKey)
if not gasReceiving then return {'code', 'StaleBalance', 'what', 'receiving-gas-' .. whyR} end
local wm = prune(h, tz, lz, nowMs)
local total = redis.call('HGET', h, 'total') or '0'
local hard = redis.call('HGET', h, 'hard') or '0'
local ownHard, ownEntries = readRecord(h, member)
local prepared = ownHard == true and livePromise(ownEntries, wm) ~= '0'
-- This transfer's own unprepared promise never counts against its re-request (one prepare per transfer).
local own = '0'
if not prepared then own = livePromise(ownEntries, wm) end
local others = dsub(dsub(total, hard), own)
local function liquidity(code, rule)
  return {'code', code, 'balance', balance, 'hard', hard, 'others', others, 'why', rule}
end
if dcmp(balance, amount) < 0 then
  return liquidity('NotEnoughLiquidity', '')
end
if prepared then
  return liquidity('LiquidityUnavailable', 'transfer-prepared')
end
local free = dsub(balance, hard)
local share = ddiv(free, shareDivisor)
if dcmp(dadd(dmin(others, share), amount), free) > 0 then
  return liquidity('LiquidityUnavailable', '')
end
-- The inventory rule (docs/auction.md, "Inventory decline"): what the receiving chain keeps after this bid
-- (balance - hard holds - amount) must stay at or above `keep`, its floor or the least that keeps its minimum
-- share. In the same step as the liquidity rule, so concurrent bids are each checked against the hard holds of
-- the others; unprepared promises of other transfers do not count here (a requester who never prepares cannot
-- use them to make the router decline others).
if keep ~= '' and dcmp(dadd(dadd(hard, amount), keep), balance) > 0 then
  return {'code', 'InventoryBelowMinimum', 'balance', balance, 'hard', hard, 'keep', keep}
end
if dcmp(gasSending, minGasSending) < 0 or dcmp(gasReceiving, minGasReceiving) < 0 then
  return {'code', 'NotEnoughGas', 'gasSending', gasSending, 'gasReceiving', gasReceiving}
end
if commit then
  -- Only bids already answered are merged into the staircase: the newest may still be withdrawn, so it is
  -- appended after.
  local bids = {}
  if ownHard == false then bids = staircase(ownEntries, wm) end
  if #bids >= maxBids then
    return {'code', 'AuctionRateExceeded', 'why', 'transfer-bids'}
  end
  bids[#bids + 1] = {amount, untilMs}
  writeRecord(h, tz, lz, member, false, bids, wm)
  if rateLimitMs > 0 then
    redis.call('SET', rateKey, ARGV[1], 'PX', rateLimitMs)
  end
end
if claimKey then
  local value = claimEncode('r', claimToken, claimNowMs() + tonumber(leaseMs), claimBid(amount, bidExpiry, gasFee))
  if claimed then
    redis.call('SET', claimKey, value, 'KEEPTTL')
  else
    redis.call('SET', claimKey, value, 'PX', keepMs)
  end
end
return liquidity('ok', '')
