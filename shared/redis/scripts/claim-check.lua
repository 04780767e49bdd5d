--[[
  One round trip for many watched requests (services/auction/request-claims.ts check): takes over those whose
  owner's lease ran out, or that nobody claimed (the instance NATS handed it to died first).

  KEYS[1..n]   claims            the requests' claims (auctionClaimKey; includes/claim-value.lua)

  ARGV[1]      leaseMs           the lease of a claim taken over in state c
  ARGV[2]      keepMs            how long a claim created here stays
  ARGV[3]      reservedLeaseMs   the lease of a claim taken over in state r
  ARGV[4..n+3] tokens            one fresh token per claim, in KEYS order

  Returns one entry per claim: {'done'} (settled), {'held'} (its lease still runs), {'take'} (taken over in state
  c under the fresh token, or created), or {'resend', amountReceived, bidExpiry, gasFee} (taken over in state r:
  the dead owner's bid, which the taker answers again, never a second one).

  Atomic because the lease check and the take-over must see the same value: an owner renewing in between would
  otherwise keep working on a request another instance took, and both would answer.
]]
--- @include "claim-value"

local leaseMs, keepMs, reservedLeaseMs = ARGV[1], ARGV[2], ARGV[3]
local now = claimNowMs()
local out = {}
for i, key in ipairs(KEYS) do
  local token = ARGV[i + 3]
  local claim = claimDecode(redis.call('GET', key))
  if not claim then
    redis.call('SET', key, claimEncode('c', token, now + tonumber(leaseMs), ''), 'PX', keepMs)
    out[i] = {'take'}
  elseif not claim.state then
    out[i] = {'done'}
  elseif claim.leaseUntil > now then
    out[i] = {'held'}
  else
    local ms = leaseMs
    if claim.state == 'r' then ms = reservedLeaseMs end
    redis.call('SET', key, claimEncode(claim.state, token, now + tonumber(ms), claim.bid), 'KEEPTTL')
    if claim.state == 'r' then
      local bid = claimBidFields(claim.bid)
      out[i] = {'resend', bid[1], bid[2], bid[3]}
    else
      out[i] = {'take'}
    end
  end
end
return out
