--[[
  Deletes a key only while it still holds the value the caller put there: a lease dropped by its holder
  (shared/coordination/lease.ts release), an admin content claim released by its request
  (services/admin/operations/content-claim.ts), an operator's reconcile request once handled
  (services/poller/reconcile-request.ts).

  KEYS[1]  target     the key

  ARGV[1]  expected   the value it must hold

  Returns 1 when deleted, 0 when it held something else or nothing.

  Atomic because the comparison and the delete must be one step: a value replaced in between (a new lease
  holder, a newer request) must never be deleted.
]]

if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
