/**
 * The User-Agent of the AppHost's own requests to its voters. A voter's request log line carries it,
 * so `logs` and the dashboard leave out the AppHost's polls (every second while the dashboard runs)
 * and nothing else: a client's own admission reads and metric scrapes still show.
 */
export const APPHOST_USER_AGENT = "keyload-apphost";

/** A GET of one of the AppHost's polls: marked as the AppHost's, and given up after `timeoutMs`. */
export function poll(
  url: string,
  timeoutMs: number,
  headers: Readonly<Record<string, string>> = {},
): Promise<Response> {
  return fetch(url, {
    headers: { ...headers, "user-agent": APPHOST_USER_AGENT },
    signal: AbortSignal.timeout(timeoutMs),
  });
}
