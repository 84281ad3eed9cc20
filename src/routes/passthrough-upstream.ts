/**
 * Which upstream the passthrough routes (routes/passthrough.ts) proxy to in a config
 * generation, and why they answer 404 when there is none.
 */
import type { LiveUpstream } from '../config/types.js';
import type { Generation } from '../server/reload/live.js';

/** The live passthrough upstream of a generation, or undefined (none configured, or off). */
export function passthroughUpstream(gen: Generation): LiveUpstream | undefined {
  const id = gen.config.passthrough.upstream;
  if (id === undefined) return undefined;
  const upstream = gen.config.upstreams.get(id);
  return upstream?.base_url ? upstream : undefined;
}

/**
 * Why a passthrough route is answered 404: no `passthrough.upstream` set, the upstream it
 * names off (the reason check-config lists), or one with no `base_url` to proxy to. Names
 * the config field; quotes no URL or key.
 */
export function passthroughOffMessage(gen: Generation, method: string, url: string): string {
  const route = `${method} ${url.split('?')[0]!.slice(0, 200)}`;
  const id = gen.config.passthrough.upstream;
  const head = `${route} is proxied to the passthrough upstream, and`;
  if (id === undefined) return `${head} none is configured: set passthrough.upstream in the gateway config to the id of an OpenAI-compatible upstream.`;
  const status = gen.config.upstreamStatus.find((u) => u.id === id);
  if (status?.mode === 'off') return `${head} passthrough.upstream "${id}" is off (${status.reason ?? 'not live'}).`;
  return `${head} passthrough.upstream "${id}" has no base_url to proxy to (set upstreams[].base_url of "${id}").`;
}
