-- The identity of the Redis server running the script (shared/coordination/lease.ts): its `run_id` (new at every
-- start) and its replication id (new when it is promoted, taken from its primary when it is demoted and re-synced).
-- While both are unchanged, the server is the one process that acknowledged every write made since, holding the
-- same data set: it has lost none of them (short of an operator's FLUSHALL or an eviction, which the router's
-- `noeviction` setting rules out). A restart, a failover to another server, or a demote-and-resync changes it.
local function serverIdentity()
  local runId = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  local replId = string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)')
  return (runId or '?') .. '/' .. (replId or '?')
end
