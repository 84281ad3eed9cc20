/**
 * Waits for writes started together whose failures the caller drops (a request's settlement:
 * each store writer keeps what it could not send, a release re-sent on reconnect, a spend add
 * kept as pending). Written instead of `Promise.allSettled`: it is on every request's path,
 * and allSettled builds a result object per promise and an array nobody reads.
 * @param a, b promises already started (null: nothing to wait for). Never rejects.
 */
export async function settled(a: Promise<unknown> | null, b: Promise<unknown> | null): Promise<void> {
  // Both handlers are attached before the first await: a rejection of `b` while `a` is awaited is handled.
  const x = a?.catch(dropped);
  const y = b?.catch(dropped);
  await x;
  await y;
}

function dropped(): void {}
