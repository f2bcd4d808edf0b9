import assert from "node:assert/strict";
import { test } from "node:test";
import { LruCache } from "./lru-cache.ts";

test("the least recently used entry is evicted and handed to onEvict", () => {
  const evicted: string[] = [];
  const cache = new LruCache<string, number>(2, (_, key) => evicted.push(key));
  cache.set("a", 1);
  cache.set("b", 2);
  cache.get("a"); // a is now the most recent
  cache.set("c", 3);
  assert.deepEqual(evicted, ["b"]);
  assert.equal(cache.size, 2);
  assert.equal(cache.get("b"), undefined);
  cache.delete("a"); // removed without onEvict
  assert.deepEqual(evicted, ["b"]);
  assert.deepEqual(cache.clear(), [3]);
  assert.equal(cache.size, 0);
});

test("entries in use are never evicted: the cache runs over capacity and shrinks back as they are released", () => {
  const evicted: string[] = [];
  const cache = new LruCache<string, number>(1, (_, key) => evicted.push(key));
  cache.set("a", 1);
  cache.pin("a");
  cache.set("b", 2); // a is in use and b is the one just added: both stay
  cache.pin("b");
  assert.equal(cache.size, 2);
  assert.deepEqual(evicted, []);
  cache.unpin("a"); // a is the least recently used and free now
  assert.deepEqual(evicted, ["a"]);
  cache.unpin("b");
  assert.equal(cache.size, 1);
  assert.equal(cache.get("b"), 2);
});
