/**
 * The learned-capacity law of store/capacity.ts, in Lua, for the Redis store: the same
 * state (one HASH per account: limit, changedAt, raised (the limit before the last raise, 0: none), probeMs, slowStart, servedAt, servedMs) and the same
 * steps, so every replica updates one estimate atomically. Keep the two in step: the store
 * contract test (test/redis/store-contract-learned-limits.test.ts) runs one table of cases
 * on both.
 */
import { PROBE_BASE_MS, PROBE_MAX_MS, SERVED_MS, SERVED_REFRESH_MS } from './capacity.js';
import { PROBE_HOLD_MS, PROBE_LUCK_MS } from './probe-gate.js';

/**
 * Defines `cap_probe_admit` (`only`: 't', 'p' or '', store/types.ts Candidate), `cap_probe_answered` and `cap_probe_end` (the probe gate),
 * `cap_limit(key, start, min, ceiling)` (the learned limit, within the bounds) and
 * `cap_feedback(key, start, min, ceiling, signal, inflight, now, live)` (`live`: the deep
 * calls in flight as the feedback arrives; a throttle is read against the larger of it and
 * `inflight`, a success against `inflight` alone).
 */
export const CAPACITY_LUA = `
local function cap_clamp(n, mn, ceiling)
  n = math.floor(n)
  if n > ceiling then n = ceiling end
  if n < mn then n = mn end
  return n
end
local function cap_read(key, start, mn, ceiling)
  local v = redis.call('HMGET', key, 'limit', 'changedAt', 'raised', 'probeMs', 'slowStart', 'servedAt', 'servedMs')
  if not v[1] then return { limit = cap_clamp(start, mn, ceiling), changedAt = 0, raised = 0, probeMs = ${PROBE_BASE_MS}, slowStart = 1, servedAt = 0, servedMs = 0 } end
  return { limit = cap_clamp(tonumber(v[1]), mn, ceiling), changedAt = tonumber(v[2]), raised = tonumber(v[3]), probeMs = tonumber(v[4]), slowStart = tonumber(v[5]), servedAt = tonumber(v[6] or '0'), servedMs = tonumber(v[7] or '0') }
end
-- cap_read's limit alone: one field read, no table (admissions and views call it for every target).
local function cap_limit(key, start, mn, ceiling)
  local v = redis.call('HGET', key, 'limit')
  if not v then return cap_clamp(start, mn, ceiling) end
  return cap_clamp(tonumber(v), mn, ceiling)
end
local function cap_feedback(key, start, mn, ceiling, signal, inflight, now, live)
  local s = cap_read(key, start, mn, ceiling)
  if signal == 'throttled' then
    local seen = inflight
    if live > seen then seen = live end
    if s.servedAt >= seen and now - s.servedMs <= ${SERVED_MS} then
      if seen == s.servedAt then redis.call('HSET', key, 'servedAt', seen - 1) end
      return
    end
    local cut = cap_clamp(seen - 1, mn, ceiling)
    if cut < s.limit then
      if s.raised > 0 and cut >= s.raised then s.probeMs = math.min(${PROBE_MAX_MS}, s.probeMs * 2) end
      s.limit = cut
      s.raised = 0
    end
    s.changedAt = now
    s.slowStart = 0
  else
    local served = false
    local stale = ${SERVED_MS}
    if inflight == s.servedAt then stale = ${SERVED_REFRESH_MS} end
    if inflight > s.servedAt or now - s.servedMs > stale then
      s.servedAt = inflight
      s.servedMs = now
      served = true
    end
    if s.changedAt == 0 then
      s.changedAt = now
    elseif inflight >= s.limit then
      if s.raised > 0 then s.probeMs = math.max(${PROBE_BASE_MS}, s.probeMs / 2) end
      if s.limit < ceiling and now - s.changedAt >= s.probeMs then
        s.raised = s.limit
        if s.slowStart == 1 then s.limit = math.min(ceiling, s.limit + math.max(1, math.floor(s.limit / 2))) else s.limit = s.limit + 1 end
        s.changedAt = now
      end
    elseif not served then
      return -- a success below the limit that refreshed no evidence changes nothing: no write
    end
  end
  redis.call('HSET', key, 'limit', s.limit, 'changedAt', s.changedAt, 'raised', s.raised, 'probeMs', s.probeMs, 'slowStart', s.slowStart, 'servedAt', s.servedAt, 'servedMs', s.servedMs)
  redis.call('PEXPIRE', key, 86400000)
end
-- The probe gate (store/probe-gate.ts): fields trusted, probe, probeAt, lucky of the same HASH.
local function cap_probe_admit(key, deepkey, id, n, limit, now, only)
  local g = redis.call('HMGET', key, 'trusted', 'probe', 'probeAt')
  local trusted = tonumber(g[1] or '0')
  if trusted <= 0 or trusted > limit then
    trusted = limit
    redis.call('HSET', key, 'trusted', trusted)
    redis.call('PEXPIRE', key, 86400000)
  end
  if n <= trusted then
    if only == 'p' then return 'hot' end
    return 'ok'
  end
  if only == 't' then return 'hot' end
  local probe = g[2] or ''
  if probe ~= '' and now - tonumber(g[3] or '0') < ${PROBE_HOLD_MS} and redis.call('ZSCORE', deepkey, probe) then return 'hot' end
  redis.call('HSET', key, 'probe', id, 'probeAt', now)
  redis.call('PEXPIRE', key, 86400000)
  return 'probe'
end
local function cap_probe_answered(key, id)
  local g = redis.call('HMGET', key, 'trusted', 'probe', 'lucky')
  if g[2] ~= id then return 0 end
  if g[3] == id then
    redis.call('HSET', key, 'probe', '', 'lucky', '')
    return 1
  end
  redis.call('HSET', key, 'trusted', tonumber(g[1] or '0') + 1, 'probe', '', 'lucky', '')
  return 0
end
local function cap_probe_end(key, id, endedAt, held)
  local g = redis.call('HMGET', key, 'probe', 'probeAt')
  local probe = g[1] or ''
  if probe == id then
    redis.call('HSET', key, 'probe', '', 'lucky', '')
  elseif held and probe ~= '' and endedAt <= tonumber(g[2] or '0') + ${PROBE_LUCK_MS} then
    redis.call('HSET', key, 'lucky', probe)
  end
end
`;
