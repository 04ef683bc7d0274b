// Map sections take any name a user gives them (Logging.LogLevel categories), `constructor`, `toString`
// and `__proto__` included: a plain lookup finds Object.prototype's members under such names, and a plain
// assignment to `__proto__` calls its setter instead of adding a key. Trees of configuration are read and
// built through these two, so such a name is an ordinary key.

/** `obj[key]` when `obj` has it as its own property; undefined otherwise. */
export function own<T>(obj: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return obj !== undefined && Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** Sets `obj[key]` as an own, enumerable property, whatever the key; returns the value. */
export function setOwn<T>(obj: Record<string, unknown>, key: string, value: T): T {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  return value;
}
