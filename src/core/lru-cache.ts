/**
 * A map of at most `capacity` entries that drops the least recently used one (handing it to
 * `onEvict`, which closes what it holds). An entry in use can be pinned: it is never evicted while
 * pinned, so the map may exceed its capacity by the entries in use at once, and shrinks back as
 * they are unpinned.
 */
export class LruCache<K, V> {
  readonly capacity: number;
  readonly #entries = new Map<K, V>();
  readonly #pins = new Map<K, number>();
  readonly #onEvict: ((value: V, key: K) => void) | undefined;

  constructor(capacity: number, onEvict?: (value: V, key: K) => void) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new Error(`LruCache: capacity must be an integer >= 1, got ${capacity}`);
    this.capacity = capacity;
    this.#onEvict = onEvict;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value, now the most recently used. */
  get(key: K): V | undefined {
    if (!this.#entries.has(key)) return undefined;
    const value = this.#entries.get(key) as V;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** Adds an entry as the most recently used; older ones are evicted to make room, never it. */
  set(key: K, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    this.#evict(key);
  }

  /** Removes an entry without `onEvict` (a value that failed has nothing to close). */
  delete(key: K): void {
    this.#entries.delete(key);
    this.#pins.delete(key);
  }

  pin(key: K): void {
    this.#pins.set(key, (this.#pins.get(key) ?? 0) + 1);
  }

  unpin(key: K): void {
    const count = (this.#pins.get(key) ?? 0) - 1;
    if (count > 0) this.#pins.set(key, count);
    else this.#pins.delete(key);
    this.#evict();
  }

  /** Empties the cache without `onEvict`; returns what it held (the caller closes it). */
  clear(): V[] {
    const values = [...this.#entries.values()];
    this.#entries.clear();
    this.#pins.clear();
    return values;
  }

  #evict(keep?: K): void {
    for (const [key, value] of this.#entries) {
      if (this.#entries.size <= this.capacity) return;
      if (this.#pins.has(key) || key === keep) continue;
      this.#entries.delete(key);
      this.#onEvict?.(value, key);
    }
  }
}
