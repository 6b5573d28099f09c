/** Lets every queued microtask and promise reaction run. */
export async function flush(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
}
