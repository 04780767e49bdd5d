--[[
  Records the decision of a transfer (prepare the receiving side, or cancel the sending side), unless the other
  one is recorded (shared/coordination/transfer-decision.ts claimTransferDecision).

  KEYS[1]  decision    the transfer's decision (transferDecisionKey)

  ARGV[1]  decision    'prepare' or 'cancel-sender'
  ARGV[2]  replacing   the other decision when the caller proved it can no longer take effect ('' = none)
  ARGV[3]  ttlSec      how long the decision is kept

  Sets ARGV[1] when the key is empty or already holds it (a retry re-asserts its own decision), or holds
  ARGV[2]. Returns the value found before ('' when none): the claim succeeded iff that is '', ARGV[1] or ARGV[2].

  Atomic because the read and the SET must be one step: a prepare and a sender cancel claimed at once must not
  both win (both together lose the receiving amount).
]]

local current = redis.call('GET', KEYS[1])
if (not current) or current == ARGV[1] or (ARGV[2] ~= '' and current == ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
end
return current or ''
