/**
 * The ops of TURN (store/redis-scripts.ts) a request's first store call is made of: a client
 * key's admission (`keyadmit`), and `first`, which runs the request's gate (budgets, the key's
 * admission), reads its session pin and makes its first admission (TURN's `admit`) in one
 * atomic step (store/redis-first.ts); and `pin`, a session pin's write, which rides the slot's
 * release. Every key is under the store's one hash tag (Redis Cluster: one slot).
 */

/**
 * A client key's admission (TURN's `keyadmit` op), all or nothing: its concurrency slot and
 * its `rpm` / `tpm` fixed windows are checked first, and only when every one admits is the
 * slot taken and the points counted (so a refusal leaves nothing to give back). A window is
 * counted as rate-limiter-flexible's RateLimiterRedis counted it (`SET 0 EX NX`, `INCRBY`,
 * `PTTL`), on its key (store/redis-windows.ts), so replicas of older versions, the reads and
 * the outage catch-up (store/outage-counts.ts) see the same counter; MemoryStore counts the same way.
 * KEYS: the slot's inflight set when ARGV[3] > 0, then one counter per window. ARGV: lease ms,
 * lease id, max_concurrency (0: no slot), then per window (limit, points, window s).
 * Returns {refusal ('' none, 'concurrency', or the window's 1-based index as text), in
 * flight, then per window (points counted, ms until reset)}.
 */
export const KEY_ADMIT_BODY = `
local lease, id, slot = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local k0, inflight, refusal = 0, 0, ''
if slot > 0 then
  k0 = 1
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  inflight = redis.call('ZCARD', KEYS[1])
  if inflight >= slot then refusal = 'concurrency' end
end
local used, ttl = {}, {}
for i = 1, #KEYS - k0 do
  local key, a = KEYS[k0 + i], 3 * i + 1
  used[i] = tonumber(redis.call('GET', key) or '0')
  ttl[i] = redis.call('PTTL', key)
  if ttl[i] == -1 then
    -- A counter without expiry (written by something else) would refuse for ever: it gets the
    -- window's length, as rate-limiter-flexible's script gives it on any consume.
    redis.call('EXPIRE', key, ARGV[a + 2])
  end
  if ttl[i] < 0 then ttl[i] = tonumber(ARGV[a + 2]) * 1000 end
  if refusal == '' and used[i] + tonumber(ARGV[a + 1]) > tonumber(ARGV[a]) then refusal = tostring(i) end
end
if refusal == '' then
  if slot > 0 then
    redis.call('ZADD', KEYS[1], now + lease, id)
    redis.call('PEXPIRE', KEYS[1], lease * 2)
    inflight = inflight + 1
  end
  for i = 1, #KEYS - k0 do
    local key, a = KEYS[k0 + i], 3 * i + 1
    redis.call('SET', key, 0, 'EX', ARGV[a + 2], 'NX')
    used[i] = redis.call('INCRBY', key, ARGV[a + 1])
    -- Has an expiry: set just now (NX), or given one by the check above.
    ttl[i] = redis.call('PTTL', key)
  end
end
local out = {refusal, inflight}
for i = 1, #used do
  out[#out+1] = used[i]
  out[#out+1] = ttl[i]
end
return out`;

/** A session pin's write (TURN's `pin` op). KEYS: the pin; ARGV: target key, ttl ms. */
export const PIN_BODY = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

/**
 * A request's first call (TURN's `first` op; store/types.ts FirstCall), in order: its budget
 * lines (a spent line without an account refuses: nothing else is done; one with an account
 * marks it spent), its key's admission (KEY_ADMIT_BODY through `ops.keyadmit`: a refusal ends
 * it), its session pin, then the admission (ADMIT_BODY through `ops.admit`) of the candidates:
 * the pinned one first (mode 2, affinity: it alone is tried; none is when the pin names a
 * target that is not a candidate), those on spent accounts moved after the tried ones.
 * KEYS: the budget counters, the key admission's keys, the pin (mode > 0), then per target
 * (candidates, then the others) the five keys of ADMIT_BODY.
 * ARGV: budget lines, key admission keys, its argument count (0: none), pin mode (0 none,
 * 1 sticky, 2 affinity), targets, candidates, deadline (Redis epoch ms; 0: none: past it the
 * op takes nothing and returns 'late', so a call that timed out and runs later, e.g. once a
 * frozen Redis resumes, counts nothing its caller then counts locally); per budget line
 * (amount, this replica's part not in Redis yet, account or '': spent when the counter plus
 * that part reaches the amount, the sum its caller judges too: limits/budgets.ts); the
 * key admission's arguments; per target (target key, upstream); per target ADMIT_BODY's ten
 * arguments; lease ms, lease id.
 * Returns {budget values (text), key admission reply or 0, pin or '', admission reply or 0,
 * the targets' order in it (1-based), redo (0/1)}.
 */
export const FIRST_BODY = `
local nb, nkk, nka, mode, nt, tries = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local deadline = tonumber(ARGV[7])
if deadline > 0 and now > deadline then return 'late' end
local a, k = 7, 0
local values, spent, refused = {}, {}, false
for i = 1, nb do
  local v = redis.call('GET', KEYS[i]) or '0'
  values[i] = v
  if tonumber(v) + tonumber(ARGV[a + 3 * i - 1]) >= tonumber(ARGV[a + 3 * i - 2]) then
    local u = ARGV[a + 3 * i]
    if u == '' then refused = true else spent[u] = true end
  end
end
a, k = a + 3 * nb, nb
local out = {values, 0, '', 0, {}, 0}
if refused then return out end
if nka > 0 then
  local kk, ka = {}, {}
  for j = 1, nkk do kk[j] = KEYS[k + j] end
  for j = 1, nka do ka[j] = ARGV[a + j] end
  local r = ops.keyadmit(kk, ka)
  out[2] = r
  if r[1] ~= '' then return out end
end
a, k = a + nka, k + nkk
local pinned = false
if mode > 0 then
  k = k + 1
  pinned = redis.call('GET', KEYS[k])
  if pinned then out[3] = pinned end
end
local front, stop = nil, false
if pinned then
  for i = 1, nt do
    if ARGV[a + 2 * i - 1] == pinned then front = i end
  end
end
if front and front > tries then
  if mode == 2 then stop = true end
  front = nil
end
if front and spent[ARGV[a + 2 * front]] then front = nil end
local order, rest = {}, {}
if front then order[1] = front end
for i = 1, tries do
  if i ~= front then
    if spent[ARGV[a + 2 * i]] then rest[#rest + 1] = i else order[#order + 1] = i end
  end
end
local t = #order
if stop then t = 0 elseif front and mode == 2 then t = 1 end
for _, i in ipairs(rest) do order[#order + 1] = i end
for i = tries + 1, nt do order[#order + 1] = i end
a = a + 2 * nt
local ak, aa = {}, {ARGV[a + 10 * nt + 1], ARGV[a + 10 * nt + 2], t}
for _, i in ipairs(order) do
  for j = 1, 5 do ak[#ak + 1] = KEYS[k + 5 * (i - 1) + j] end
  for j = 1, 10 do aa[#aa + 1] = ARGV[a + 10 * (i - 1) + j] end
  -- The pinned target stays first: it is not spread.
  if i == front then aa[#aa] = '0' end
end
out[4] = ops.admit(ak, aa)
out[5] = order
if stop or (front and mode == 2) or #rest > 0 then out[6] = 1 end
return out`;
