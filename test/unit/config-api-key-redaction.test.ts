/**
 * Config loading (parseConfig) errors never print an api_key value (nor a password or
 * credentials in a URL), whatever the error.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseTestConfig } from '../helpers/config.js';
import { configError, mini } from '../helpers/config-fixtures.js';

describe('parseConfig: an api_key value is never printed in an error', () => {
  const SECRET = 'sk-live-S3CR3T-value-0123456789';

  test('api_key of the wrong type', () => {
    const yaml = mini().replace('api_key: ${UP_KEY}', 'api_key: 7777123456789');
    const msg = configError(() => parseTestConfig(yaml, {}));
    assert.ok(msg.includes('/upstreams/0/api_key'), msg);
    assert.ok(!msg.includes('7777123456789'), msg);

    const obj = mini().replace('api_key: ${UP_KEY}', `api_key: { value: ${SECRET} }`);
    const msg2 = configError(() => parseTestConfig(obj, {}));
    assert.ok(msg2.includes('/upstreams/0/api_key'), msg2);
    assert.ok(!msg2.includes(SECRET), msg2);
  });

  test('a literal or resolved api_key next to another error', () => {
    const literal = mini().replace('api_key: ${UP_KEY}', `api_key: ${SECRET}`).replace('max_concurrency: 8', 'max_concurrency: -1');
    const msg = configError(() => parseTestConfig(literal, {}));
    assert.ok(msg.includes('/upstreams/0/max_concurrency'), msg);
    assert.ok(!msg.includes(SECRET), msg);

    const fromEnv = mini().replace('max_concurrency: 8', 'max_concurrency: -1\n    region: 5');
    const msg2 = configError(() => parseTestConfig(fromEnv, { UP_KEY: SECRET }));
    assert.ok(!msg2.includes(SECRET), msg2);
  });

  test('a store.cluster_nodes entry written as {host, port, password}, and a base_url with credentials and a wrong scheme', () => {
    const nodes = `${mini()}\nstore:\n  cluster_nodes:\n    - { host: 10.0.0.1, port: 6379, password: ${SECRET} }\n`;
    const msg = configError(() => parseTestConfig(nodes, {}));
    assert.ok(msg.includes('/store/cluster_nodes/0'), msg);
    assert.ok(!msg.includes(SECRET), msg);
    const url = mini().replace('base_url: http://127.0.0.1:9/v1', `base_url: ftp://admin:${SECRET}@example.com/v1`);
    const msg2 = configError(() => parseTestConfig(url, {}));
    assert.ok(msg2.includes('/upstreams/0/base_url'), msg2);
    assert.ok(!msg2.includes(SECRET), msg2);
    assert.ok(msg2.includes('example.com'), `the rest of the URL is shown: ${msg2}`);
  });

  test('a YAML syntax error on the api_key line', () => {
    const yaml = mini().replace('api_key: ${UP_KEY}', `api_key: ${SECRET}: oops`);
    const msg = configError(() => parseTestConfig(yaml, {}));
    assert.match(msg, /not valid YAML/);
    assert.ok(!msg.includes(SECRET), `the key is printed: ${msg}`);
  });
});
