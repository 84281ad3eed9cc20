/**
 * The Lua scripts of the Redis store (store/redis.ts), so every check and its update are
 * atomic across replicas. A request's own calls (view, admissions, release, counter adds) are
 * ops of one script, TURN, that runs all such calls of an event-loop turn (store/batch.ts);
 * the rest (renewals, feedback, cooldowns, outage catch-up) are scripts of their own. Every
 * script reads the clock from Redis (`TIME`), so replicas with skewed clocks still agree on
 * expiries; every key a script touches is passed in KEYS (all under the store's one hash
 * tag, for Redis Cluster).
 */
import { CAPACITY_LUA } from './redis-capacity.js';
import { FIRST_BODY, KEY_ADMIT_BODY, PIN_BODY } from './redis-first-scripts.js';

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** A view read (TURN's `view` op). KEYS: per target (inflight, deep, cap, cool, capall); ARGV: per target (start, min, ceiling of cap, then of capall). Returns flat quints + now. */
const VIEW_BODY = `
local out = {}
for i = 1, #KEYS / 5 do
  local inflight, deep, cap, cool, capall = KEYS[5*i-4], KEYS[5*i-3], KEYS[5*i-2], KEYS[5*i-1], KEYS[5*i]
  redis.call('ZREMRANGEBYSCORE', inflight, '-inf', now)
  redis.call('ZREMRANGEBYSCORE', deep, '-inf', now)
  out[#out+1] = redis.call('ZCARD', inflight)
  out[#out+1] = redis.call('ZCARD', deep)
  out[#out+1] = cap_limit(cap, tonumber(ARGV[6*i-5]), tonumber(ARGV[6*i-4]), tonumber(ARGV[6*i-3]))
  out[#out+1] = tonumber(redis.call('GET', cool) or '0')
  out[#out+1] = cap_limit(capall, tonumber(ARGV[6*i-2]), tonumber(ARGV[6*i-1]), tonumber(ARGV[6*i]))
end
out[#out+1] = now
return out`;

/**
 * An admission (TURN's `admit` op): tries candidates in order and takes a slot on the first
 * that admits (the rules of a single slot request: cooling first unless allowed, then hot
 * before full, then the learned limit for every call, then the probe gate), then reads every
 * target's view. The candidates with a spread weight are tried least loaded first among
 * themselves, on the account's calls in flight now: (in flight + 1) / (weight × call limit),
 * `balanced`'s load (router/strategies/balanced.ts), ties in the given order; so a router that
 * ordered on old views (router/first.ts) still spreads on what every replica holds now.
 * KEYS: per target (inflight, deep, cap, capall, cool); the first `tries` are candidates, the
 * rest are read only. ARGV: lease ms, lease id, tries, then per target (max_concurrency, deep
 * (0/1), start, min, ceiling of cap, then of capall, flags (cooling allowed: '1' or '0', then
 * `only` (store/types.ts Candidate): 't' trusted, 'p' probe, nothing for either), spread
 * weight (0: tried in its place)).
 * Returns {taken index (0: none), deep in flight, probe (0/1), in flight}, then per target
 * {reason ('ok', 'hot', 'full', 'cooling', '' not tried), in flight, deep, limit, cooling
 * until, call limit}, then now.
 */
const ADMIT_BODY = `
local lease, id, tries = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local function take(k, a)
  local inflight, deepset, cap, capall = KEYS[k+1], KEYS[k+2], KEYS[k+3], KEYS[k+4]
  local limit, deep = tonumber(ARGV[a+1]), ARGV[a+2] == '1'
  local flags = ARGV[a+9]
  local only = string.sub(flags, 2, 2)
  if string.sub(flags, 1, 1) ~= '1' and tonumber(redis.call('GET', KEYS[k+5]) or '0') > now then return 'cooling' end
  if not deep and only == 'p' then return 'full' end
  redis.call('ZREMRANGEBYSCORE', inflight, '-inf', now)
  local n, c = 0, 0
  if deep then
    redis.call('ZREMRANGEBYSCORE', deepset, '-inf', now)
    n = redis.call('ZCARD', deepset)
    c = cap_limit(cap, tonumber(ARGV[a+3]), tonumber(ARGV[a+4]), tonumber(ARGV[a+5]))
    if n >= c then return 'hot' end
  end
  local all = redis.call('ZCARD', inflight)
  if all >= limit then return 'full' end
  if all >= cap_limit(capall, tonumber(ARGV[a+6]), tonumber(ARGV[a+7]), tonumber(ARGV[a+8])) then
    if deep then return 'hot' end
    return 'full'
  end
  local probe = 0
  if deep then
    local gate = cap_probe_admit(cap, deepset, id, n + 1, c, now, only)
    if gate == 'hot' then return 'hot' end
    if gate == 'probe' then probe = 1 end
    redis.call('ZADD', deepset, now + lease, id)
    redis.call('PEXPIRE', deepset, lease * 2)
    n = n + 1
  end
  redis.call('ZADD', inflight, now + lease, id)
  redis.call('PEXPIRE', inflight, lease * 2)
  return {n, probe, all + 1}
end
local order, spread, load = {}, {}, {}
for i = 1, tries do
  order[i] = i
  local k, a = 5 * i - 5, 10 * i - 7
  local w = tonumber(ARGV[a+10])
  if w > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[k+1], '-inf', now)
    local cl = math.min(tonumber(ARGV[a+1]), cap_limit(KEYS[k+4], tonumber(ARGV[a+6]), tonumber(ARGV[a+7]), tonumber(ARGV[a+8])))
    spread[#spread+1] = i
    load[i] = (redis.call('ZCARD', KEYS[k+1]) + 1) / (w * math.max(cl, 1))
  end
end
local ranked = {}
for j, i in ipairs(spread) do ranked[j] = i end
table.sort(ranked, function(x, y) if load[x] ~= load[y] then return load[x] < load[y] end return x < y end)
for j, i in ipairs(spread) do order[i] = ranked[j] end
local out = {0, 0, 0, 0}
local reasons = {}
for _, i in ipairs(order) do
  local r = take(5 * i - 5, 10 * i - 7)
  if type(r) == 'table' then
    out[1], out[2], out[3], out[4] = i, r[1], r[2], r[3]
    reasons[i] = 'ok'
    break
  end
  reasons[i] = r
end
for i = 1, #KEYS / 5 do
  local k, a = 5 * i - 5, 10 * i - 7
  redis.call('ZREMRANGEBYSCORE', KEYS[k+1], '-inf', now)
  redis.call('ZREMRANGEBYSCORE', KEYS[k+2], '-inf', now)
  out[#out+1] = reasons[i] or ''
  out[#out+1] = redis.call('ZCARD', KEYS[k+1])
  out[#out+1] = redis.call('ZCARD', KEYS[k+2])
  out[#out+1] = cap_limit(KEYS[k+3], tonumber(ARGV[a+3]), tonumber(ARGV[a+4]), tonumber(ARGV[a+5]))
  out[#out+1] = tonumber(redis.call('GET', KEYS[k+5]) or '0')
  out[#out+1] = cap_limit(KEYS[k+4], tonumber(ARGV[a+6]), tonumber(ARGV[a+7]), tonumber(ARGV[a+8]))
end
out[#out+1] = now
return out`;

/** KEYS: (inflight, deep) per lease; ARGV: lease ms, then the lease ids. Extends live leases only. */
export const RENEW = `${NOW}
local lease = tonumber(ARGV[1])
for i = 2, #ARGV do
  local inflight, deep = KEYS[2*i-3], KEYS[2*i-2]
  if redis.call('ZSCORE', inflight, ARGV[i]) then
    redis.call('ZADD', inflight, 'XX', now + lease, ARGV[i])
    redis.call('PEXPIRE', inflight, lease * 2)
  end
  if redis.call('ZSCORE', deep, ARGV[i]) then
    redis.call('ZADD', deep, 'XX', now + lease, ARGV[i])
    redis.call('PEXPIRE', deep, lease * 2)
  end
end
return 1`;

/** KEYS: cap; ARGV: the probe's lease id. Returns 1 when the probe was lucky (store/probe-gate.ts), else 0. */
export const ANSWERED = `${CAPACITY_LUA}
return cap_probe_answered(KEYS[1], ARGV[1])`;

/**
 * A slot's release (TURN's `release` op). KEYS: inflight, deep, cap, capall; ARGV: id,
 * signal ('' for none), in flight (of its kind), start, min, ceiling, deep (0/1), ms since
 * the call ended (absent: 0; store/probe-gate.ts luck). A deep lease's signal feeds cap,
 * another's capall.
 */
const RELEASE_BODY = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local liveAll = redis.call('ZCARD', KEYS[1])
local heldAll = redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[7] ~= '1' then
  if heldAll == 1 and ARGV[2] ~= '' then
    cap_feedback(KEYS[4], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[2], tonumber(ARGV[3]), now, liveAll)
  end
  return 1
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local live = redis.call('ZCARD', KEYS[2])
local held = redis.call('ZREM', KEYS[2], ARGV[1])
cap_probe_end(KEYS[3], ARGV[1], now - tonumber(ARGV[8] or '0'), held == 1)
if held == 1 and ARGV[2] ~= '' then
  cap_feedback(KEYS[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[2], tonumber(ARGV[3]), now, live)
end
return 1`;

/** KEYS: cap; ARGV: signal, deep in flight, start, min, ceiling. */
export const FEEDBACK = `${NOW}${CAPACITY_LUA}
cap_feedback(KEYS[1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[1], tonumber(ARGV[2]), now, 0)
return 1`;

/** KEYS: cool; ARGV: until ms. Keeps the later cooldown. */
export const COOL = `${NOW}
local untilMs = tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if untilMs > cur and untilMs > now then redis.call('SET', KEYS[1], untilMs, 'PX', untilMs - now) end
return 1`;

/**
 * Numbered adds to counters (store/spend.ts), each applied only if its sequence number is
 * above the last one this replica applied to that counter (so a re-sent add lands once).
 * KEYS: the replica's applied hash, then the counters. ARGV: per counter (seq, amount,
 * expiry: epoch ms for `float`, window s for `int`, kind; an `int` window is kept at 0 or more).
 * Returns per counter {applied (0/1), total as text}.
 */
export const COUNTER_ADD = `local out = {}
for i = 2, #KEYS do
  local a, key = 4 * i - 8, KEYS[i]
  local seq = tonumber(ARGV[a+1])
  local last = tonumber(redis.call('HGET', KEYS[1], key) or '0')
  if seq <= last then
    out[#out+1] = 0
    out[#out+1] = tostring(redis.call('GET', key) or '0')
  else
    local v
    if ARGV[a+4] == 'int' then
      redis.call('SET', key, 0, 'EX', ARGV[a+3], 'NX')
      v = redis.call('INCRBY', key, ARGV[a+2])
      -- A window never counts below zero (a give-back that reaches a newer window than its take).
      if v < 0 then
        redis.call('INCRBY', key, -v)
        v = 0
      end
    else
      v = redis.call('INCRBYFLOAT', key, ARGV[a+2])
      redis.call('PEXPIREAT', key, ARGV[a+3])
    end
    redis.call('HSET', KEYS[1], key, seq)
    out[#out+1] = 1
    out[#out+1] = tostring(v)
  end
end
redis.call('PEXPIRE', KEYS[1], 259200000)
return out`;

/** The operations TURN runs, by the name store/batch.ts sends. */
export type TurnOp = 'view' | 'admit' | 'keyadmit' | 'release' | 'add' | 'pin' | 'first';

/**
 * Every store call of one event-loop turn that goes through store/batch.ts, in one script
 * call: view reads (VIEW_BODY), admissions (ADMIT_BODY), key admissions (KEY_ADMIT_BODY), slot
 * releases (RELEASE_BODY), counter adds (COUNTER_ADD), pin writes and first calls (store/redis-first-scripts.ts), in the order they were made, each under `pcall`, so one that
 * fails does not stop the others and reports its own error. All of them see one `now`.
 * KEYS: every op's keys, in order. ARGV: the op count n, then per op (name, its key count,
 * its argument count), then every op's arguments, in order. Returns per op {1, its reply}
 * or {0, its error message}, then Redis's clock (epoch ms).
 */
export const TURN = `${NOW}${CAPACITY_LUA}
local ops = {}
ops.view = function(KEYS, ARGV)${VIEW_BODY}
end
ops.admit = function(KEYS, ARGV)${ADMIT_BODY}
end
ops.keyadmit = function(KEYS, ARGV)${KEY_ADMIT_BODY}
end
ops.release = function(KEYS, ARGV)${RELEASE_BODY}
end
ops.add = function(KEYS, ARGV)
${COUNTER_ADD}
end
ops.pin = function(KEYS, ARGV)${PIN_BODY}
end
ops.first = function(KEYS, ARGV)${FIRST_BODY}
end
local n = tonumber(ARGV[1])
local k, a = 0, 1 + 3 * n
local out = {}
for i = 1, n do
  local name, nk, na = ARGV[3*i-1], tonumber(ARGV[3*i]), tonumber(ARGV[3*i+1])
  local keys, args = {}, {}
  for j = 1, nk do keys[j] = KEYS[k+j] end
  for j = 1, na do args[j] = ARGV[a+j] end
  k, a = k + nk, a + na
  local fn = ops[name]
  if fn == nil then
    out[i] = {0, 'unknown store op ' .. tostring(name)}
  else
    local ok, r = pcall(fn, keys, args)
    if ok then
      out[i] = {1, r}
    elseif type(r) == 'table' then
      out[i] = {0, tostring(r.err or r.msg or 'script error')}
    else
      out[i] = {0, tostring(r)}
    end
  end
end
-- Redis's clock, after the replies: the batch keeps its offset from the replica's (store/batch.ts).
out[n + 1] = now
return out`;
