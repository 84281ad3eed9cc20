// Loaded with `node --import` into a gateway by scripts/bench-alloc.mjs. The first SIGWINCH
// starts V8's sampling heap profiler (Chrome DevTools Protocol HeapProfiler.startSampling)
// with objects collected by minor and major GCs kept in the profile, so the samples stand for
// everything allocated, not only what is still live; the second writes the profile to
// $ALLOC_OUT. SIGWINCH, because the gateway shuts down on SIGTERM / SIGINT / SIGUSR2.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
let sampling = false;
process.on('SIGWINCH', async () => {
  if (!sampling) {
    sampling = true;
    await session.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    process.stderr.write('alloc-preload: sampling\n');
    return;
  }
  const { profile } = await session.post('HeapProfiler.stopSampling');
  writeFileSync(process.env.ALLOC_OUT, JSON.stringify(profile));
  process.stderr.write('alloc-preload: profile written\n');
});
